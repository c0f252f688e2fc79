// The CPU kernels (runtime/cpu/CpuKernels.h) against naive double-precision
// references on random inputs of odd sizes, including sizes above the
// kernels' OpenMP threshold (32768 elements): GEMMs, fills and index
// kernels, element-wise ops, layer norm, softmax, dropout, transpose,
// reductions. Every comparison states its tolerance. Losses, optimizers and
// rounding: CpuKernelsLossOptimizerTest.cpp.
#include "runtime/cpu/CpuKernels.h"
#include "runtime/random/Philox.h"
#include "test/unit/AttentionReference.h"
#include "test/unit/CpuKernelsTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace cpu = ferry::cpu;
using namespace ferry::test;

namespace {

// ---------------------------------------------------------------- gemm

struct GemmCase {
  int64_t batch, m, n, k;
  bool transA, transB;
  float alpha, beta;
  int64_t strideA, strideB, strideC; // -1: contiguous (size of one matrix)
};

void checkGemm(GemmCase g, uint32_t seed) {
  const int64_t sizeA = g.m * g.k, sizeB = g.k * g.n, sizeC = g.m * g.n;
  if (g.strideA < 0)
    g.strideA = sizeA;
  if (g.strideB < 0)
    g.strideB = sizeB;
  if (g.strideC < 0)
    g.strideC = sizeC;
  std::vector<float> a =
      randn(static_cast<size_t>((g.batch - 1) * g.strideA + sizeA), seed);
  std::vector<float> b =
      randn(static_cast<size_t>((g.batch - 1) * g.strideB + sizeB), seed + 1);
  std::vector<float> c =
      randn(static_cast<size_t>((g.batch - 1) * g.strideC + sizeC), seed + 2);
  std::vector<double> ref(c.begin(), c.end());
  for (int64_t e = 0; e < g.batch; ++e)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0.0;
        for (int64_t l = 0; l < g.k; ++l) {
          const double av = g.transA ? a[e * g.strideA + l * g.m + i]
                                     : a[e * g.strideA + i * g.k + l];
          const double bv = g.transB ? b[e * g.strideB + j * g.k + l]
                                     : b[e * g.strideB + l * g.n + j];
          sum += av * bv;
        }
        double &out = ref[e * g.strideC + i * g.n + j];
        out = g.alpha * sum + (g.beta == 0.0f ? 0.0 : g.beta * out);
      }
  cpu::gemm(g.batch, g.m, g.n, g.k, g.transA, g.transB, g.alpha, a.data(),
            g.strideA, b.data(), g.strideB, g.beta, c.data(), g.strideC);
  // Tolerance: relative L2 error <= 1e-5 (fp32 dot products of <= 64 terms).
  EXPECT_LE(relL2(c, ref), 1e-5)
      << "batch " << g.batch << " m " << g.m << " n " << g.n << " k " << g.k
      << " transA " << g.transA << " transB " << g.transB;
}

TEST(CpuKernels, GemmAllTransposes) {
  uint32_t seed = 1;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      checkGemm({1, 3, 5, 7, ta, tb, 1.0f, 0.0f, -1, -1, -1}, seed++);
      checkGemm({1, 37, 29, 41, ta, tb, 0.5f, 0.0f, -1, -1, -1}, seed++);
    }
}

TEST(CpuKernels, GemmBetaAccumulates) {
  // beta = 1 adds to C; beta = 0.25 scales it.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      checkGemm({1, 9, 13, 11, ta, tb, 1.0f, 1.0f, -1, -1, -1}, 11);
      checkGemm({2, 9, 13, 11, ta, tb, -2.0f, 0.25f, -1, -1, -1}, 12);
    }
}

TEST(CpuKernels, GemmBatchedWithStrides) {
  // Strides larger than one matrix (gaps between batch entries).
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      checkGemm(
          {3, 5, 7, 3, ta, tb, 1.0f, 0.0f, 5 * 3 + 4, 3 * 7 + 2, 5 * 7 + 6},
          21);
  // A shared A (stride 0) is a plain loop too.
  checkGemm({4, 6, 5, 7, false, false, 1.0f, 0.0f, 0, -1, -1}, 22);
}

TEST(CpuKernels, GemmSharedB) {
  // strideB = 0 with contiguous A and C, A not transposed: one big GEMM.
  checkGemm({5, 7, 9, 11, false, false, 1.0f, 0.0f, -1, 0, -1}, 31);
  checkGemm({5, 7, 9, 11, false, true, 1.5f, 1.0f, -1, 0, -1}, 32);
  // Shared B that cannot be one GEMM: A transposed, or C strided.
  checkGemm({3, 7, 9, 11, true, false, 1.0f, 0.0f, -1, 0, -1}, 33);
  checkGemm({3, 7, 9, 11, false, false, 1.0f, 0.0f, -1, 0, 7 * 9 + 3}, 34);
}

