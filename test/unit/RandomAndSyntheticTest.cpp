// Counter-based randomness and synthetic batches: Philox matches Random123's
// known answers, the derived streams have the right moments and are keyed
// (not ordered), and synthetic samples obey the masking rules and do not
// depend on the batch they are generated in.
#include "training/data/SyntheticData.h"
#include "runtime/random/Philox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using ferry::data::HostBatch;
using ferry::data::SyntheticData;
namespace rnd = ferry::random;

namespace {

void expectBlock(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                 uint32_t k0, uint32_t k1, uint32_t e0, uint32_t e1,
                 uint32_t e2, uint32_t e3) {
  uint32_t counter[4] = {c0, c1, c2, c3};
  uint32_t key[2] = {k0, k1};
  rnd::Block block = rnd::philox(counter, key);
  EXPECT_EQ(block.w[0], e0);
  EXPECT_EQ(block.w[1], e1);
  EXPECT_EQ(block.w[2], e2);
  EXPECT_EQ(block.w[3], e3);
}

TEST(Philox, KnownAnswerZero) {
  expectBlock(0, 0, 0, 0, 0, 0, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu,
              0x9b00dbd8u);
}

TEST(Philox, KnownAnswerAllOnes) {
  expectBlock(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
              0xffffffffu, 0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu);
}

TEST(Philox, KnownAnswerPi) {
  expectBlock(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u,
              0x299f31d0u, 0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u);
}

TEST(Philox, RandomBitsFollowsTheDocumentedLayout) {
  const uint64_t seed = 0x0123456789abcdefull;
  const uint32_t purpose = rnd::purposeHash("attention.probs");
  const uint64_t element = (uint64_t{5} << 34) + 311;
  uint32_t counter[4] = {static_cast<uint32_t>(element / 4), 5, 9, 2};
  uint32_t key[2] = {0x89abcdefu, 0x01234567u ^ purpose};
  EXPECT_EQ(rnd::randomBits(seed, purpose, 2, 9, element),
            rnd::philox(counter, key).w[3]);
}

TEST(Philox, PurposeHashIsFnv1a) {
  EXPECT_EQ(rnd::purposeHash(""), 2166136261u);
  EXPECT_EQ(rnd::purposeHash("a"), 0xe40c292cu);
}

TEST(Philox, UniformMeanAndRange) {
  const int n = 100000;
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    float u = rnd::uniform(42, rnd::purposeHash("test.uniform"), 0, 3, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
}

TEST(Philox, NormalMeanAndStd) {
  const int n = 200000;
  double sum = 0.0, sumSq = 0.0;
  for (int i = 0; i < n; ++i) {
    double x = rnd::normal(7, rnd::purposeHash("encoder.0.query.weight"), 1, i);
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sumSq += x * x;
  }
  double mean = sum / n;
  double std = std::sqrt(sumSq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(std, 1.0, 0.01);
}

TEST(Philox, NormalPairsShareARadius) {
  // Elements 2m and 2m+1 are the cosine and sine of one Box-Muller pair.
  for (uint64_t m = 0; m < 100; ++m) {
    double c = rnd::normal(11, 99, 0, 2 * m);
    double s = rnd::normal(11, 99, 0, 2 * m + 1);
    uint32_t counter[4] = {static_cast<uint32_t>(m), 0, 0xffffffffu, 0};
    uint32_t key[2] = {11, 99};
    rnd::Block b = rnd::philox(counter, key);
    double u1 = ((b.w[0] >> 8) + 1.0) / 16777216.0;
    EXPECT_NEAR(c * c + s * s, -2.0 * std::log(u1), 1e-4);
  }
}

// Fraction of equal draws between two streams over 1000 elements.
double matchFraction(uint32_t p1, uint32_t l1, uint64_t s1, uint32_t p2,
                     uint32_t l2, uint64_t s2) {
  int same = 0;
  for (uint64_t e = 0; e < 1000; ++e)
    same +=
        rnd::randomBits(1, p1, l1, s1, e) == rnd::randomBits(1, p2, l2, s2, e);
  return same / 1000.0;
}

TEST(Philox, DistinctKeysGiveDistinctStreams) {
  uint32_t a = rnd::purposeHash("attention.probs");
  uint32_t b = rnd::purposeHash("hidden.dropout");
  EXPECT_NE(a, b);
  EXPECT_EQ(matchFraction(a, 0, 0, a, 0, 0), 1.0);
  EXPECT_LT(matchFraction(a, 0, 0, b, 0, 0), 0.01);
  EXPECT_LT(matchFraction(a, 0, 0, a, 1, 0), 0.01);
  EXPECT_LT(matchFraction(a, 0, 0, a, 0, 1), 0.01);
  // Different seeds too.
  int same = 0;
  for (uint64_t e = 0; e < 1000; ++e)
    same += rnd::randomBits(1, a, 0, 0, e) == rnd::randomBits(2, a, 0, 0, e);
  EXPECT_LT(same, 10);
  // Normals: different purpose or layer.
  int sameNormal = 0;
  for (uint64_t e = 0; e < 1000; ++e)
    sameNormal += rnd::normal(1, a, 0, e) == rnd::normal(1, b, 0, e);
  EXPECT_LT(sameNormal, 10);
}

TEST(Philox, DrawsAreKeyedNotOrdered) {
  const uint32_t p = rnd::purposeHash("hidden.dropout");
  uint32_t alone = rnd::randomBits(5, p, 3, 17, 1000);
  std::vector<uint32_t> sweep;
  for (uint64_t e = 0; e <= 1000; ++e)
    sweep.push_back(rnd::randomBits(5, p, 3, 17, e));
  EXPECT_EQ(sweep[1000], alone);
  EXPECT_EQ(rnd::randomBits(5, p, 3, 17, 1000), alone);
  EXPECT_EQ(rnd::normal(5, p, 3, 1001), rnd::normal(5, p, 3, 1001));
  // Elements beyond 2^34 use the second counter word, not aliasing.
  EXPECT_NE(rnd::randomBits(5, p, 3, 17, 7),
            rnd::randomBits(5, p, 3, 17, (uint64_t{1} << 34) + 7));
}

TEST(Philox, DropoutKeepsAboutOneMinusP) {
  const uint32_t p = rnd::purposeHash("hidden.dropout");
  int kept = 0;
  for (uint64_t e = 0; e < 100000; ++e)
    kept += rnd::dropoutKeeps(3, p, 0, 0, e, 0.1f);
  EXPECT_NEAR(kept / 100000.0, 0.9, 0.005);
}

// ---------------------------------------------------------------------------
// SyntheticData

struct Ids {
  int32_t cls, sep, mask, first;
};

Ids idsFor(int64_t vocab) {
  return vocab > 1000 ? Ids{101, 102, 103, 1000} : Ids{1, 2, 3, 4};
}

void expectShapes(const HostBatch &b, int64_t rows, int64_t seq,
                  int64_t preds) {
  EXPECT_EQ(b.samples, rows);
  EXPECT_EQ(b.inputIds.size(), size_t(rows * seq));
  EXPECT_EQ(b.segmentIds.size(), size_t(rows * seq));
  EXPECT_EQ(b.inputMask.size(), size_t(rows * seq));
  EXPECT_EQ(b.maskedPositions.size(), size_t(rows * preds));
  EXPECT_EQ(b.maskedIds.size(), size_t(rows * preds));
  EXPECT_EQ(b.maskedWeights.size(), size_t(rows * preds));
  EXPECT_EQ(b.nspLabels.size(), size_t(rows));
}

// Checks every documented rule for one row.
void checkRow(const HostBatch &b, int64_t row, int64_t seq, int64_t preds,
              int64_t vocab) {
  SCOPED_TRACE("row " + std::to_string(row));
  const Ids ids = idsFor(vocab);
  const int32_t *tok = &b.inputIds[row * seq];
  const int32_t *seg = &b.segmentIds[row * seq];
  const int32_t *msk = &b.inputMask[row * seq];
  const int32_t *pos = &b.maskedPositions[row * preds];
  const int32_t *mid = &b.maskedIds[row * preds];
  const float *w = &b.maskedWeights[row * preds];

  // Mask: a prefix of ones of length L in [seq/2, seq].
  int64_t length = 0;
  while (length < seq && msk[length] == 1)
    ++length;
  for (int64_t i = length; i < seq; ++i) {
    EXPECT_EQ(msk[i], 0);
    EXPECT_EQ(tok[i], 0);
    EXPECT_EQ(seg[i], 0);
  }
  EXPECT_GE(length, seq / 2);
  EXPECT_LE(length, seq);

  // Masked slots: k ones then zeros.
  int64_t k = 0;
  while (k < preds && w[k] == 1.0f)
    ++k;
  for (int64_t s = k; s < preds; ++s) {
    EXPECT_EQ(w[s], 0.0f);
    EXPECT_EQ(pos[s], 0);
    EXPECT_EQ(mid[s], 0);
  }
  EXPECT_GE(k, 1);
  // round(0.15 * L), halves up, computed exactly.
  EXPECT_EQ(k, std::min<int64_t>(
                   preds, std::max<int64_t>(1, (15 * length + 50) / 100)));

  // Undo the masking to recover the original sequence.
  std::vector<int32_t> original(tok, tok + seq);
  for (int64_t s = 0; s < k; ++s) {
    if (s > 0) {
      EXPECT_LT(pos[s - 1], pos[s]);
    }
    ASSERT_GE(pos[s], 1);
    ASSERT_LT(pos[s], length);
    EXPECT_EQ(tok[pos[s]], ids.mask);
    EXPECT_GE(mid[s], ids.first);
    EXPECT_LT(mid[s], vocab);
    original[pos[s]] = mid[s];
  }

  // [CLS] a... [SEP] b... [SEP]; segment 0 through the first SEP, then 1.
  EXPECT_EQ(original[0], ids.cls);
  EXPECT_EQ(original[length - 1], ids.sep);
  int64_t firstSep = -1, seps = 0;
  for (int64_t i = 0; i < length; ++i) {
    int32_t t = original[i];
    if (t == ids.sep) {
      ++seps;
      if (firstSep < 0)
        firstSep = i;
    } else if (i > 0) {
      EXPECT_GE(t, ids.first) << "position " << i;
      EXPECT_LT(t, vocab) << "position " << i;
    }
    EXPECT_EQ(seg[i], firstSep < 0 || i == firstSep ? 0 : 1)
        << "position " << i;
  }
  EXPECT_EQ(seps, 2);
  EXPECT_GE(firstSep, 1);
  EXPECT_LE(firstSep, length - 2);
  // No MASK survives outside masked slots.
  for (int64_t i = 0; i < length; ++i)
    EXPECT_NE(original[i], ids.mask);

  EXPECT_TRUE(b.nspLabels[row] == 0 || b.nspLabels[row] == 1);
}

// Row `row` of a as a standalone comparison key.
std::vector<int64_t> rowOf(const HostBatch &b, int64_t row, int64_t seq,
                           int64_t preds) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < seq; ++i) {
    r.push_back(b.inputIds[row * seq + i]);
    r.push_back(b.segmentIds[row * seq + i]);
    r.push_back(b.inputMask[row * seq + i]);
  }
  for (int64_t s = 0; s < preds; ++s) {
    r.push_back(b.maskedPositions[row * preds + s]);
    r.push_back(b.maskedIds[row * preds + s]);
    r.push_back(static_cast<int64_t>(b.maskedWeights[row * preds + s]));
  }
  r.push_back(b.nspLabels[row]);
  return r;
}

TEST(SyntheticData, ShapesAndRulesBertVocab) {
  const int64_t seq = 128, preds = 20, vocab = 30522;
  SyntheticData data(seq, preds, vocab, 1234, 64);
  HostBatch b;
  data.fill(0, 64, b);
  expectShapes(b, 64, seq, preds);
  for (int64_t r = 0; r < 64; ++r)
    checkRow(b, r, seq, preds, vocab);
}

TEST(SyntheticData, SmallVocabUsesSmallIds) {
  const int64_t seq = 32, preds = 5, vocab = 64;
  SyntheticData data(seq, preds, vocab, 9, 50);
  HostBatch b;
  data.fill(0, 50, b);
  expectShapes(b, 50, seq, preds);
  std::set<int32_t> seen;
  for (int64_t r = 0; r < 50; ++r) {
    checkRow(b, r, seq, preds, vocab);
    for (int64_t i = 0; i < seq; ++i)
      if (b.inputMask[r * seq + i])
        seen.insert(b.inputIds[r * seq + i]);
  }
  EXPECT_EQ(seen.count(1), 1u);
  EXPECT_EQ(seen.count(2), 1u);
  EXPECT_EQ(seen.count(3), 1u);
  EXPECT_EQ(seen.count(101), 0u);
  EXPECT_GE(*seen.begin(), 1);
  EXPECT_LT(*seen.rbegin(), 64);
  EXPECT_GT(seen.size(), 50u); // most of [4, 64) appears
}

TEST(SyntheticData, MinimalShapesAndFewPredictions) {
  // seq 8: lengths 4..8, sometimes fewer non-special positions than wanted.
  for (int64_t preds : {1, 2, 8}) {
    SyntheticData data(8, preds, 8, 3, 200);
    HostBatch b;
    data.fill(0, 200, b);
    expectShapes(b, 200, 8, preds);
    for (int64_t r = 0; r < 200; ++r)
      checkRow(b, r, 8, preds, 8);
  }
}

TEST(SyntheticData, DeterministicAndPoolCycles) {
  const int64_t seq = 64, preds = 10, vocab = 30522;
  SyntheticData a(seq, preds, vocab, 77, 4), same(seq, preds, vocab, 77, 4);
  HostBatch b8, b4, again;
  a.fill(0, 8, b8);
  a.fill(4, 4, b4);
  same.fill(0, 8, again);
  for (int64_t r = 0; r < 8; ++r)
    EXPECT_EQ(rowOf(b8, r, seq, preds), rowOf(again, r, seq, preds));
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(rowOf(b8, r, seq, preds), rowOf(b8, r + 4, seq, preds));
    EXPECT_EQ(rowOf(b8, r, seq, preds), rowOf(b4, r, seq, preds));
  }
  HostBatch late;
  a.fill(4 * 1000 + 2, 1, late);
  EXPECT_EQ(rowOf(late, 0, seq, preds), rowOf(b8, 2, seq, preds));
  // Pool entries differ from each other, and another seed differs.
  EXPECT_NE(rowOf(b8, 0, seq, preds), rowOf(b8, 1, seq, preds));
  SyntheticData other(seq, preds, vocab, 78, 4);
  HostBatch o;
  other.fill(0, 1, o);
  EXPECT_NE(rowOf(o, 0, seq, preds), rowOf(b8, 0, seq, preds));
}

