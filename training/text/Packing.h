// Sequence packing: several short samples in one row of `seq` tokens
// instead of one sample and padding, by shortest-pack-first histogram
// packing ("Efficient Sequence Packing without Cross-contamination", Krell
// et al. 2021). It works on the histogram of sample lengths, not on the
// samples: the lengths from longest to shortest each go into the shortest
// open pack (the one with the most room) if they fit there, else into new
// packs (a pack holds at most `maxPerPack` sequences). One change from the
// paper's reference code: the new packs are as few as the leftover
// sequences of that length fill together (ceil(left / per pack)), where the
// reference opens one per sequence and never puts two of one length in a
// pack (100 sequences of 10 tokens at 128, 3 a pack: 34 rows, not 100).
// Packs of the same lengths are kept as one strategy with a count, so the
// work is about seq² steps whatever the number of samples.
#pragma once

#include <cstdint>
#include <vector>

namespace ferry::text {

// A way to fill one row: the lengths of its sequences, longest first, and
// how many rows are filled this way.
struct PackStrategy {
  std::vector<int64_t> lengths;
  int64_t count = 0;
};

// The strategies for `histogram[l]` samples of length l (1 <= l <= seq;
// histogram has seq + 1 entries, entry 0 unused).
std::vector<PackStrategy> packHistogram(const std::vector<int64_t> &histogram,
                                        int64_t seq, int64_t maxPerPack);

// Rows of sample indices: `lengths[i]` is sample i's length. Samples of one
// length are taken in index order, so a shuffled input stays shuffled.
std::vector<std::vector<int64_t>>
packSamples(const std::vector<int64_t> &lengths, int64_t seq,
            int64_t maxPerPack);

} // namespace ferry::text
