// The CPU kernels' losses, metrics, optimizers and learning rate against
// naive double-precision references and hand-computed values, reductions
// against the thread count, and the 16-bit rounding of matmul inputs. Every
// comparison states its tolerance. (The other kernels: CpuKernelsTest.cpp.)
#include "runtime/cpu/CpuKernels.h"
#include "runtime/random/Philox.h"

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

#include "test/unit/CpuKernelsTestUtil.h"

namespace cpu = ferry::cpu;
using namespace ferry::test;

namespace {

// ------------------------------------------------------- loss and metrics

struct CrossEntropyCase {
  int64_t rows, cols, classes;
};

TEST(CpuKernels, SoftmaxCrossEntropyIgnoresPaddedColumns) {
  for (CrossEntropyCase k :
       {CrossEntropyCase{9, 40, 33}, CrossEntropyCase{5, 30528, 30522}}) {
    std::vector<float> logits = randn(k.rows * k.cols, 42, 0.0f, 3.0f);
    std::vector<int32_t> labels =
        randInts(k.rows, 0, static_cast<int32_t>(k.classes - 1), 43);
    std::vector<float> weights(k.rows);
    for (int64_t r = 0; r < k.rows; ++r)
      weights[r] = r % 3 == 1 ? 0.0f : 0.5f + 0.25f * static_cast<float>(r);
    labels[1] = -1; // ignored: its weight is 0
    const float dloss = 0.75f;

    double refLoss = 0.0;
    std::vector<double> refGrad(logits.size(), 0.0);
    for (int64_t r = 0; r < k.rows; ++r) {
      if (weights[r] == 0.0f)
        continue;
      const float *row = logits.data() + r * k.cols;
      double m = -1e300, sum = 0.0;
      for (int64_t c = 0; c < k.classes; ++c)
        m = std::max(m, double{row[c]});
      for (int64_t c = 0; c < k.classes; ++c)
        sum += std::exp(row[c] - m);
      refLoss += weights[r] * (m + std::log(sum) - row[labels[r]]);
      for (int64_t c = 0; c < k.classes; ++c)
        refGrad[r * k.cols + c] =
            double{dloss} * weights[r] *
            (std::exp(row[c] - m) / sum - (c == labels[r] ? 1.0 : 0.0));
    }
    float loss = 0.0f;
    cpu::softmaxCrossEntropy(logits.data(), labels.data(), weights.data(),
                             &loss, k.rows, k.cols, k.classes);
    std::vector<float> grad(logits.size(), 3.0f);
    cpu::softmaxCrossEntropyGrad(logits.data(), labels.data(), weights.data(),
                                 &dloss, grad.data(), k.rows, k.cols,
                                 k.classes);
    // Tolerance: relative 1e-6 on the loss, relative L2 1e-5 on the grad.
    EXPECT_NEAR(loss, refLoss, 1e-6 * std::fabs(refLoss));
    EXPECT_LE(relL2(grad, refGrad), 1e-5);
    for (int64_t r = 0; r < k.rows; ++r)
      for (int64_t c = k.classes; c < k.cols; ++c)
        ASSERT_EQ(grad[r * k.cols + c], 0.0f);
    for (int64_t c = 0; c < k.cols; ++c) // the weight-0 row
      ASSERT_EQ(grad[1 * k.cols + c], 0.0f);

    // Huge values in the padded columns change nothing.
    std::vector<float> padded = logits;
    for (int64_t r = 0; r < k.rows; ++r)
      for (int64_t c = k.classes; c < k.cols; ++c)
        padded[r * k.cols + c] = 1e4f;
    float paddedLoss = 0.0f;
    cpu::softmaxCrossEntropy(padded.data(), labels.data(), weights.data(),
                             &paddedLoss, k.rows, k.cols, k.classes);
    std::vector<float> paddedGrad(logits.size());
    cpu::softmaxCrossEntropyGrad(padded.data(), labels.data(), weights.data(),
                                 &dloss, paddedGrad.data(), k.rows, k.cols,
                                 k.classes);
    EXPECT_EQ(paddedLoss, loss);
    EXPECT_EQ(paddedGrad, grad);
  }
}

TEST(CpuKernels, ArgmaxCorrectTiesTakeLowestIndex) {
  const int64_t rows = 5, cols = 8, classes = 6;
  std::vector<float> logits = {
      // row 0: tie between 1 and 4 -> 1; label 1: correct
      0, 3, 1, 2, 3, 0, 9, 9,
      // row 1: tie between 1 and 4 -> 1; label 4: wrong
      0, 3, 1, 2, 3, 0, 9, 9,
      // row 2: max at 5 (padding 6, 7 larger but excluded); label 5: correct
      0, 1, 2, 3, 4, 5, 9, 9,
      // row 3: max at 0; label 0 but weight 0
      7, 1, 2, 3, 4, 5, 9, 9,
      // row 4: all equal -> 0; label 0: correct
      2, 2, 2, 2, 2, 2, 9, 9};
  std::vector<int32_t> labels = {1, 4, 5, 0, 0};
  std::vector<float> weights = {1.0f, 1.0f, 0.5f, 0.0f, 2.0f};
  float out = -1.0f;
  cpu::argmaxCorrect(logits.data(), labels.data(), weights.data(), &out, rows,
                     cols, classes);
  EXPECT_EQ(out, 1.0f + 0.5f + 2.0f);
  // A row above the OpenMP threshold, with the maximum tied at its end.
  const int64_t wide = 40000;
  std::vector<float> big = randn(wide, 44);
  big[wide - 3] = big[wide - 1] = 100.0f;
  int32_t label = static_cast<int32_t>(wide - 3);
  float one = 1.0f;
  cpu::argmaxCorrect(big.data(), &label, &one, &out, 1, wide, wide);
  EXPECT_EQ(out, 1.0f);
}

TEST(CpuKernels, GlobalNorm) {
  std::vector<std::vector<float>> tensors = {
      randn(5, 45), randn(20011, 46), {}, randn(70001, 47)};
  std::vector<const float *> pointers;
  std::vector<int64_t> sizes;
  double ref = 0.0;
  for (const auto &t : tensors) {
    pointers.push_back(t.data());
    sizes.push_back(static_cast<int64_t>(t.size()));
    for (float v : t)
      ref += double{v} * v;
  }
  float out = 0.0f;
  cpu::globalNorm(pointers.data(), sizes.data(), 4, &out);
  // Tolerance: relative 1e-6 (double accumulation).
  EXPECT_NEAR(out, std::sqrt(ref), 1e-6 * std::sqrt(ref));
  cpu::globalNorm(pointers.data(), sizes.data(), 0, &out);
  EXPECT_EQ(out, 0.0f);
}

// -------------------------------------------------------------- optimizer

TEST(CpuKernels, LearningRate) {
  // Poly: lr 1e-3, warmup 100, start 0, power 1, total 1000.
  auto poly = [](int64_t s, int64_t start = 0) {
    return cpu::learningRate(0, 1e-3, 100, start, 1.0, 1000, s);
  };
  EXPECT_FLOAT_EQ(poly(0), 0.0f);                    // warmup starts at 0
  EXPECT_FLOAT_EQ(poly(50), 1e-3f * 50 / 100);       // half way up
  EXPECT_FLOAT_EQ(poly(99), 1e-3f * 99 / 100);       // last warmup step
  EXPECT_FLOAT_EQ(poly(100), 1e-3f * (1.0f - 0.1f)); // decay: 1 - 100/1000
  EXPECT_FLOAT_EQ(poly(500), 1e-3f * 0.5f);
  EXPECT_EQ(poly(1000), 0.0f); // s >= total: 0
  EXPECT_EQ(poly(1500), 0.0f);
  // start_warmup_step -50: at s = 0 warmup is half done; at s = 50 it is over.
  EXPECT_FLOAT_EQ(poly(0, -50), 1e-3f * 50 / 100);
  EXPECT_FLOAT_EQ(poly(50, -50), 1e-3f * (1.0f - 0.05f));
  // Power 2: (1 - 500/1000)^2 = 0.25.
  EXPECT_FLOAT_EQ(cpu::learningRate(0, 2e-3, 10, 0, 2.0, 1000, 500),
                  2e-3f * 0.25f);
  // No warmup: decay from s = 0.
  EXPECT_FLOAT_EQ(cpu::learningRate(0, 1e-3, 0, 0, 1.0, 1000, 0), 1e-3f);
  // Constant.
  EXPECT_FLOAT_EQ(cpu::learningRate(1, 4e-4, 100, 0, 1.0, 1000, 0), 4e-4f);
  EXPECT_FLOAT_EQ(cpu::learningRate(1, 4e-4, 100, 0, 1.0, 1000, 5000), 4e-4f);
}

// Double-precision reference of adamUpdate (the formulas in the kernel's
// contract), updating w, m, v in place.
void adamRef(std::vector<double> &w, const std::vector<float> &g,
             std::vector<double> &m, std::vector<double> &v, int64_t n,
             int64_t segments, double lr, double globalNorm, double clipNorm,
             const cpu::AdamParams &p) {
  const double clip =
      (clipNorm > 0 && globalNorm > clipNorm) ? clipNorm / globalNorm : 1.0;
  const double b1 = p.beta1, b2 = p.beta2;
  const double bc1 = 1.0 - std::pow(b1, double(p.step));
  const double bc2 = 1.0 - std::pow(b2, double(p.step));
  for (int64_t s = 0; s < segments; ++s) {
    std::vector<double> u(n);
    double ww = 0.0, uu = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t e = s * n + i;
      const double gi = clip * g[e];
      m[e] = b1 * m[e] + (1 - b1) * gi;
      v[e] = b2 * v[e] + (1 - b2) * gi * gi;
      u[i] = (m[e] / bc1) / (std::sqrt(v[e] / bc2) + double{p.epsilon});
      if (p.applyWeightDecay)
        u[i] += double{p.weightDecay} * w[e];
      ww += w[e] * w[e];
      uu += u[i] * u[i];
    }
    const double ratio =
        p.lamb ? ((ww > 0 && uu > 0) ? std::sqrt(ww) / std::sqrt(uu) : 1.0)
               : 1.0;
    for (int64_t i = 0; i < n; ++i)
      w[s * n + i] -= lr * ratio * u[i];
  }
}