TEST(CpuKernels, GemmEmptyK) {
  // k = 0: C = beta * C exactly.
  std::vector<float> c = randn(12, 41), expected = c;
  for (float &v : expected)
    v *= 0.5f;
  cpu::gemm(1, 3, 4, 0, false, false, 1.0f, nullptr, 0, nullptr, 0, 0.5f,
            c.data(), 12);
  EXPECT_EQ(c, expected);
}

// ------------------------------------------------ fills and index kernels

TEST(CpuKernels, FillIotaAttentionMask) {
  for (int64_t n : {int64_t{7}, int64_t{40001}}) {
    std::vector<float> f(static_cast<size_t>(n), 1.0f);
    cpu::fill(f.data(), n, -2.5f);
    EXPECT_TRUE(
        std::all_of(f.begin(), f.end(), [](float v) { return v == -2.5f; }));
    std::vector<int32_t> i(static_cast<size_t>(n), 1);
    cpu::fillInt(i.data(), n, 42);
    EXPECT_TRUE(
        std::all_of(i.begin(), i.end(), [](int32_t v) { return v == 42; }));
  }
  for (auto [outer, size, inner] :
       {std::array<int64_t, 3>{3, 5, 7}, std::array<int64_t, 3>{11, 130, 29}}) {
    std::vector<int32_t> out(static_cast<size_t>(outer * size * inner), -1);
    cpu::iota(out.data(), outer, size, inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t d = 0; d < size; ++d)
        for (int64_t i = 0; i < inner; ++i)
          ASSERT_EQ(out[(o * size + d) * inner + i], d);
  }
  std::vector<int32_t> mask = randInts(40003, 0, 1, 3);
  std::vector<float> out(mask.size());
  cpu::attentionMask(mask.data(), out.data(), 40003, -10000.0f);
  for (size_t e = 0; e < mask.size(); ++e)
    ASSERT_EQ(out[e], mask[e] != 0 ? 0.0f : -10000.0f);
}

TEST(CpuKernels, EmbeddingAndGradWithRepeatedIds) {
  for (auto [rows, width, vocab] : {std::array<int64_t, 3>{7, 5, 3},
                                    std::array<int64_t, 3>{301, 131, 17}}) {
    std::vector<float> table = randn(static_cast<size_t>(vocab * width), 5);
    // Few ids for many rows: every id repeats.
    std::vector<int32_t> ids = randInts(static_cast<size_t>(rows), 0,
                                        static_cast<int32_t>(vocab - 2), 6);
    ids[0] = ids[rows - 1] = 0;
    std::vector<float> out(static_cast<size_t>(rows * width));
    cpu::embedding(table.data(), ids.data(), out.data(), rows, width);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c)
        ASSERT_EQ(out[r * width + c], table[ids[r] * width + c]);

    std::vector<float> dy = randn(static_cast<size_t>(rows * width), 7);
    std::vector<float> dtable(static_cast<size_t>(vocab * width), 123.0f);
    cpu::embeddingGrad(ids.data(), dy.data(), dtable.data(), rows, width,
                       vocab);
    std::vector<double> ref(static_cast<size_t>(vocab * width), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < width; ++c)
        ref[ids[r] * width + c] += dy[r * width + c];
    // Tolerance: relative L2 <= 1e-6 (float sums of <= 40 terms); the
    // unused last id's row is exactly 0.
    EXPECT_LE(relL2(dtable, ref), 1e-6);
    for (int64_t c = 0; c < width; ++c)
      ASSERT_EQ(dtable[(vocab - 1) * width + c], 0.0f);
  }
}

TEST(CpuKernels, GatherPositionsAndGrad) {
  for (auto [batch, seq, predictions, width] :
       {std::array<int64_t, 4>{2, 5, 3, 7},
        std::array<int64_t, 4>{3, 37, 21, 531}}) {
    std::vector<float> x = randn(static_cast<size_t>(batch * seq * width), 8);
    std::vector<int32_t> positions =
        randInts(static_cast<size_t>(batch * predictions), 0,
                 static_cast<int32_t>(seq - 1), 9);
    positions[1] = positions[0]; // a repeated position
    std::vector<float> out(static_cast<size_t>(batch * predictions * width));
    cpu::gatherPositions(x.data(), positions.data(), out.data(), batch, seq,
                         predictions, width);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t p = 0; p < predictions; ++p)
        for (int64_t c = 0; c < width; ++c)
          ASSERT_EQ(out[(b * predictions + p) * width + c],
                    x[(b * seq + positions[b * predictions + p]) * width + c]);

    std::vector<float> dy = randn(out.size(), 10);
    std::vector<float> dx(x.size(), 7.0f);
    cpu::gatherPositionsGrad(positions.data(), dy.data(), dx.data(), batch, seq,
                             predictions, width);
    std::vector<double> ref(x.size(), 0.0);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t p = 0; p < predictions; ++p)
        for (int64_t c = 0; c < width; ++c)
          ref[(b * seq + positions[b * predictions + p]) * width + c] +=
              dy[(b * predictions + p) * width + c];
    // Tolerance: relative L2 <= 1e-6 (sums of a few float terms).
    EXPECT_LE(relL2(dx, ref), 1e-6);
  }
}

