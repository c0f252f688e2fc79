// The data readers' error and what they check samples against: shared by
// the readers (MlperfData) and the per-value checks (SampleChecks).
#pragma once

#include <cstdint>
#include <stdexcept>

namespace ferry::data {

// Data the user must fix: names the file, the dataset or feature, and the
// expected vs found shape, type or value.
class DataError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// What the model expects of each sample.
struct SampleShape {
  int64_t seq = 0;         // model.seq_length
  int64_t predictions = 0; // model.max_predictions
  int64_t vocab = 0;       // model.vocab_size
  int64_t typeVocab = 0;   // model.type_vocab_size
  int64_t packs = 1;       // model.max_sequences_per_pack
};

} // namespace ferry::data
