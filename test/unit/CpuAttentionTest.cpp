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

// Packed rows (attention's sequence_ids): three sequences and padding in
// each row, against the reference with the same ids (dropout on, both
// precisions), and, without dropout, every sequence against itself alone
// in a row of its own (the rest padding): the same out, lse, dq, dk and dv
// for its tokens within 1e-5. Other sequences' keys are out exactly (-inf,
// a probability of 0), so only the sums' order differs.
TEST(CpuAttention, PackedRowsEqualEachSequenceAlone) {
  std::mt19937 rng(9);
  const int64_t B = 2, H = 2, S = 48, D = 24, padded = 5;
  std::vector<int32_t> ids = test::packedSequenceIds(B, S, padded);
  auto mask = test::paddingMask(B, S, padded);
  size_t n = static_cast<size_t>(B * H * S * D);
  auto q = randomFloats(n, rng), k = randomFloats(n, rng),
       v = randomFloats(n, rng), dout = randomFloats(n, rng);
  for (int precision : {0, 1}) {
    AttentionShape a;
    a.batch = B, a.heads = H, a.seq = S, a.headDim = D;
    a.seed = 42, a.purpose = 7, a.layer = 3, a.sampleOffset = 11, a.p = 0.1f;
    a.scale = 1.0f / std::sqrt(float(D)), a.precision = precision;
    a.sequenceIds = ids.data();
    test::AttentionReference want =
        test::attentionReference(q, k, v, mask, dout, a);
    std::vector<float> out(n), lse(want.lse.size()), dq(n), dk(n), dv(n);
    cpu::attention(q.data(), k.data(), v.data(), mask.data(), out.data(),
                   lse.data(), a);
    cpu::attentionGrad(q.data(), k.data(), v.data(), mask.data(), out.data(),
                       lse.data(), dout.data(), dq.data(), dk.data(), dv.data(),
                       a);
    // Padding tokens (sequence 0) see only padding keys, all at -10000,
    // where a float score keeps 3 digits: their rows, which nothing uses,
    // are left out of the comparison.
    test::dropPadding(ids, a, out, want.out);
    test::dropPadding(ids, a, lse, want.lse, 1);
    test::dropPadding(ids, a, dq, want.dq);
    test::dropPadding(ids, a, dk, want.dk);
    test::dropPadding(ids, a, dv, want.dv);
    double tol = precision ? 1e-2 : 1e-5;
    EXPECT_LE(test::relativeError(out, want.out), tol) << precision;
    EXPECT_LE(test::relativeError(lse, want.lse), precision ? 1e-2 : 1e-6);
    EXPECT_LE(test::relativeError(dq, want.dq), tol) << precision;
    EXPECT_LE(test::relativeError(dk, want.dk), tol) << precision;
    EXPECT_LE(test::relativeError(dv, want.dv), tol) << precision;
  }
  // Each sequence alone: its tokens first in a row of S, the rest padding.
  AttentionShape packed;
  packed.batch = B, packed.heads = H, packed.seq = S, packed.headDim = D;
  packed.scale = 1.0f / std::sqrt(float(D)), packed.sequenceIds = ids.data();
  std::vector<float> out(n), lse(static_cast<size_t>(B * H * S)), dq(n), dk(n),
      dv(n);
  cpu::attention(q.data(), k.data(), v.data(), mask.data(), out.data(),
                 lse.data(), packed);
  cpu::attentionGrad(q.data(), k.data(), v.data(), mask.data(), out.data(),
                     lse.data(), dout.data(), dq.data(), dk.data(), dv.data(),
                     packed);
  int checked = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int32_t id = 1; id <= 3; ++id) {
      std::vector<int64_t> tokens;
      for (int64_t j = 0; j < S; ++j)
        if (ids[b * S + j] == id)
          tokens.push_back(j);
      const int64_t L = static_cast<int64_t>(tokens.size());
      AttentionShape alone = packed;
      alone.batch = 1, alone.sequenceIds = nullptr;
      size_t m = static_cast<size_t>(H * S * D);
      std::vector<float> q1(m), k1(m), v1(m), d1(m), mask1(S, -10000.0f);
      for (int64_t t = 0; t < L; ++t)
        mask1[t] = 0.0f;
      auto at = [&](int64_t bb, int64_t h, int64_t s) {
        return ((bb * H + h) * S + s) * D;
      };
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < L; ++t)
          for (int64_t c = 0; c < D; ++c) {
            q1[at(0, h, t) + c] = q[at(b, h, tokens[t]) + c];
            k1[at(0, h, t) + c] = k[at(b, h, tokens[t]) + c];
            v1[at(0, h, t) + c] = v[at(b, h, tokens[t]) + c];
            d1[at(0, h, t) + c] = dout[at(b, h, tokens[t]) + c];
          }
      std::vector<float> o1(m), l1(static_cast<size_t>(H * S)), dq1(m), dk1(m),
          dv1(m);
      cpu::attention(q1.data(), k1.data(), v1.data(), mask1.data(), o1.data(),
                     l1.data(), alone);
      cpu::attentionGrad(q1.data(), k1.data(), v1.data(), mask1.data(),
                         o1.data(), l1.data(), d1.data(), dq1.data(),
                         dk1.data(), dv1.data(), alone);
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < L; ++t) {
          EXPECT_NEAR(lse[(b * H + h) * S + tokens[t]], l1[h * S + t],
                      1e-5 * std::abs(l1[h * S + t]) + 1e-6);
          for (int64_t c = 0; c < D; ++c) {
            const std::vector<float> *got[4] = {&out, &dq, &dk, &dv};
            const std::vector<float> *want[4] = {&o1, &dq1, &dk1, &dv1};
            for (int g = 0; g < 4; ++g) {
              float x = (*got[g])[at(b, h, tokens[t]) + c],
                    y = (*want[g])[at(0, h, t) + c];
              ASSERT_NEAR(x, y, 1e-5f * (1.0f + std::abs(y)))
                  << "tensor " << g << ", sample " << b << ", sequence " << id
                  << ", token " << t;
              ++checked;
            }
          }
        }
    }
  EXPECT_GT(checked, 0);
}