TEST(CpuKernels, TakeAndGrad) {
  const int64_t outer = 3, size = 5, inner = 7, index = 3;
  std::vector<float> x = randn(outer * size * inner, 11);
  std::vector<float> out(outer * inner);
  cpu::take(x.data(), out.data(), outer, size, inner, index);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      ASSERT_EQ(out[o * inner + i], x[(o * size + index) * inner + i]);
  std::vector<float> dx(x.size(), 9.0f);
  cpu::takeGrad(out.data(), dx.data(), outer, size, inner, index);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < size; ++r)
      for (int64_t i = 0; i < inner; ++i)
        ASSERT_EQ(dx[(o * size + r) * inner + i],
                  r == index ? out[o * inner + i] : 0.0f);
}

// ------------------------------------------------------------ elementwise

TEST(CpuKernels, BiasAddBinaryAccumulateScale) {
  // Each is one correctly rounded float operation, so the results equal the
  // double reference rounded to float exactly.
  for (int64_t n : {int64_t{3 * 5 * 7}, int64_t{40009}}) {
    std::vector<float> a = randn(n, 12), b = randn(n, 13), out(n);
    for (float &v : b)
      if (v == 0.0f)
        v = 1.0f;
    for (int op = 0; op < 4; ++op) {
      cpu::binary(static_cast<cpu::Binary>(op), a.data(), b.data(), out.data(),
                  n);
      for (int64_t i = 0; i < n; ++i) {
        const double x = a[i], y = b[i];
        const double r = op == 0   ? x + y
                         : op == 1 ? x - y
                         : op == 2 ? x * y
                                   : x / y;
        ASSERT_EQ(out[i], static_cast<float>(r)) << "op " << op;
      }
    }
    std::vector<float> acc = a;
    cpu::accumulate(acc.data(), b.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(acc[i], static_cast<float>(double{a[i]} + double{b[i]}));
    cpu::scale(a.data(), out.data(), n, -0.375f);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], static_cast<float>(-0.375 * a[i]));
  }
  const int64_t rows = 201, cols = 173;
  std::vector<float> x = randn(rows * cols, 14), bias = randn(cols, 15),
                     out(rows * cols);
  cpu::biasAdd(x.data(), bias.data(), out.data(), rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(out[r * cols + c],
                static_cast<float>(double{x[r * cols + c]} + bias[c]));
}

double phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double pdf(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2.0 * 3.14159265358979323846);
}

TEST(CpuKernels, GeluAndGrad) {
  // Wide inputs (std 4) to cover the tails, above the OpenMP threshold.
  const int64_t n = 100003;
  std::vector<float> x = randn(n, 16, 0.0f, 4.0f), dy = randn(n, 17);
  x[0] = 0.0f;
  x[1] = 1.0f;
  x[2] = -1.0f;
  x[3] = -12.0f;
  x[4] = 30.0f;
  std::vector<float> out(n), dx(n);
  cpu::gelu(x.data(), out.data(), n);
  cpu::geluGrad(x.data(), dy.data(), dx.data(), n);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 0.8413447460685429, 1e-7);
  EXPECT_NEAR(out[2], -0.15865525393145707, 1e-7);
  EXPECT_EQ(out[4], 30.0f);
  for (int64_t i = 0; i < n; ++i) {
    const double xi = x[i];
    const double ref = xi * phi(xi);
    // Tolerance: relative 1e-6 * (1 + x^2) per element (the condition number
    // of Phi grows like x^2), plus 1e-37 absolute near float underflow.
    ASSERT_LE(std::fabs(out[i] - ref),
              1e-6 * (1.0 + xi * xi) * std::fabs(ref) + 1e-37)
        << "x = " << xi;
    const double grad = phi(xi) + xi * pdf(xi);
    const double refDx = dy[i] * grad;
    // The derivative crosses 0 near x = -0.75: bound the error by the size
    // of its two terms rather than by the (cancelling) result.
    ASSERT_LE(std::fabs(dx[i] - refDx),
              2e-6 * (1.0 + xi * xi) * std::fabs(dy[i]) *
                      (phi(xi) + std::fabs(xi) * pdf(xi)) +
                  1e-37)
        << "x = " << xi;
  }
}

