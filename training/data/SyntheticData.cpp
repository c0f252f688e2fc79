// Synthetic pretraining samples for `ferry train --data synthetic`: each pool
// entry is built from the counter-based generator keyed by (seed, purpose,
// pool index, element) alone, so a sample never depends on the batch it lands
// in or on what was generated before it.
#include "training/data/SyntheticData.h"

#include "runtime/random/Philox.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace ferry::data {

namespace {

using ferry::random::purposeHash;
using ferry::random::randomBits;

constexpr uint32_t kLengthPurpose = purposeHash("synthetic.length");
constexpr uint32_t kTokensPurpose = purposeHash("synthetic.tokens");
constexpr uint32_t kSplitPurpose = purposeHash("synthetic.split");
constexpr uint32_t kMaskPurpose = purposeHash("synthetic.mask");
constexpr uint32_t kNspPurpose = purposeHash("synthetic.nsp");

struct SpecialIds {
  int32_t cls, sep, mask, firstOrdinary;
};

SpecialIds specialIds(int64_t vocab) {
  if (vocab > 1000)
    return {101, 102, 103, 1000};
  return {1, 2, 3, 4};
}

// Uniform integer in [lo, hi] from one 32-bit draw (the modulo bias is below
// (hi - lo + 1) / 2^32, irrelevant for lengths and vocabularies).
int64_t uniformInt(uint64_t seed, uint32_t purpose, uint64_t sample,
                   uint64_t element, int64_t lo, int64_t hi) {
  uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(
                  randomBits(seed, purpose, 0, sample, element) % span);
}

void require(bool ok, const std::string &message) {
  if (!ok)
    throw std::invalid_argument("SyntheticData: " + message);
}

} // namespace

SyntheticData::SyntheticData(int64_t seq, int64_t predictions, int64_t vocab,
                             uint64_t seed, int64_t poolSize)
    : seq_(seq), predictions_(predictions), vocab_(vocab), poolSize_(poolSize),
      seed_(seed) {
  constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
  require(seq >= 8, "seq must be at least 8, got " + std::to_string(seq));
  require(seq <= kMaxInt32,
          "seq must fit in int32, got " + std::to_string(seq));
  require(predictions >= 1,
          "predictions must be at least 1, got " + std::to_string(predictions));
  require(vocab >= 8, "vocab must be at least 8, got " + std::to_string(vocab));
  require(vocab <= kMaxInt32 + 1, "vocab must be at most 2^31 (ids are "
                                  "int32), got " +
                                      std::to_string(vocab));
  require(poolSize >= 1,
          "poolSize must be at least 1, got " + std::to_string(poolSize));
}

void SyntheticData::fill(int64_t firstSample, int64_t count,
                         HostBatch &out) const {
  require(firstSample >= 0, "fill: firstSample must be non-negative, got " +
                                std::to_string(firstSample));
  require(count >= 0,
          "fill: count must be non-negative, got " + std::to_string(count));

  const SpecialIds ids = specialIds(vocab_);
  const auto rows = static_cast<size_t>(count);
  const auto seq = static_cast<size_t>(seq_);
  const auto preds = static_cast<size_t>(predictions_);

  out.resize(count, seq_, predictions_);
  out.nspWeights.assign(rows, 1.0f);

  // (draw, position) pairs for choosing masked positions; reused per row.
  std::vector<std::pair<uint32_t, int64_t>> candidates;
  candidates.reserve(seq);

  for (size_t row = 0; row < rows; ++row) {
    const uint64_t sample = static_cast<uint64_t>(
        (firstSample + static_cast<int64_t>(row)) % poolSize_);
    int32_t *tokens = out.inputIds.data() + row * seq;
    int32_t *segments = out.segmentIds.data() + row * seq;
    int32_t *mask = out.inputMask.data() + row * seq;

    // Real length in [seq/2, seq]; split (first SEP) in [1, length - 2].
    const int64_t length =
        uniformInt(seed_, kLengthPurpose, sample, 0, seq_ / 2, seq_);
    const int64_t split =
        uniformInt(seed_, kSplitPurpose, sample, 0, 1, length - 2);

    // [CLS] first... [SEP] second... [SEP] padding...
    for (int64_t pos = 0; pos < length; ++pos) {
      int32_t token;
      if (pos == 0)
        token = ids.cls;
      else if (pos == split || pos == length - 1)
        token = ids.sep;
      else
        token = static_cast<int32_t>(uniformInt(seed_, kTokensPurpose, sample,
                                                static_cast<uint64_t>(pos),
                                                ids.firstOrdinary, vocab_ - 1));
      tokens[pos] = token;
      segments[pos] = pos <= split ? 0 : 1;
      mask[pos] = 1;
    }

    // Masked positions: the k non-special positions with the smallest draws
    // (ties by position), then sorted ascending.
    candidates.clear();
    for (int64_t pos = 1; pos < length - 1; ++pos) {
      if (pos == split)
        continue;
      candidates.emplace_back(randomBits(seed_, kMaskPurpose, 0, sample,
                                         static_cast<uint64_t>(pos)),
                              pos);
    }
    const int64_t wanted =
        std::min(predictions_, std::max<int64_t>(1, (15 * length + 50) / 100));
    const size_t k = std::min(static_cast<size_t>(wanted), candidates.size());
    std::partial_sort(candidates.begin(),
                      candidates.begin() + static_cast<std::ptrdiff_t>(k),
                      candidates.end());
    std::sort(candidates.begin(),
              candidates.begin() + static_cast<std::ptrdiff_t>(k),
              [](const auto &a, const auto &b) { return a.second < b.second; });

    int32_t *positions = out.maskedPositions.data() + row * preds;
    int32_t *original = out.maskedIds.data() + row * preds;
    float *weights = out.maskedWeights.data() + row * preds;
    for (size_t slot = 0; slot < k; ++slot) {
      const int64_t pos = candidates[slot].second;
      positions[slot] = static_cast<int32_t>(pos);
      original[slot] = tokens[pos];
      weights[slot] = 1.0f;
      tokens[pos] = ids.mask;
    }

    out.nspLabels[row] = static_cast<int32_t>(
        randomBits(seed_, kNspPurpose, 0, sample, 0) >> 31);
  }
}

} // namespace ferry::data