TEST(CpuKernels, AdamUpdateLambAndAdamWMatchReference) {
  for (bool lamb : {true, false})
    for (bool decay : {true, false})
      for (int64_t n : {int64_t{1001}, int64_t{40009}}) {
        const int64_t segments = 2, total = n * segments;
        std::vector<float> w = randn(total, 50, 0.0f, 0.05f);
        std::vector<float> g = randn(total, 51, 0.0f, 0.3f);
        std::vector<float> m = randn(total, 52, 0.0f, 0.01f);
        std::vector<float> v = randn(total, 53, 0.0f, 0.01f);
        for (float &x : v)
          x = x * x; // second moments are non-negative
        // Segment 1 smaller, so the trust ratios differ.
        for (int64_t i = n; i < total; ++i)
          w[i] *= 0.1f;
        cpu::AdamParams p{0.9f, 0.999f, 1e-6f, 0.01f, decay, lamb, 7};
        std::vector<double> wr(w.begin(), w.end()), mr(m.begin(), m.end()),
            vr(v.begin(), v.end());
        // Clipping active: global norm 4 > clip norm 1.
        adamRef(wr, g, mr, vr, n, segments, 1e-3, 4.0, 1.0, p);
        cpu::adamUpdate(w.data(), g.data(), m.data(), v.data(), n, segments,
                        1e-3f, 4.0f, 1.0f, p);
        // Tolerance: relative L2 <= 1e-6 on w, m and v, and on the update
        // w_new - w_old <= 1e-4 (fp32 rounding of a 1e-3 sized step).
        EXPECT_LE(relL2(w, wr), 1e-6);
        EXPECT_LE(relL2(m, mr), 1e-6);
        EXPECT_LE(relL2(v, vr), 1e-6);
        std::vector<float> w0 = randn(total, 50, 0.0f, 0.05f);
        for (int64_t i = n; i < total; ++i)
          w0[i] *= 0.1f;
        std::vector<float> delta(total);
        std::vector<double> refDelta(total);
        for (int64_t i = 0; i < total; ++i) {
          delta[i] = w[i] - w0[i];
          refDelta[i] = wr[i] - w0[i];
        }
        EXPECT_LE(relL2(delta, refDelta), 1e-4)
            << "lamb " << lamb << " decay " << decay << " n " << n;
      }
}