TEST(CpuKernels, TanhAndGrad) {
  const int64_t n = 3 * 5 * 7;
  std::vector<float> x = randn(n, 18, 0.0f, 2.0f), dy = randn(n, 19), y(n),
                     dx(n);
  cpu::tanhForward(x.data(), y.data(), n);
  cpu::tanhGrad(y.data(), dy.data(), dx.data(), n);
  std::vector<double> refY(n), refDx(n);
  for (int64_t i = 0; i < n; ++i) {
    refY[i] = std::tanh(double{x[i]});
    refDx[i] = dy[i] * (1.0 - double{y[i]} * y[i]);
  }
  // Tolerance: relative L2 <= 1e-6 (libm tanh, one float multiply-add).
  EXPECT_LE(relL2(y, refY), 1e-6);
  EXPECT_LE(relL2(dx, refDx), 1e-6);
}

// ------------------------------------------------------------- layer norm

struct LayerNormRef {
  std::vector<double> out, dx, dscale, dbias;
};

LayerNormRef layerNormRef(const std::vector<float> &x,
                          const std::vector<float> &scale,
                          const std::vector<float> &bias,
                          const std::vector<float> &dy, int64_t rows,
                          int64_t cols, double eps) {
  LayerNormRef ref;
  ref.out.resize(rows * cols);
  ref.dx.resize(rows * cols);
  ref.dscale.assign(cols, 0.0);
  ref.dbias.assign(cols, 0.0);
  std::vector<double> xhat(cols);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      mean += x[r * cols + c];
    mean /= cols;
    double var = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
    var /= cols;
    const double rstd = 1.0 / std::sqrt(var + eps);
    double sumG = 0.0, sumGX = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      xhat[c] = (x[r * cols + c] - mean) * rstd;
      ref.out[r * cols + c] = xhat[c] * scale[c] + bias[c];
      const double g = double{dy[r * cols + c]} * scale[c];
      sumG += g;
      sumGX += g * xhat[c];
      ref.dscale[c] += dy[r * cols + c] * xhat[c];
      ref.dbias[c] += dy[r * cols + c];
    }
    for (int64_t c = 0; c < cols; ++c) {
      const double g = double{dy[r * cols + c]} * scale[c];
      ref.dx[r * cols + c] = rstd * (g - sumG / cols - xhat[c] * sumGX / cols);
    }
  }
  return ref;
}

TEST(CpuKernels, LayerNormAndGrad) {
  struct Case {
    int64_t rows, cols;
    float eps;
  };
  // 3 x 5; 300 x 127 (above the threshold, not a multiple of 32 rows).
  for (Case k :
       {Case{3, 5, 1e-12f}, Case{300, 127, 1e-5f}, Case{67, 1024, 1e-12f}}) {
    // Mean 3, std 2: the variance must not cancel.
    std::vector<float> x = randn(k.rows * k.cols, 20, 3.0f, 2.0f);
    std::vector<float> scale = randn(k.cols, 21, 1.0f, 0.5f);
    std::vector<float> bias = randn(k.cols, 22);
    std::vector<float> dy = randn(k.rows * k.cols, 23);
    LayerNormRef ref = layerNormRef(x, scale, bias, dy, k.rows, k.cols, k.eps);
    std::vector<float> out(x.size()), dx(x.size()), dscale(k.cols, 5.0f),
        dbias(k.cols, 5.0f);
    cpu::layerNorm(x.data(), scale.data(), bias.data(), out.data(), k.rows,
                   k.cols, k.eps);
    cpu::layerNormGrad(x.data(), scale.data(), dy.data(), dx.data(),
                       dscale.data(), dbias.data(), k.rows, k.cols, k.eps);
    // Tolerance: relative L2 <= 1e-5 for every output.
    EXPECT_LE(relL2(out, ref.out), 1e-5) << k.rows << "x" << k.cols;
    EXPECT_LE(relL2(dx, ref.dx), 1e-5) << k.rows << "x" << k.cols;
    EXPECT_LE(relL2(dscale, ref.dscale), 1e-5) << k.rows << "x" << k.cols;
    EXPECT_LE(relL2(dbias, ref.dbias), 1e-5) << k.rows << "x" << k.cols;
  }
}

// ---------------------------------------------------------------- softmax

