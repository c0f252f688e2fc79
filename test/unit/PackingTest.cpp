// Sequence packing (training/text/Packing): every sample in exactly one row,
// rows within the length and the sequences-per-pack limit, and the
// packing paper's result (Krell et al. 2021: about 2x fewer rows at seq 512
// on Wikipedia) on a Wikipedia-like length histogram: 23% of the samples
// at full length (long documents), the rest short, log-normal around 110
// tokens, so that unpacked rows are 56% padding.
#include "training/text/Packing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

namespace {

using ferry::text::packSamples;

std::vector<int64_t> wikipediaLike(int64_t count, int64_t seq, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::lognormal_distribution<double> shortOnes(std::log(110.0), 0.7);
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < count; ++i) {
    if (u(rng) < 0.23) {
      lengths.push_back(seq);
      continue;
    }
    double l = shortOnes(rng);
    lengths.push_back(std::clamp<int64_t>(static_cast<int64_t>(l), 8, seq - 1));
  }
  return lengths;
}

// Rows of best-fit decreasing, sample by sample: each sample, longest
// first, into the open row with the least room that fits it.
size_t bestFitDecreasing(std::vector<int64_t> lengths, int64_t seq,
                         int64_t maxPerPack) {
  std::sort(lengths.rbegin(), lengths.rend());
  std::multimap<int64_t, int64_t> open; // room -> sequences in the row
  size_t rows = 0;
  for (int64_t l : lengths) {
    auto it = open.lower_bound(l);
    int64_t room = seq, held = 0;
    if (it == open.end()) {
      rows += 1;
    } else {
      room = it->first;
      held = it->second;
      open.erase(it);
    }
    if (room - l > 0 && held + 1 < maxPerPack)
      open.emplace(room - l, held + 1);
  }
  return rows;
}

void expectValidRows(const std::vector<std::vector<int64_t>> &rows,
                     const std::vector<int64_t> &lengths, int64_t seq,
                     int64_t maxPerPack) {
  std::vector<int> seen(lengths.size(), 0);
  for (const std::vector<int64_t> &row : rows) {
    ASSERT_FALSE(row.empty());
    ASSERT_LE(static_cast<int64_t>(row.size()), maxPerPack);
    int64_t used = 0;
    for (int64_t i : row) {
      seen[static_cast<size_t>(i)] += 1;
      used += lengths[static_cast<size_t>(i)];
    }
    ASSERT_LE(used, seq);
  }
  for (size_t i = 0; i < seen.size(); ++i)
    ASSERT_EQ(seen[i], 1) << "sample " << i;
}

TEST(Packing, ReachesThePublishedEfficiencyOnAWikipediaLikeHistogram) {
  const int64_t seq = 512, count = 200000;
  std::vector<int64_t> lengths = wikipediaLike(count, seq, 11);
  int64_t tokens = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  auto rows = packSamples(lengths, seq, 3);
  expectValidRows(rows, lengths, seq, 3);
  double speedup = static_cast<double>(count) / rows.size();
  double unpacked =
      static_cast<double>(tokens) / (static_cast<double>(count) * seq);
  EXPECT_NEAR(unpacked, 0.44, 0.02);
  // 1.92x here (the paper: about 2x on Wikipedia at 512).
  EXPECT_GE(speedup, 1.9) << rows.size() << " rows for " << count;
  // As few rows as the classic per-sample heuristic, best-fit decreasing,
  // which sees every sample (within 1%).
  EXPECT_LE(static_cast<double>(rows.size()),
            1.01 * static_cast<double>(bestFitDecreasing(lengths, seq, 3)));
  // Deeper packs leave about 1% padding (1.0% at 8 a row).
  auto deep = packSamples(lengths, seq, 8);
  expectValidRows(deep, lengths, seq, 8);
  EXPECT_GE(static_cast<double>(tokens) /
                (static_cast<double>(deep.size()) * seq),
            0.985);
  // One sequence per pack: no packing at all.
  EXPECT_EQ(packSamples(lengths, seq, 1).size(), static_cast<size_t>(count));
  // Two per pack: between.
  size_t two = packSamples(lengths, seq, 2).size();
  EXPECT_LT(two, static_cast<size_t>(count));
  EXPECT_GT(two, rows.size());
}

TEST(Packing, SmallCasesFillBestFirst) {
  // 3 + 5 = 8 and 4 + 4 = 8 fill two rows of 8; 8 takes its own.
  std::vector<int64_t> lengths = {3, 4, 8, 5, 4};
  auto rows = packSamples(lengths, 8, 3);
  expectValidRows(rows, lengths, 8, 3);
  EXPECT_EQ(rows.size(), 3u);
  // Samples of one length are taken in index order.
  auto fours = packSamples({4, 4, 4, 4}, 8, 2);
  ASSERT_EQ(fours.size(), 2u);
  EXPECT_EQ(fours[0], (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(fours[1], (std::vector<int64_t>{2, 3}));
  EXPECT_THROW(packSamples({9}, 8, 3), std::invalid_argument);
  EXPECT_TRUE(packSamples({}, 8, 3).empty());
}

} // namespace