// Replicated tensor sharding's LAMB: each of 3 replicas runs lambMoments on
// its zero-padded shard of each segment, the sums are added (the
// all-reduce), and lambApply on each shard gives the whole tensor's update:
// relative L2 <= 1e-6 against adamUpdate on the whole (the sums pass
// through fp32 between the halves).
TEST(CpuKernels, ShardedLambEqualsWholeLamb) {
  const int64_t n = 1001, segments = 2, total = n * segments, replicas = 3;
  const int64_t shard = (n + replicas - 1) / replicas; // 334, 1 padding
  std::vector<float> w = randn(total, 60, 0.0f, 0.05f);
  std::vector<float> g = randn(total, 61, 0.0f, 0.3f);
  std::vector<float> m = randn(total, 62, 0.0f, 0.01f);
  std::vector<float> v = randn(total, 63, 0.0f, 0.01f);
  for (float &x : v)
    x = x * x;
  for (int64_t i = n; i < total; ++i)
    w[i] *= 0.1f; // different trust ratios per segment
  cpu::AdamParams p{0.9f, 0.999f, 1e-6f, 0.01f, true, true, 5};
  // Shards: replica r holds elements [r * shard, (r + 1) * shard) of each
  // segment, zeros past n.
  auto split = [&](const std::vector<float> &x, int64_t r) {
    std::vector<float> out(static_cast<size_t>(segments * shard), 0.0f);
    for (int64_t s = 0; s < segments; ++s)
      for (int64_t k = 0; k < shard && r * shard + k < n; ++k)
        out[s * shard + k] = x[s * n + r * shard + k];
    return out;
  };
  std::vector<std::vector<float>> ws, gs, ms, vs;
  std::vector<float> sums(2 * segments, 0.0f);
  for (int64_t r = 0; r < replicas; ++r) {
    ws.push_back(split(w, r));
    gs.push_back(split(g, r));
    ms.push_back(split(m, r));
    vs.push_back(split(v, r));
    std::vector<float> mine(2 * segments);
    cpu::lambMoments(ws[r].data(), gs[r].data(), ms[r].data(), vs[r].data(),
                     shard, segments, 4.0f, 1.0f, p, mine.data());
    for (int64_t i = 0; i < 2 * segments; ++i)
      sums[i] += mine[i];
  }
  for (int64_t r = 0; r < replicas; ++r)
    cpu::lambApply(ws[r].data(), ms[r].data(), vs[r].data(), shard, segments,
                   1e-3f, 4.0f, p, sums.data());
  cpu::adamUpdate(w.data(), g.data(), m.data(), v.data(), n, segments, 1e-3f,
                  4.0f, 1.0f, p);
  for (int64_t r = 0; r < replicas; ++r) {
    std::vector<float> want = split(w, r), wantM = split(m, r);
    std::vector<double> wd(want.begin(), want.end()),
        md(wantM.begin(), wantM.end());
    EXPECT_LE(relL2(ws[r], wd), 1e-6) << "replica " << r;
    EXPECT_LE(relL2(ms[r], md), 1e-6) << "replica " << r;
    // The padding stays zero.
    EXPECT_EQ(ws[r][shard - 1] == 0.0f, (r + 1) * shard > n);
  }
  // A non-finite norm under loss scaling skips both halves.
  cpu::AdamParams scaled = p;
  scaled.skipNonFinite = true;
  std::vector<float> before = ws[0], mBefore = ms[0], out(2 * segments, -1);
  cpu::lambMoments(ws[0].data(), gs[0].data(), ms[0].data(), vs[0].data(),
                   shard, segments, INFINITY, 1.0f, scaled, out.data());
  cpu::lambApply(ws[0].data(), ms[0].data(), vs[0].data(), shard, segments,
                 1e-3f, INFINITY, scaled, sums.data());
  EXPECT_EQ(ws[0], before);
  EXPECT_EQ(ms[0], mBefore);
  EXPECT_EQ(out, std::vector<float>(2 * segments, 0.0f));
}