// Packed rows: each query row's probabilities are the softmax over its own
// sequence's keys alone (with the additive mask), 0 on the others; padding
// rows (sequence 0) attend to the padding keys. Rows of [batch, heads,
// queries, keys] with queries = keys, three sequences and padding a row.
TEST(CpuKernels, SoftmaxWithSequencesSeesOnlyItsSequence) {
  const int64_t batch = 3, heads = 2, seq = 37;
  std::vector<int32_t> ids = ferry::test::packedSequenceIds(batch, seq, 5);
  std::vector<float> x = randn(batch * heads * seq * seq, 31, 0.0f, 3.0f);
  std::vector<float> mask(batch * seq, 0.0f);
  for (int64_t i = 0; i < batch * seq; ++i)
    mask[i] = ids[i] == 0 ? -10000.0f : 0.0f;
  std::vector<double> ref(x.size(), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < heads * seq; ++r) {
      const int64_t row = (b * heads * seq + r) * seq;
      const int32_t mine = ids[b * seq + r % seq];
      double m = -1e30, sum = 0.0;
      for (int64_t c = 0; c < seq; ++c)
        if (ids[b * seq + c] == mine)
          m = std::max(m, double{x[row + c] + mask[b * seq + c]});
      for (int64_t c = 0; c < seq; ++c)
        if (ids[b * seq + c] == mine) {
          ref[row + c] = std::exp(x[row + c] + mask[b * seq + c] - m);
          sum += ref[row + c];
        }
      for (int64_t c = 0; c < seq; ++c)
        ref[row + c] /= sum;
    }
  std::vector<float> y(x.size());
  cpu::softmax(x.data(), mask.data(), y.data(), batch, heads * seq, seq,
               ids.data());
  // Tolerance: relative L2 <= 1e-5 and max abs error <= 1e-6; the other
  // sequences' keys exactly 0.
  EXPECT_LE(relL2(y, ref), 1e-5);
  EXPECT_LE(maxAbs(y, ref), 1e-6);
  for (size_t i = 0; i < y.size(); ++i) {
    if (ref[i] == 0.0) {
      ASSERT_EQ(y[i], 0.0f) << "element " << i;
    }
  }
}

TEST(CpuKernels, SoftmaxWithMaskAndGrad) {
  struct Case {
    int64_t batch, rows, cols;
    bool mask;
  };
  for (Case k : {Case{3, 7, 37, true}, Case{3, 7, 37, false},
                 Case{4, 50, 211, true}, Case{2, 131, 129, false}}) {
    std::vector<float> x = randn(k.batch * k.rows * k.cols, 24, 0.0f, 3.0f);
    std::vector<float> mask(k.batch * k.cols, 0.0f);
    std::vector<int32_t> keep = randInts(mask.size(), 0, 3, 25);
    for (size_t i = 0; i < mask.size(); ++i)
      mask[i] = keep[i] == 0 ? -10000.0f : 0.0f;
    // Batch entry 1 fully masked: the softmax of the shifted scores.
    for (int64_t c = 0; c < k.cols; ++c)
      mask[1 * k.cols + c] = -10000.0f;
    // The reference adds the mask in float, as the kernel (and PyTorch)
    // does: x - 10000 is rounded to float's spacing there (~1e-3), which is
    // what a fully masked row's softmax is taken of.
    std::vector<double> ref(x.size());
    for (int64_t b = 0; b < k.batch; ++b)
      for (int64_t r = 0; r < k.rows; ++r) {
        const int64_t row = (b * k.rows + r) * k.cols;
        std::vector<double> scores(k.cols);
        for (int64_t c = 0; c < k.cols; ++c)
          scores[c] = k.mask ? x[row + c] + mask[b * k.cols + c] : x[row + c];
        const double m = *std::max_element(scores.begin(), scores.end());
        double sum = 0.0;
        for (int64_t c = 0; c < k.cols; ++c) {
          ref[row + c] = std::exp(scores[c] - m);
          sum += ref[row + c];
        }
        for (int64_t c = 0; c < k.cols; ++c)
          ref[row + c] /= sum;
      }
    std::vector<float> y(x.size());
    cpu::softmax(x.data(), k.mask ? mask.data() : nullptr, y.data(), k.batch,
                 k.rows, k.cols);
    // Tolerance: relative L2 <= 1e-5 and max abs error <= 1e-6.
    EXPECT_LE(relL2(y, ref), 1e-5);
    EXPECT_LE(maxAbs(y, ref), 1e-6);
    if (k.mask) { // the fully masked entry is a proper distribution
      EXPECT_NEAR(std::accumulate(y.begin() + k.rows * k.cols,
                                  y.begin() + k.rows * k.cols + k.cols, 0.0),
                  1.0, 1e-5);
    }

    const int64_t rows = k.batch * k.rows;
    std::vector<float> dy = randn(x.size(), 26), dx(x.size());
    cpu::softmaxGrad(y.data(), dy.data(), dx.data(), rows, k.cols);
    std::vector<double> refDx(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      double dot = 0.0;
      for (int64_t c = 0; c < k.cols; ++c)
        dot += double{dy[r * k.cols + c]} * y[r * k.cols + c];
      for (int64_t c = 0; c < k.cols; ++c)
        refDx[r * k.cols + c] = y[r * k.cols + c] * (dy[r * k.cols + c] - dot);
    }
    // Tolerance: relative L2 <= 1e-5.
    EXPECT_LE(relL2(dx, refDx), 1e-5);
  }
}

// ---------------------------------------------------------------- dropout