TEST(SyntheticData, SampleIndependentOfBatch) {
  const int64_t seq = 128, preds = 20, vocab = 30522;
  SyntheticData data(seq, preds, vocab, 5, 1000);
  HostBatch batch, alone;
  data.fill(0, 16, batch);
  data.fill(5, 1, alone);
  EXPECT_EQ(rowOf(alone, 0, seq, preds), rowOf(batch, 5, seq, preds));
  // Reusing an output buffer with a different size leaves no stale values.
  data.fill(5, 1, batch);
  expectShapes(batch, 1, seq, preds);
  EXPECT_EQ(rowOf(batch, 0, seq, preds), rowOf(alone, 0, seq, preds));
}

TEST(SyntheticData, CountedSlotsAboutFifteenPercent) {
  const int64_t seq = 128, preds = 20, vocab = 30522;
  SyntheticData data(seq, preds, vocab, 2024, 256);
  HostBatch b;
  data.fill(0, 256, b);
  double realTokens = 0.0, weights = 0.0;
  for (int32_t m : b.inputMask)
    realTokens += m;
  for (float w : b.maskedWeights)
    weights += w;
  EXPECT_DOUBLE_EQ(b.countedSlots(), weights);
  EXPECT_NEAR(b.countedSlots() / realTokens, 0.15, 0.01);
  // NSP labels are roughly balanced.
  int ones = 0;
  for (int32_t l : b.nspLabels)
    ones += l;
  EXPECT_GT(ones, 256 / 2 - 40);
  EXPECT_LT(ones, 256 / 2 + 40);
}

