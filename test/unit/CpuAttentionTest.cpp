// The CPU backend's fused attention (cpu::attention, cpu::attentionGrad)
// against a double-precision reference with the whole probability matrix,
// forward (out, the row logsumexp) and backward (dq, dk, dv), on random
// inputs with padding masks, with and without dropout, at head sizes that
// are and are not multiples of 16. Tolerances, relative L2 per tensor: 1e-5
// in fp32 (float sums over at most 128 keys); 1e-2 with bf16 product inputs
// (8-bit mantissas: each input is off by up to 2^-9 relatively).
#include "AttentionReference.h"

#include "runtime/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <random>

using namespace ferry;

namespace {

std::vector<float> randomFloats(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> d(-1.5f, 1.5f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

} // namespace

TEST(CpuAttention, EqualsTheDoubleReference) {
  std::mt19937 rng(5);
  for (test::AttentionCase c : {test::AttentionCase{2, 2, 64, 16, 5, 0.0f},
                                test::AttentionCase{1, 3, 50, 40, 7, 0.1f},
                                test::AttentionCase{2, 1, 128, 64, 30, 0.1f}})
    for (int precision : {0, 1}) {
      AttentionShape a;
      a.batch = c.batch, a.heads = c.heads, a.seq = c.seq, a.headDim = c.dim;
      a.seed = 42, a.purpose = 7, a.layer = 3, a.sampleOffset = 11, a.p = c.p;
      a.scale = 1.0f / std::sqrt(float(c.dim)), a.precision = precision;
      size_t n = static_cast<size_t>(c.batch * c.heads * c.seq * c.dim);
      auto q = randomFloats(n, rng), k = randomFloats(n, rng),
           v = randomFloats(n, rng), dout = randomFloats(n, rng);
      auto mask = test::paddingMask(c.batch, c.seq, c.padded);
      test::AttentionReference want =
          test::attentionReference(q, k, v, mask, dout, a);
      std::vector<float> out(n), lse(want.lse.size()), dq(n), dk(n), dv(n);
      cpu::attention(q.data(), k.data(), v.data(), mask.data(), out.data(),
                     lse.data(), a);
      cpu::attentionGrad(q.data(), k.data(), v.data(), mask.data(), out.data(),
                         lse.data(), dout.data(), dq.data(), dk.data(),
                         dv.data(), a);
      double tol = precision ? 1e-2 : 1e-5;
      std::string what = "seq " + std::to_string(c.seq) + ", dim " +
                         std::to_string(c.dim) + ", p " + std::to_string(c.p) +
                         (precision ? ", bf16" : ", fp32");
      EXPECT_LE(test::relativeError(out, want.out), tol) << "out, " << what;
      EXPECT_LE(test::relativeError(lse, want.lse), precision ? 1e-2 : 1e-6)
          << "lse, " << what;
      EXPECT_LE(test::relativeError(dq, want.dq), tol) << "dq, " << what;
      EXPECT_LE(test::relativeError(dk, want.dk), tol) << "dk, " << what;
      EXPECT_LE(test::relativeError(dv, want.dv), tol) << "dv, " << what;
    }
}
