// The CPU kernels of the vocabulary-parallel MLM head and embedding
// (CpuClassSplitKernels.cpp, the tensor_row_stride paths of
// CpuIndexedKernels.cpp) against the whole-row kernels: T ranks' parts,
// combined as the max and sum all-reduces combine them, give the loss, its
// gradient, the argmax metric, the lookup and the table gradient of one
// process. Random inputs; the classes pad the last rank's part. Tolerances
// are stated at each comparison.
#include "runtime/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "test/unit/CpuKernelsTestUtil.h"

namespace cpu = ferry::cpu;
using namespace ferry::test;

namespace {

// rows of `cols` padded classes, `classes` of them real, split in `parts`.
struct SplitCase {
  int64_t rows, cols, classes, parts;
  int64_t part() const { return cols / parts; }
  // Rank t's columns of every row.
  std::vector<float> partOf(const std::vector<float> &whole, int64_t t) const {
    std::vector<float> out(static_cast<size_t>(rows * part()));
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(whole.begin() + r * cols + t * part(), part(),
                  out.begin() + r * part());
    return out;
  }
  int64_t real(int64_t t) const {
    return std::clamp<int64_t>(classes - t * part(), 0, part());
  }
};

struct Whole {
  std::vector<float> logits, weights;
  std::vector<int32_t> labels;
};

Whole inputs(const SplitCase &c, uint32_t seed) {
  Whole w{randn(static_cast<size_t>(c.rows * c.cols), seed, 0.0f, 3.0f),
          randn(static_cast<size_t>(c.rows), seed + 1, 1.0f, 0.3f),
          randInts(static_cast<size_t>(c.rows), 0,
                   static_cast<int32_t>(c.classes - 1), seed + 2)};
  w.weights[1] = 0.0f; // a padding slot
  // A tie of a row's maximum on two ranks: the lowest class wins. Row 2's
  // label is the higher one (not counted), row 3's the lower (counted).
  const int64_t low = 3, high = c.part() + 2;
  for (int64_t r : {2, 3}) {
    float *row = w.logits.data() + r * c.cols;
    row[low] = row[high] = 40.0f;
  }
  w.labels[2] = static_cast<int32_t>(high);
  w.labels[3] = static_cast<int32_t>(low);
  return w;
}

// The rows' maxima: each rank's class_max, then their maximum.
std::vector<float> rowMaxima(const SplitCase &c, const Whole &w) {
  std::vector<float> m(static_cast<size_t>(c.rows),
                       -std::numeric_limits<float>::infinity());
  for (int64_t t = 0; t < c.parts; ++t) {
    std::vector<float> local(m.size());
    cpu::classMax(c.partOf(w.logits, t).data(), local.data(), c.rows, c.part(),
                  c.real(t));
    for (size_t r = 0; r < m.size(); ++r)
      m[r] = std::max(m[r], local[r]);
  }
  return m;
}

// The group's sums of class_stats.
std::vector<float> summedStats(const SplitCase &c, const Whole &w,
                               const std::vector<float> &m) {
  std::vector<float> sums(static_cast<size_t>(2 * c.rows), 0.0f);
  for (int64_t t = 0; t < c.parts; ++t) {
    std::vector<float> stats(sums.size());
    cpu::classStats(c.partOf(w.logits, t).data(), w.labels.data(), m.data(),
                    stats.data(), c.rows, c.part(), c.real(t), t * c.part());
    for (size_t i = 0; i < sums.size(); ++i)
      sums[i] += stats[i];
  }
  return sums;
}

class ClassSplit : public ::testing::TestWithParam<SplitCase> {};

TEST_P(ClassSplit, LossAndGradientEqualTheWholeRows) {
  const SplitCase c = GetParam();
  const Whole w = inputs(c, 11);
  float whole = 0.0f;
  cpu::softmaxCrossEntropy(w.logits.data(), w.labels.data(), w.weights.data(),
                           &whole, c.rows, c.cols, c.classes);
  const std::vector<float> m = rowMaxima(c, w);
  const std::vector<float> sums = summedStats(c, w, m);
  float split = 0.0f;
  cpu::crossEntropyOfStats(sums.data(), m.data(), w.weights.data(), &split,
                           c.rows);
  // The partial sums of exponentials round in float: relative 1e-6.
  EXPECT_NEAR(split, whole, 1e-6 * std::fabs(whole));

  const float dloss = 0.37f;
  std::vector<float> wholeGrad(w.logits.size());
  cpu::softmaxCrossEntropyGrad(w.logits.data(), w.labels.data(),
                               w.weights.data(), &dloss, wholeGrad.data(),
                               c.rows, c.cols, c.classes);
  std::vector<float> dstats(sums.size());
  cpu::crossEntropyOfStatsGrad(sums.data(), w.weights.data(), &dloss,
                               dstats.data(), c.rows);
  for (int64_t t = 0; t < c.parts; ++t) {
    std::vector<float> part(static_cast<size_t>(c.rows * c.part()), 1.0f);
    cpu::classStatsGrad(c.partOf(w.logits, t).data(), w.labels.data(), m.data(),
                        dstats.data(), part.data(), c.rows, c.part(), c.real(t),
                        t * c.part());
    const std::vector<float> expected = c.partOf(wholeGrad, t);
    // Each gradient is at most |dloss x weight|; absolute 1e-7 covers the
    // float rounding of the split sums (padded columns: exactly 0).
    for (size_t i = 0; i < part.size(); ++i)
      ASSERT_NEAR(part[i], expected[i], 1e-7)
          << "rank " << t << " row " << i / c.part() << " column "
          << i % c.part();
  }
}

TEST_P(ClassSplit, ArgmaxEqualsTheWholeRowsLowestClass) {
  const SplitCase c = GetParam();
  const Whole w = inputs(c, 23);
  float whole = 0.0f;
  cpu::argmaxCorrect(w.logits.data(), w.labels.data(), w.weights.data(), &whole,
                     c.rows, c.cols, c.classes);
  const std::vector<float> m = rowMaxima(c, w);
  std::vector<float> lowest(static_cast<size_t>(c.rows),
                            -std::numeric_limits<float>::infinity());
  for (int64_t t = 0; t < c.parts; ++t) {
    std::vector<float> negated(lowest.size());
    cpu::classArgmax(c.partOf(w.logits, t).data(), m.data(), negated.data(),
                     c.rows, c.part(), c.real(t), t * c.part());
    for (size_t r = 0; r < lowest.size(); ++r)
      lowest[r] = std::max(lowest[r], negated[r]);
  }
  EXPECT_EQ(lowest[2], -3.0f); // the tie: the lowest class
  float split = 0.0f;
  cpu::indexCorrect(lowest.data(), w.labels.data(), w.weights.data(), &split,
                    c.rows);
  EXPECT_EQ(split, whole);        // a count of the same weights: exact
  EXPECT_GE(whole, w.weights[3]); // row 3 counts (not a vacuous 0 = 0)
}

INSTANTIATE_TEST_SUITE_P(
    CpuKernels, ClassSplit,
    ::testing::Values(SplitCase{6, 40, 37, 2},     // last part padded
                      SplitCase{5, 1200, 1190, 2}, // parts over 512 columns
                      SplitCase{4, 64, 40, 4}));   // a part of padding only

TEST(CpuKernels, VocabularyParallelEmbeddingEqualsTheWholeTable) {
  const int64_t vocab = 24, width = 5, rows = 9, parts = 3;
  const int64_t part = vocab / parts;
  const std::vector<float> table = randn(vocab * width, 31);
  const std::vector<int32_t> ids = randInts(rows, 0, vocab - 1, 32);
  const std::vector<float> dy = randn(rows * width, 33);
  std::vector<float> whole(rows * width), wholeGrad(vocab * width);
  cpu::embedding(table.data(), ids.data(), whole.data(), rows, width);
  cpu::embeddingGrad(ids.data(), dy.data(), wholeGrad.data(), rows, width,
                     vocab);
  std::vector<float> sum(rows * width, 0.0f);
  for (int64_t t = 0; t < parts; ++t) {
    std::vector<float> out(rows * width, 7.0f), grad(part * width, 7.0f);
    cpu::embedding(table.data() + t * part * width, ids.data(), out.data(),
                   rows, width, t * part, part);
    for (size_t i = 0; i < sum.size(); ++i)
      sum[i] += out[i];
    cpu::embeddingGrad(ids.data(), dy.data(), grad.data(), rows, width, part,
                       false, t * part);
    // Rows of other ranks' ids add nowhere: this part of the whole exactly.
    EXPECT_TRUE(std::equal(grad.begin(), grad.end(),
                           wholeGrad.begin() + t * part * width))
        << "rank " << t;
  }
  // Exactly one rank holds each id; the others give zeros: the sum is exact.
  EXPECT_EQ(sum, whole);
}

} // namespace