// AttentionShape::rangesMeet, which lets the CUDA kernels skip the tiles of
// packed rows where no query shares a sequence with any key: sequences 1,
// 2, 3 then padding. Ranges meet when they share a sequence, or both hold
// padding (padding queries attend to padding keys); unpacked rows always.
TEST(CpuAttention, RangesMeetWhereTheyShareASequence) {
  std::vector<int32_t> ids = {1, 1, 1, 2, 2, 3, 3, 0, 0};
  AttentionShape a;
  a.batch = 1, a.seq = static_cast<int64_t>(ids.size());
  EXPECT_TRUE(a.rangesMeet(0, 0, 2, 7, 2)); // unpacked: always
  a.sequenceIds = ids.data();
  EXPECT_TRUE(a.rangesMeet(0, 0, 3, 2, 2));  // both hold sequence 1
  EXPECT_FALSE(a.rangesMeet(0, 0, 3, 3, 2)); // 1 against 2
  EXPECT_FALSE(a.rangesMeet(0, 2, 2, 5, 2)); // 1, 2 against 3
  EXPECT_TRUE(a.rangesMeet(0, 1, 4, 4, 3));  // 1..2 against 2..3
  EXPECT_FALSE(a.rangesMeet(0, 0, 4, 7, 2)); // sequences against padding
  EXPECT_TRUE(a.rangesMeet(0, 6, 2, 8, 4));  // padding against padding,
                                             // clipped to the row
  EXPECT_FALSE(a.rangesMeet(0, 5, 2, 9, 4)); // a range past the row
  // Every pair of single tokens: exactly sameSequence.
  for (int64_t i = 0; i < a.seq; ++i)
    for (int64_t j = 0; j < a.seq; ++j)
      EXPECT_EQ(a.rangesMeet(0, i, 1, j, 1), a.sameSequence(0, i, j))
          << i << ", " << j;
}