// Packed rows' keys (DropoutKeys.h): a row holding two samples (3 and 5
// tokens of 8) drops exactly what the unpacked samples (run positions 10
// and 11) drop, token by token for [seq, width] samples and (query, key)
// by (query, key) within a sequence for [heads, seq, seq] probabilities.
TEST(CpuKernels, PackedDropoutKeysGiveTheUnpackedMasks) {
  const int64_t seq = 8, width = 4, heads = 2;
  const int64_t lengths[2] = {3, 5};
  std::vector<int32_t> keys(2 * seq);
  for (int64_t t = 0; t < seq; ++t) {
    bool first = t < lengths[0];
    keys[2 * t] = first ? 10 : 11;
    keys[2 * t + 1] = static_cast<int32_t>(first ? t : t - lengths[0]);
  }
  const uint64_t seed = 5;
  const uint32_t purpose = 0x1234u, layer = 3;
  const float p = 0.3f;

  // Tokens: [2 samples, seq, width] unpacked, [1 row, seq, width] packed.
  std::vector<float> x = randn(2 * seq * width, 41, 1.0f, 0.5f);
  std::vector<float> unpacked(x.size());
  cpu::dropout(x.data(), unpacked.data(), 2 * seq * width, seq * width, seed,
               purpose, layer, 10, p);
  std::vector<float> row(seq * width), dropped(seq * width);
  for (int64_t t = 0; t < seq; ++t) {
    int64_t sample = keys[2 * t] - 10, pos = keys[2 * t + 1];
    for (int64_t w = 0; w < width; ++w)
      row[t * width + w] = x[(sample * seq + pos) * width + w];
  }
  using ferry::PackedDropoutKeys;
  PackedDropoutKeys tokens{keys.data(), seq, PackedDropoutKeys::Tokens, width};
  cpu::dropout(row.data(), dropped.data(), seq * width, seq * width, seed,
               purpose, layer, 999, p, tokens);
  int64_t zeros = 0;
  for (int64_t t = 0; t < seq; ++t) {
    int64_t sample = keys[2 * t] - 10, pos = keys[2 * t + 1];
    for (int64_t w = 0; w < width; ++w) {
      EXPECT_EQ(dropped[t * width + w],
                unpacked[(sample * seq + pos) * width + w])
          << "token " << t << " element " << w;
      zeros += dropped[t * width + w] == 0.0f;
    }
  }
  EXPECT_GT(zeros, 0); // p 0.3 over 32 elements drops some

  // Attention probabilities: [2, heads, seq, seq] against [1, heads, seq,
  // seq], compared where query and key share a sequence.
  const int64_t per = heads * seq * seq;
  std::vector<float> probs = randn(2 * per, 42, 1.0f, 0.5f);
  std::vector<float> probsDropped(probs.size());
  cpu::dropout(probs.data(), probsDropped.data(), 2 * per, per, seed, purpose,
               layer, 10, p);
  std::vector<float> packedProbs(per), packedDropped(per);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t q = 0; q < seq; ++q)
      for (int64_t k = 0; k < seq; ++k) {
        int64_t sample = keys[2 * q] - 10;
        int64_t from = ((sample * heads + h) * seq + keys[2 * q + 1]) * seq +
                       keys[2 * k + 1];
        packedProbs[(h * seq + q) * seq + k] = probs[from];
      }
  PackedDropoutKeys attention{keys.data(), seq, PackedDropoutKeys::Attention,
                              1};
  cpu::dropout(packedProbs.data(), packedDropped.data(), per, per, seed,
               purpose, layer, 999, p, attention);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t q = 0; q < seq; ++q)
      for (int64_t k = 0; k < seq; ++k) {
        if (keys[2 * q] != keys[2 * k])
          continue; // another sequence: probability 0 in attention
        int64_t sample = keys[2 * q] - 10;
        int64_t from = ((sample * heads + h) * seq + keys[2 * q + 1]) * seq +
                       keys[2 * k + 1];
        EXPECT_EQ(packedDropped[(h * seq + q) * seq + k], probsDropped[from])
            << "head " << h << " query " << q << " key " << k;
      }
}

TEST(CpuKernels, DropoutZeroCopies) {
  std::vector<float> x = randn(40001, 27), out(x.size(), 1.0f);
  cpu::dropout(x.data(), out.data(), 40001, 1003, 7, 1, 0, 0, 0.0f);
  EXPECT_EQ(out, x);
}

