// libFuzzer target: SQuAD JSON (training/squad). The input is read as a
// dataset (examples for training and for prediction, their features, the
// evaluation's gold answers) and as a predictions file, so malformed JSON,
// wrong types, offsets outside the context and odd Unicode meet every step
// of `ferry squad`.
#include "training/data/DataError.h"
#include "training/squad/SquadData.h"
#include "training/squad/SquadEval.h"
#include "training/squad/SquadPredict.h"
#include "test/fuzz/FuzzFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = ferry::fuzz::scratchPath(".json");
  static const ferry::text::Vocab vocab = ferry::text::Vocab::fromTokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "##s", "e",
       "##e", "t", "##t", ".", ",", "?", "who"},
      "fuzz vocabulary");
  static const ferry::text::Tokenizer tokenizer(vocab, true);
  ferry::fuzz::writeInput(path, data, size);
  for (bool training : {true, false}) {
    try {
      std::vector<ferry::squad::Example> examples =
          ferry::squad::readExamples(path, training);
      ferry::squad::FeatureOptions o;
      o.seq = 16;
      o.docStride = 3;
      o.maxQueryLength = 6;
      std::vector<ferry::squad::Feature> features =
          ferry::squad::makeFeatures(examples, tokenizer, o, training);
      std::vector<std::vector<float>> logits;
      for (const ferry::squad::Feature &f : features) {
        if (f.ids.size() > 16 || f.word.size() != f.ids.size())
          __builtin_trap(); // a feature over its length
        std::vector<float> l(f.ids.size());
        for (size_t i = 0; i < l.size(); ++i)
          l[i] = static_cast<float>((i * 7 + f.ids[i]) % 11);
        logits.push_back(l);
      }
      (void)ferry::squad::predictAnswers(examples, features, logits, logits,
                                         vocab, {});
    } catch (const ferry::data::DataError &) {
    }
  }
  try {
    auto gold = ferry::squad::readGoldQuestions(path);
    auto predictions = ferry::squad::readPredictions(path);
    (void)ferry::squad::evaluate(gold, predictions);
  } catch (const ferry::data::DataError &) {
  }
  return 0;
}