void expectThrowNaming(int64_t seq, int64_t preds, int64_t vocab, int64_t pool,
                       const std::string &name, const std::string &value) {
  try {
    SyntheticData data(seq, preds, vocab, 1, pool);
    ADD_FAILURE() << "no exception for " << name << " = " << value;
  } catch (const std::invalid_argument &e) {
    std::string what = e.what();
    EXPECT_NE(what.find(name), std::string::npos) << what;
    EXPECT_NE(what.find(value), std::string::npos) << what;
  }
}

TEST(SyntheticData, BadArgumentsThrowNamingTheValue) {
  expectThrowNaming(7, 20, 30522, 4, "seq", "7");
  expectThrowNaming(128, 0, 30522, 4, "predictions", "0");
  expectThrowNaming(128, 20, 7, 4, "vocab", "7");
  expectThrowNaming(128, 20, 30522, 0, "poolSize", "0");
  expectThrowNaming(128, -3, 30522, 4, "predictions", "-3");
  SyntheticData ok(8, 1, 8, 1, 1);
  HostBatch b;
  EXPECT_THROW(ok.fill(-1, 1, b), std::invalid_argument);
  EXPECT_THROW(ok.fill(0, -1, b), std::invalid_argument);
  ok.fill(0, 0, b);
  expectShapes(b, 0, 8, 1);
  EXPECT_EQ(b.countedSlots(), 0.0);
}

} // namespace