// Tensor parallelism: a rank holding heads [t H/T, (t+1) H/T) of every
// sample, its dropout keys offset by keyOffset = t (H/T) S S, computes
// exactly those heads of the whole attention, forward and backward (T = 2,
// at a sequence length whose S S is a multiple of 4 and one whose is not:
// the parts then start mid Philox block). Tolerance: relative 1e-6 (the
// same sums per row; only the GEMMs' blocking may differ).
TEST(CpuAttention, ATensorRanksHeadsEqualThoseOfTheWhole) {
  std::mt19937 rng(13);
  for (int64_t S : {20, 13}) {
    const int64_t B = 2, H = 4, D = 16, T = 2, Hp = H / T;
    AttentionShape whole;
    whole.batch = B, whole.heads = H, whole.seq = S, whole.headDim = D;
    whole.seed = 42, whole.purpose = 7, whole.layer = 3;
    whole.sampleOffset = 11, whole.p = 0.2f;
    whole.scale = 1.0f / std::sqrt(float(D));
    size_t n = static_cast<size_t>(B * H * S * D);
    auto q = randomFloats(n, rng), k = randomFloats(n, rng),
         v = randomFloats(n, rng), dout = randomFloats(n, rng);
    auto mask = test::paddingMask(B, S, 3);
    std::vector<float> out(n), lse(static_cast<size_t>(B * H * S)), dq(n),
        dk(n), dv(n);
    cpu::attention(q.data(), k.data(), v.data(), mask.data(), out.data(),
                   lse.data(), whole);
    cpu::attentionGrad(q.data(), k.data(), v.data(), mask.data(), out.data(),
                       lse.data(), dout.data(), dq.data(), dk.data(), dv.data(),
                       whole);
    for (int64_t t = 0; t < T; ++t) {
      // Heads [t Hp, (t+1) Hp) of each sample, [B, Hp, S, D] (lse [B, Hp, S]).
      auto heads = [&](const std::vector<float> &x, int64_t inner) {
        std::vector<float> part;
        for (int64_t b = 0; b < B; ++b)
          part.insert(part.end(), x.begin() + (b * H + t * Hp) * inner,
                      x.begin() + (b * H + (t + 1) * Hp) * inner);
        return part;
      };
      AttentionShape a = whole;
      a.heads = Hp;
      a.keyOffset = static_cast<uint64_t>(t * Hp * S * S);
      auto qt = heads(q, S * D), kt = heads(k, S * D), vt = heads(v, S * D),
           dt = heads(dout, S * D);
      size_t m = qt.size();
      std::vector<float> o(m), l(static_cast<size_t>(B * Hp * S)), gq(m), gk(m),
          gv(m);
      cpu::attention(qt.data(), kt.data(), vt.data(), mask.data(), o.data(),
                     l.data(), a);
      cpu::attentionGrad(qt.data(), kt.data(), vt.data(), mask.data(), o.data(),
                         l.data(), dt.data(), gq.data(), gk.data(), gv.data(),
                         a);
      std::string what =
          "seq " + std::to_string(S) + ", rank " + std::to_string(t);
      auto wanted = [&](const std::vector<float> &x, int64_t inner) {
        std::vector<float> part = heads(x, inner);
        return std::vector<double>(part.begin(), part.end());
      };
      EXPECT_LE(test::relativeError(o, wanted(out, S * D)), 1e-6) << what;
      EXPECT_LE(test::relativeError(l, wanted(lse, S)), 1e-6) << what;
      EXPECT_LE(test::relativeError(gq, wanted(dq, S * D)), 1e-6) << what;
      EXPECT_LE(test::relativeError(gk, wanted(dk, S * D)), 1e-6) << what;
      EXPECT_LE(test::relativeError(gv, wanted(dv, S * D)), 1e-6) << what;
    }
  }
}
