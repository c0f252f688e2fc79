// SQuAD v1.1 examples and the model's features, as Google's run_squad.py
// (and Hugging Face's BERT SQuAD scripts) make them: each context split
// into whitespace-separated words with each character's word; each answer
// mapped to its first and last word; each question's WordPiece tokens
// (at most `maxQueryLength`) and the context's, in windows of at most
// `seq` tokens, [CLS] question [SEP] window [SEP], each window `docStride`
// tokens after the last; each window's tokens mapped back to their word and
// marked where the window is the one with the most context around them;
// in training, the answer's tokens (moved to the tightest span that
// tokenizes as the answer), or [CLS] when the window does not hold it.
#pragma once

#include "training/text/Tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::squad {

struct Example {
  std::string id, question;
  std::vector<std::string> words; // the context, split on whitespace
  // Training: the answer's text and its first and last word (-1: none).
  std::string answer;
  int64_t startWord = -1, endWord = -1;
};

// The examples of a SQuAD v1.1 file in file order. With `training`, each
// question must have one answer whose offset and text match its context
// (else a data::DataError naming the file, the question and the fix); an
// answer whose words do not contain its text once whitespace is normalised
// is skipped, as the reference scripts skip it, and counted in `skipped`.
std::vector<Example> readExamples(const std::string &path, bool training,
                                  int64_t *skipped = nullptr);

struct Feature {
  int64_t example = 0; // index into the examples
  std::vector<int32_t> ids, segmentIds;
  // Per token (same length as ids): the context word it came from (-1 for
  // the question and the special tokens), and whether this window has the
  // most context around it of all windows holding it.
  std::vector<int64_t> word;
  std::vector<uint8_t> maxContext;
  // Training: the answer's first and last token (0, 0: not in the window).
  int64_t start = 0, end = 0;
};

struct FeatureOptions {
  int64_t seq = 384, docStride = 128, maxQueryLength = 64;
};

std::vector<Feature> makeFeatures(const std::vector<Example> &examples,
                                  const text::Tokenizer &tokenizer,
                                  const FeatureOptions &options, bool training);

} // namespace ferry::squad
