// Masked-LM / next-sentence samples from text, as Google's and MLPerf's
// create_pretraining_data.py make them: a corpus file holds one sentence a
// line with blank lines between documents; sentences are packed into
// segment pairs up to the sequence length (shorter ones with
// `shortSeqProb`), half of the second segments come from another document
// (next-sentence label 1), the pair is truncated from the front or the back
// at random, and 15% of the tokens (up to `predictions`) are masked: 80%
// [MASK], 10% a random token, 10% unchanged, optionally whole words.
// `dupeFactor` passes over the documents give each different masks. All
// randomness comes from one seeded generator, so a seed gives the same
// samples on every machine.
#pragma once

#include "training/data/HostBatch.h"
#include "training/text/Tokenizer.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ferry::text {

// A document: its sentences' WordPiece ids.
using Document = std::vector<std::vector<int32_t>>;

struct CorpusCounts {
  int64_t documents = 0, sentences = 0, tokens = 0; // tokens of sentences
};

// Reads a corpus file. Empty documents are dropped. Throws data::DataError
// naming the file and line (text that is not UTF-8). `progress` gets the
// bytes read so far.
std::vector<Document>
readDocuments(const std::string &path, const Tokenizer &tokenizer,
              CorpusCounts &counts,
              const std::function<void(int64_t)> &progress = {});

struct SampleOptions {
  int64_t seq = 128, predictions = 20;
  double maskedLmProb = 0.15, shortSeqProb = 0.1;
  int64_t dupeFactor = 10;
  bool wholeWordMask = false;
  uint64_t seed = 12345;
};

// One sample before padding: [CLS] a [SEP] b [SEP].
struct Sample {
  std::vector<int32_t> ids, segmentIds;
  std::vector<int32_t> maskedPositions, maskedIds; // ascending positions
  bool randomNext = false;
};

// The samples of `documents` (shuffled together, in the generator's
// order). Throws data::DataError when the options are impossible.
std::vector<Sample> makeSamples(const std::vector<Document> &documents,
                                const Vocab &vocab,
                                const SampleOptions &options);

// `samples` as MLPerf rows (padded with zeros, weight 1 per masked slot).
void toBatch(const std::vector<Sample> &samples, int64_t seq,
             int64_t predictions, data::HostBatch &batch);

} // namespace ferry::text