TEST(CpuKernels, AdamUpdateHandComputed) {
  // w = [1, -2], g = [0.5, 0.25], m = v = 0, step 1, beta1 0.9, beta2 0.999,
  // eps 1e-6, weight decay 0.01, lr 0.1, no clipping.
  //   m = 0.1 g = [0.05, 0.025];  v = 0.001 g^2 = [2.5e-4, 6.25e-5]
  //   mhat = m / 0.1 = g;  vhat = v / 0.001 = g^2;  sqrt(vhat) = |g|
  //   u = g / (|g| + 1e-6) + 0.01 w
  //     = [0.5 / 0.500001 + 0.01, 0.25 / 0.250001 - 0.02]
  //     = [1.009998000004, 0.979996000016]
  // AdamW: w - 0.1 u = [0.8990001999996, -2.0979996000016].
  // LAMB: ||w|| = sqrt(5) = 2.2360679775,
  //   ||u|| = sqrt(1.020095960012 + 0.960392160047) = sqrt(1.980488120059)
  //         = 1.4072981632,  r = ||w|| / ||u|| = 1.5889084744,
  //   w - 0.1 r u = [1 - 0.1604794381, -2 - 0.1557123949]
  //               = [0.8395205619, -2.1557123949].
  for (bool lamb : {false, true}) {
    std::vector<float> w = {1.0f, -2.0f}, g = {0.5f, 0.25f}, m = {0, 0},
                       v = {0, 0};
    cpu::AdamParams p{0.9f, 0.999f, 1e-6f, 0.01f, true, lamb, 1};
    cpu::adamUpdate(w.data(), g.data(), m.data(), v.data(), 2, 1, 0.1f, 0.5f,
                    0.0f, p);
    // Tolerance: 1e-6 absolute on w (values of order 1); relative 2e-5 on
    // the moments, because the float betas are inexact (1 - 0.999f =
    // 0.00099998713, 1 - 0.9f = 0.100000024).
    EXPECT_NEAR(m[0], 0.05, 2e-5 * 0.05);
    EXPECT_NEAR(m[1], 0.025, 2e-5 * 0.025);
    EXPECT_NEAR(v[0], 2.5e-4, 2e-5 * 2.5e-4);
    EXPECT_NEAR(v[1], 6.25e-5, 2e-5 * 6.25e-5);
    if (lamb) {
      EXPECT_NEAR(w[0], 0.8395205619, 1e-6);
      EXPECT_NEAR(w[1], -2.1557123949, 1e-6);
    } else {
      EXPECT_NEAR(w[0], 0.8990002, 1e-6);
      EXPECT_NEAR(w[1], -2.0979996, 1e-6);
    }
  }
  // Clipping: global norm 2 > clip norm 1 halves g; with step 1 Adam's
  // direction is g / |g| either way, so only the moments change.
  std::vector<float> w = {1.0f, -2.0f}, g = {0.5f, 0.25f}, m = {0, 0},
                     v = {0, 0};
  cpu::AdamParams p{0.9f, 0.999f, 1e-6f, 0.01f, false, false, 1};
  cpu::adamUpdate(w.data(), g.data(), m.data(), v.data(), 2, 1, 0.1f, 2.0f,
                  1.0f, p);
  EXPECT_NEAR(m[0], 0.025, 2e-5 * 0.025);
  EXPECT_NEAR(v[1], 0.001 * 0.125 * 0.125, 2e-5 * 0.001 * 0.125 * 0.125);
  EXPECT_NEAR(w[0], 1.0 - 0.1 * 0.25 / (0.25 + 1e-6), 1e-6);
}

