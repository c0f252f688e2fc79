// Seeded synthetic pretraining batches for `ferry train --data synthetic`:
// random tokens, real-length padding, ~15% masked positions (at most
// max_predictions) and NSP labels, drawn from a pool of `poolSize` samples
// that is cycled in order. Every value is a pure function of (seed, sample
// index within the pool, element), through the counter-based generator.
#pragma once

#include "training/data/HostBatch.h"

#include <cstdint>

namespace ferry::data {

class SyntheticData {
public:
  // Token ids: with vocab > 1000, [CLS] = 101, [SEP] = 102, [MASK] = 103 and
  // ordinary tokens uniform in [1000, vocab); smaller vocabularies (tests)
  // use 1, 2, 3 and [4, vocab). Requires vocab >= 8, seq >= 8,
  // predictions >= 1, poolSize >= 1.
  SyntheticData(int64_t seq, int64_t predictions, int64_t vocab, uint64_t seed,
                int64_t poolSize);

  // Fills `out` with `count` samples: sample j is pool entry
  // (firstSample + j) % poolSize.
  void fill(int64_t firstSample, int64_t count, HostBatch &out) const;

private:
  int64_t seq_, predictions_, vocab_, poolSize_;
  uint64_t seed_;
};

} // namespace ferry::data