TEST(CpuKernels, DropoutMatchesPhiloxStream) {
  const float p = 0.1f;
  const int64_t perSample = 25003; // not a multiple of 4
  const int64_t samples = 4, n = perSample * samples;
  const uint64_t seed = 0x123456789abcdefull;
  const uint32_t purpose = ferry::random::purposeHash("attention.probs");
  const uint32_t layer = 5;
  const uint64_t offset = 6;
  std::vector<float> x = randn(n, 28), out(n);
  for (float &v : x)
    if (v == 0.0f)
      v = 1.0f;
  cpu::dropout(x.data(), out.data(), n, perSample, seed, purpose, layer, offset,
               p);
  int64_t kept = 0;
  for (int64_t e = 0; e < n; ++e) {
    const bool keeps = ferry::random::dropoutKeeps(
        seed, purpose, layer, offset + e / perSample, e % perSample, p);
    // Exactly the element-wise stream; kept values are x / (1 - p).
    ASSERT_EQ(out[e], keeps ? x[e] / (1.0f - p) : 0.0f) << "element " << e;
    kept += keeps;
  }
  // Tolerance: the kept fraction is within 1% of 1 - p (about 10 sigma).
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.9, 0.01);
  // Kept values are scaled by 1 / (1 - p): relative 1e-6 against double.
  for (int64_t e = 0; e < 100; ++e) {
    if (out[e] != 0.0f) {
      EXPECT_NEAR(out[e], x[e] / 0.9, 1e-6 * std::fabs(x[e]));
    }
  }
}

// Tensor parallelism: a part of every sample (elements [offset, offset +
// len) of each), dropped with keyOffset = offset, equals that part of the
// whole dropout, exactly: parts that start on a Philox block of four (T = 2's
// halves) and mid-block (the element-wise path).
TEST(CpuKernels, DropoutOfAPartOfEachSampleEqualsThatPartOfTheWhole) {
  const int64_t perSample = 8006, samples = 3, n = samples * perSample;
  std::vector<float> x = randn(n, 31), whole(n);
  cpu::dropout(x.data(), whole.data(), n, perSample, 99, 3, 2, 5, 0.25f);
  const std::pair<int64_t, int64_t> parts[] = {
      {0, 4003}, {4003, 4003}, {4000, 4006}, {1, 2001}, {5, 7999 - 5}};
  for (auto [offset, len] : parts) {
    std::vector<float> part, want;
    for (int64_t s = 0; s < samples; ++s) {
      int64_t from = s * perSample + offset;
      part.insert(part.end(), x.begin() + from, x.begin() + from + len);
      want.insert(want.end(), whole.begin() + from, whole.begin() + from + len);
    }
    std::vector<float> got(part.size());
    cpu::dropout(part.data(), got.data(), samples * len, len, 99, 3, 2, 5,
                 0.25f, {}, static_cast<uint64_t>(offset));
    EXPECT_EQ(got, want) << "offset " << offset << ", " << len << " elements";
  }
}

// Packed rows' attention probabilities [batch, heads, seq, seq], keyed by
// (sequence, head, query position, key position): a tensor rank's heads,
// offset by its first head's elements, draw the whole tensor's masks.
TEST(CpuKernels, PackedAttentionDropoutOfARanksHeadsEqualsThoseOfTheWhole) {
  const int64_t batch = 2, heads = 4, seq = 6, perSample = heads * seq * seq;
  // Two sequences a row: tokens 0-3 and 4-5, each its own key and positions.
  std::vector<int32_t> keys;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq; ++t) {
      keys.push_back(static_cast<int32_t>(10 * b + (t < 4 ? 0 : 1)));
      keys.push_back(static_cast<int32_t>(t < 4 ? t : t - 4));
    }
  ferry::PackedDropoutKeys packed;
  packed.keys = keys.data(), packed.seq = seq;
  packed.layout = ferry::PackedDropoutKeys::Attention;
  const int64_t n = batch * perSample;
  std::vector<float> x = randn(n, 41), whole(n);
  cpu::dropout(x.data(), whole.data(), n, perSample, 99, 3, 2, 0, 0.25f,
               packed);
  for (int64_t parts : {2, 4}) {
    const int64_t part = perSample / parts;
    for (int64_t rank = 0; rank < parts; ++rank) {
      std::vector<float> mine, want;
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t from = b * perSample + rank * part;
        mine.insert(mine.end(), x.begin() + from, x.begin() + from + part);
        want.insert(want.end(), whole.begin() + from,
                    whole.begin() + from + part);
      }
      std::vector<float> got(mine.size());
      cpu::dropout(mine.data(), got.data(), batch * part, part, 99, 3, 2, 0,
                   0.25f, packed, static_cast<uint64_t>(rank * part));
      EXPECT_EQ(got, want) << "rank " << rank << " of " << parts;
    }
  }
}

TEST(CpuKernels, DropoutIndependentOfSampleSplit) {
  // Samples [0, 4) at once equal [0, 2) then [2, 4) with sampleOffset 2.
  const int64_t perSample = 20011, n = 4 * perSample, half = 2 * perSample;
  std::vector<float> x = randn(n, 29), whole(n), split(n);
  cpu::dropout(x.data(), whole.data(), n, perSample, 99, 3, 2, 0, 0.25f);
  cpu::dropout(x.data(), split.data(), half, perSample, 99, 3, 2, 0, 0.25f);
  cpu::dropout(x.data() + half, split.data() + half, half, perSample, 99, 3, 2,
               2, 0.25f);
  EXPECT_EQ(whole, split);
  // A different layer, purpose or seed gives a different mask.
  std::vector<float> other(n);
  cpu::dropout(x.data(), other.data(), n, perSample, 99, 3, 3, 0, 0.25f);
  EXPECT_NE(whole, other);
  cpu::dropout(x.data(), other.data(), n, perSample, 99, 4, 2, 0, 0.25f);
  EXPECT_NE(whole, other);
  cpu::dropout(x.data(), other.data(), n, perSample, 98, 3, 2, 0, 0.25f);
  EXPECT_NE(whole, other);
}