#ifdef _OPENMP
TEST(CpuKernels, ReductionsDoNotDependOnThreadCount) {
  // The reductions split work into fixed pieces, so 1 and 2 threads agree
  // bit for bit.
  const int64_t rows = 300, cols = 257;
  std::vector<float> x = randn(rows * cols, 60, 1.0f, 2.0f);
  std::vector<float> scale = randn(cols, 61), dy = randn(rows * cols, 62);
  std::vector<int32_t> labels = randInts(rows, 0, 250, 63);
  std::vector<float> weights(rows, 1.0f);
  auto run = [&]() {
    std::vector<float> result(rows * cols + 3 * cols + 4);
    float *dx = result.data(), *dscale = dx + rows * cols,
          *dbias = dscale + cols, *sums = dbias + cols, *tail = sums + cols;
    cpu::layerNormGrad(x.data(), scale.data(), dy.data(), dx, dscale, dbias,
                       rows, cols, 1e-12f);
    cpu::reduce(cpu::Reduce::Sum, x.data(), sums, 1, rows, cols);
    cpu::reduce(cpu::Reduce::SumSquares, x.data(), tail, 1, rows * cols, 1);
    const float *ptr = x.data();
    const int64_t size = rows * cols;
    cpu::globalNorm(&ptr, &size, 1, tail + 1);
    cpu::softmaxCrossEntropy(x.data(), labels.data(), weights.data(), tail + 2,
                             rows, cols, 251);
    std::vector<float> w = scale, m(cols, 0.0f), v(cols, 0.0f);
    cpu::AdamParams p{0.9f, 0.999f, 1e-6f, 0.01f, true, true, 3};
    cpu::adamUpdate(w.data(), dy.data(), m.data(), v.data(), cols, 1, 1e-3f,
                    1.0f, 0.0f, p);
    tail[3] = w[0];
    return result;
  };
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<float> one = run();
  omp_set_num_threads(2);
  std::vector<float> two = run();
  omp_set_num_threads(threads);
  EXPECT_EQ(one, two);
}
#endif

} // namespace

