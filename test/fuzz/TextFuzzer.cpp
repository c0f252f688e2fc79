// libFuzzer target: text input (training/text). The input is read as a
// vocabulary file (Vocab::load), and as a corpus (readDocuments with a
// fixed vocabulary, then the pretraining samples, their batch and their
// packing), so malformed UTF-8, control characters, huge words, empty
// documents and odd line endings meet every step ferry-datagen
// --from-text takes.
#include "training/data/DataError.h"
#include "training/text/Packing.h"
#include "training/text/PretrainingData.h"
#include "test/fuzz/FuzzFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = ferry::fuzz::scratchPath(".txt");
  static const ferry::text::Vocab vocab = ferry::text::Vocab::fromTokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "##s", "e",
       "##e", "t", "##t", ".", ",", "中", "é"},
      "fuzz vocabulary");
  ferry::fuzz::writeInput(path, data, size);
  try {
    ferry::text::Vocab::load(path);
  } catch (const ferry::data::DataError &) {
  }
  try {
    ferry::text::Tokenizer tokenizer(vocab, size % 2 == 0);
    ferry::text::CorpusCounts counts;
    std::vector<ferry::text::Document> docs =
        ferry::text::readDocuments(path, tokenizer, counts);
    ferry::text::SampleOptions o;
    o.seq = 5 + static_cast<int64_t>(size % 40);
    o.predictions = 1 + static_cast<int64_t>(size % 7);
    o.dupeFactor = 2;
    o.wholeWordMask = size % 3 == 0;
    std::vector<ferry::text::Sample> samples =
        ferry::text::makeSamples(docs, vocab, o);
    std::vector<int64_t> lengths;
    for (const ferry::text::Sample &s : samples) {
      if (static_cast<int64_t>(s.ids.size()) > o.seq ||
          static_cast<int64_t>(s.maskedPositions.size()) > o.predictions)
        __builtin_trap(); // a sample over its limits
      lengths.push_back(static_cast<int64_t>(s.ids.size()));
    }
    ferry::data::HostBatch batch;
    ferry::text::toBatch(samples, o.seq, o.predictions, batch);
    (void)ferry::text::packSamples(lengths, o.seq, 3);
  } catch (const ferry::data::DataError &) {
  }
  return 0;
}