// -------------------------------------------------------------- transpose

void checkTranspose(std::vector<int64_t> dims, std::vector<int64_t> perm,
                    uint32_t seed) {
  const int32_t rank = static_cast<int32_t>(dims.size());
  int64_t total = 1;
  for (int64_t d : dims)
    total *= d;
  std::vector<float> x = randn(total, seed), out(total, -1.0f);
  cpu::transpose(x.data(), out.data(), rank, dims.data(), perm.data());
  std::vector<int64_t> inStride(rank, 1);
  for (int32_t d = rank - 2; d >= 0; --d)
    inStride[d] = inStride[d + 1] * dims[d + 1];
  std::vector<int64_t> index(rank, 0); // output index
  for (int64_t q = 0; q < total; ++q) {
    int64_t rest = q, offset = 0;
    for (int32_t i = rank - 1; i >= 0; --i) {
      index[i] = rest % dims[perm[i]];
      rest /= dims[perm[i]];
      offset += index[i] * inStride[perm[i]];
    }
    // Exact: a permutation copies.
    ASSERT_EQ(out[q], x[offset]) << "output element " << q;
  }
}

TEST(CpuKernels, Transpose) {
  checkTranspose({3, 5, 7}, {0, 1, 2}, 30);       // identity
  checkTranspose({3, 5, 7}, {2, 0, 1}, 31);       // rotate
  checkTranspose({2, 3, 5, 7}, {0, 2, 1, 3}, 32); // heads split
  checkTranspose({2, 3, 5, 7}, {0, 1, 3, 2}, 33); // last two swapped
  checkTranspose({2, 3, 5, 7}, {3, 1, 0, 2}, 34);
  checkTranspose({2, 1, 5, 1, 7}, {4, 3, 2, 1, 0}, 35); // size-1 dims
  checkTranspose({2, 3, 1, 5, 3, 2}, {5, 3, 0, 2, 4, 1}, 36);
  checkTranspose({129, 263}, {1, 0}, 37);            // tiled, parallel
  checkTranspose({4, 67, 12, 33}, {0, 2, 1, 3}, 38); // rows, parallel
  checkTranspose({1, 1}, {1, 0}, 39);
}

// ---------------------------------------------------- reduce / broadcast

TEST(CpuKernels, ReduceAndBroadcast) {
  struct Case {
    int64_t outer, size, inner;
  };
  for (Case k : {Case{3, 5, 7}, Case{1, 20011, 1}, Case{3, 9001, 1},
                 Case{2, 401, 131}, Case{1, 3, 1}}) {
    const int64_t total = k.outer * k.size * k.inner;
    std::vector<float> x = randn(total, 40, 0.5f, 1.0f);
    for (int kind = 0; kind < 4; ++kind) {
      std::vector<float> out(k.outer * k.inner);
      cpu::reduce(static_cast<cpu::Reduce>(kind), x.data(), out.data(), k.outer,
                  k.size, k.inner);
      std::vector<double> ref(out.size());
      for (int64_t o = 0; o < k.outer; ++o)
        for (int64_t i = 0; i < k.inner; ++i) {
          double acc = kind == 2 ? -1e300 : 0.0;
          for (int64_t r = 0; r < k.size; ++r) {
            const double v = x[(o * k.size + r) * k.inner + i];
            acc = kind == 2   ? std::max(acc, v)
                  : kind == 3 ? acc + v * v
                              : acc + v;
          }
          ref[o * k.inner + i] = kind == 1 ? acc / k.size : acc;
        }
      if (kind == 2) {
        for (size_t i = 0; i < out.size(); ++i) // max is exact
          ASSERT_EQ(out[i], static_cast<float>(ref[i]));
      } else {
        // Tolerance: relative L2 <= 1e-6 (double accumulation).
        EXPECT_LE(relL2(out, ref), 1e-6) << "kind " << kind;
      }
    }
    std::vector<float> small = randn(k.outer * k.inner, 41), big(total);
    cpu::broadcast(small.data(), big.data(), k.outer, k.size, k.inner);
    for (int64_t o = 0; o < k.outer; ++o)
      for (int64_t r = 0; r < k.size; ++r)
        for (int64_t i = 0; i < k.inner; ++i)
          ASSERT_EQ(big[(o * k.size + r) * k.inner + i],
                    small[o * k.inner + i]);
  }
}

} // namespace