// bf16 rounding of matmul inputs: round to nearest, ties to even, on the
// 16 dropped mantissa bits; NaN stays NaN; infinities stay.
TEST(CpuKernels, RoundToBf16TiesToEven) {
  auto fromBits = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  };
  auto bitsOf = [](float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  };
  std::vector<float> x = {
      1.0f,
      fromBits(0x3F808000u), // exactly halfway, even below -> down
      fromBits(0x3F818000u), // exactly halfway, odd below -> up
      fromBits(0x3F808001u), // just above halfway -> up
      fromBits(0x3F807FFFu), // just below halfway -> down
      -fromBits(0x3F818000u),
      std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN(),
      fromBits(0x7F7FFFFFu)}; // the largest float rounds to infinity
  std::vector<float> out(x.size());
  ferry::cpu::roundToBf16(x.data(), out.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(bitsOf(out[0]), 0x3F800000u);
  EXPECT_EQ(bitsOf(out[1]), 0x3F800000u);
  EXPECT_EQ(bitsOf(out[2]), 0x3F820000u);
  EXPECT_EQ(bitsOf(out[3]), 0x3F810000u);
  EXPECT_EQ(bitsOf(out[4]), 0x3F800000u);
  EXPECT_EQ(bitsOf(out[5]), 0xBF820000u);
  EXPECT_TRUE(std::isinf(out[6]));
  EXPECT_TRUE(std::isnan(out[7]));
  EXPECT_TRUE(std::isinf(out[8]));
}

// fp16 rounding of matmul inputs: IEEE half, ties to even, overflow to
// infinity beyond 65504, gradual underflow.
TEST(CpuKernels, RoundToFp16) {
  std::vector<float> x = {1.0f,
                          1.0f + 1.0f / 2048.0f, // halfway: to even (1)
                          1.0f + 3.0f / 2048.0f, // halfway: up
                          65504.0f,
                          65520.0f, // max; rounds to inf
                          -3.0e-8f,
                          1.0e-9f};
  std::vector<float> out(x.size());
  ferry::cpu::roundToFp16(x.data(), out.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], 1.0f + 4.0f / 2048.0f);
  EXPECT_EQ(out[3], 65504.0f);
  EXPECT_TRUE(std::isinf(out[4]));
  EXPECT_EQ(out[5], -5.9604644775390625e-08f); // the smallest subnormal half
  EXPECT_EQ(out[6], 0.0f);
}
