// GPU tests (ctest label `gpu`, and `cuda-sim` under the simulator): the
// fused attention kernels against the double-precision reference
// (AttentionReference.h) and against the CPU backend's fused kernels, at
// seq 64, 128 and 512, head sizes 16, 40 (padded to 48 inside) and 64,
// padding masks, dropout 0 and 0.1; fp32 (CUDA cores) and bf16 (WMMA: under
// the simulator with its scattered fragment layout, the same source).
// Tolerances, relative L2 per tensor: fp32 1e-5 against the reference and
// the CPU (seen: 2e-7 to 7e-7); bf16 1e-2 against the reference (seen:
// 3e-3 to 4e-3) and 5e-3 against the CPU's bf16 emulation (both round the
// same inputs, not the same intermediate probabilities; seen up to 2.3e-3).
// Two calls give the same bits (no atomics).
#include "AttentionReference.h"
#include "CudaKernelsTestUtil.h"

#include <cstring>

namespace {

class CudaAttention : public CudaKernels {};

} // namespace

TEST_F(CudaAttention, EqualsTheReferenceAndTheCpu) {
  for (test::AttentionCase c : {test::AttentionCase{2, 2, 64, 16, 5, 0.0f},
                                test::AttentionCase{1, 3, 100, 40, 7, 0.1f},
                                test::AttentionCase{2, 1, 128, 64, 30, 0.1f},
                                test::AttentionCase{1, 1, 512, 64, 100, 0.1f}})
    for (int precision : {0, 1}) {
      AttentionShape a;
      a.batch = c.batch, a.heads = c.heads, a.seq = c.seq, a.headDim = c.dim;
      a.seed = 42, a.purpose = 7, a.layer = 3, a.sampleOffset = 11, a.p = c.p;
      a.scale = 1.0f / std::sqrt(float(c.dim)), a.precision = precision;
      size_t n = static_cast<size_t>(c.batch * c.heads * c.seq * c.dim);
      size_t rows = static_cast<size_t>(c.batch * c.heads * c.seq);
      auto q = random(n, -1.5f, 1.5f), k = random(n, -1.5f, 1.5f),
           v = random(n, -1.5f, 1.5f), dout = random(n, -1.5f, 1.5f);
      auto mask = test::paddingMask(c.batch, c.seq, c.padded);
      test::AttentionReference want =
          test::attentionReference(q, k, v, mask, dout, a);
      std::vector<float> out(n), lse(rows), dq(n), dk(n), dv(n);
      cpu::attention(q.data(), k.data(), v.data(), mask.data(), out.data(),
                     lse.data(), a);
      cpu::attentionGrad(q.data(), k.data(), v.data(), mask.data(), out.data(),
                         lse.data(), dout.data(), dq.data(), dk.data(),
                         dv.data(), a);
      const float *dQ = device(q), *dK = device(k), *dV = device(v),
                  *dMask = device(mask), *dDout = device(dout);
      std::vector<float> runs[2][5];
      for (int run = 0; run < 2; ++run) {
        float *gOut = device(std::vector<float>(n)),
              *gLse = device(std::vector<float>(rows)),
              *gDq = device(std::vector<float>(n)),
              *gDk = device(std::vector<float>(n)),
              *gDv = device(std::vector<float>(n)),
              *work = device(std::vector<float>(rows));
        cuda::attention(stream, dQ, dK, dV, dMask, gOut, gLse, a);
        cuda::attentionGrad(stream, dQ, dK, dV, dMask, gOut, gLse, dDout, gDq,
                            gDk, gDv, work, a);
        runs[run][0] = host(gOut, n), runs[run][1] = host(gLse, rows);
        runs[run][2] = host(gDq, n), runs[run][3] = host(gDk, n);
        runs[run][4] = host(gDv, n);
      }
      std::string what = "seq " + std::to_string(c.seq) + ", dim " +
                         std::to_string(c.dim) + ", p " + std::to_string(c.p) +
                         (precision ? ", bf16" : ", fp32");
      const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
      const std::vector<double> *reference[5] = {&want.out, &want.lse, &want.dq,
                                                 &want.dk, &want.dv};
      const std::vector<float> *cpuResult[5] = {&out, &lse, &dq, &dk, &dv};
      for (int t = 0; t < 5; ++t) {
        const std::vector<float> &got = runs[0][t];
        double tolRef = precision ? 1e-2 : 1e-5,
               tolCpu = precision ? 5e-3 : 1e-5;
        if (t == 1)
          tolRef = tolCpu = precision ? 1e-2 : 1e-6;
        EXPECT_LE(test::relativeError(got, *reference[t]), tolRef)
            << names[t] << " against the reference, " << what;
        std::vector<double> cpuAsDouble(cpuResult[t]->begin(),
                                        cpuResult[t]->end());
        EXPECT_LE(test::relativeError(got, cpuAsDouble), tolCpu)
            << names[t] << " against the CPU, " << what;
        EXPECT_EQ(std::memcmp(got.data(), runs[1][t].data(),
                              got.size() * sizeof(float)),
                  0)
            << names[t] << ": two calls differ, " << what;
      }
    }
}

// A tensor-parallel rank's heads (AttentionShape::keyOffset: where its
// heads start in each sample's probabilities): the dropout keys offset as
// the CPU's, by a multiple of 4 (one Philox block for four keys) and not,
// fp32 against the CPU kernels within 1e-5.
TEST_F(CudaAttention, ATensorRanksHeadsEqualTheCpu) {
  for (uint64_t offset : {uint64_t{2 * 64 * 64}, uint64_t{6}}) {
    AttentionShape a;
    a.batch = 2, a.heads = 1, a.seq = 64, a.headDim = 16;
    a.seed = 42, a.purpose = 7, a.layer = 3, a.sampleOffset = 11, a.p = 0.1f;
    a.scale = 0.25f, a.keyOffset = offset;
    size_t n = 2 * 64 * 16, rows = 2 * 64;
    auto q = random(n, -1.5f, 1.5f), k = random(n, -1.5f, 1.5f),
         v = random(n, -1.5f, 1.5f), dout = random(n, -1.5f, 1.5f);
    auto mask = test::paddingMask(2, 64, 5);
    std::vector<float> out(n), lse(rows), dq(n), dk(n), dv(n);
    cpu::attention(q.data(), k.data(), v.data(), mask.data(), out.data(),
                   lse.data(), a);
    cpu::attentionGrad(q.data(), k.data(), v.data(), mask.data(), out.data(),
                       lse.data(), dout.data(), dq.data(), dk.data(), dv.data(),
                       a);
    float *gOut = device(std::vector<float>(n)),
          *gLse = device(std::vector<float>(rows)),
          *gDq = device(std::vector<float>(n)),
          *gDk = device(std::vector<float>(n)),
          *gDv = device(std::vector<float>(n)),
          *work = device(std::vector<float>(rows));
    const float *dQ = device(q), *dK = device(k), *dV = device(v),
                *dMask = device(mask);
    cuda::attention(stream, dQ, dK, dV, dMask, gOut, gLse, a);
    cuda::attentionGrad(stream, dQ, dK, dV, dMask, gOut, gLse, device(dout),
                        gDq, gDk, gDv, work, a);
    std::string what = "key offset " + std::to_string(offset);
    expectClose(host(gOut, n), out, 1e-5, ("out, " + what).c_str());
    expectClose(host(gDq, n), dq, 1e-5, ("dq, " + what).c_str());
    expectClose(host(gDk, n), dk, 1e-5, ("dk, " + what).c_str());
    expectClose(host(gDv, n), dv, 1e-5, ("dv, " + what).c_str());
  }
}

// Packed rows (sequence_ids): three sequences and padding a row; the CUDA
// kernels against the double reference with the same ids and against the
// CPU kernels (which PackedRowsEqualEachSequenceAlone checks against each
// sequence alone), forward and backward, with dropout, fp32 and bf16
// products, at a length that is not a multiple of the tiles and one that
// is. Padding tokens' rows (sequence 0: only padding keys, all at -10000)
// are left out, as nothing uses them.
TEST_F(CudaAttention, PackedRowsEqualTheReferenceAndTheCpu) {
  for (test::AttentionCase c : {test::AttentionCase{2, 2, 50, 24, 5, 0.1f},
                                test::AttentionCase{1, 2, 128, 64, 9, 0.1f}})
    for (int precision : {0, 1}) {
      AttentionShape a;
      a.batch = c.batch, a.heads = c.heads, a.seq = c.seq, a.headDim = c.dim;
      a.seed = 42, a.purpose = 7, a.layer = 3, a.sampleOffset = 11, a.p = c.p;
      a.scale = 1.0f / std::sqrt(float(c.dim)), a.precision = precision;
      std::vector<int32_t> ids =
          test::packedSequenceIds(c.batch, c.seq, c.padded);
      size_t n = static_cast<size_t>(c.batch * c.heads * c.seq * c.dim);
      size_t rows = static_cast<size_t>(c.batch * c.heads * c.seq);
      auto q = random(n, -1.5f, 1.5f), k = random(n, -1.5f, 1.5f),
           v = random(n, -1.5f, 1.5f), dout = random(n, -1.5f, 1.5f);
      auto mask = test::paddingMask(c.batch, c.seq, c.padded);
      AttentionShape onHost = a;
      onHost.sequenceIds = ids.data();
      test::AttentionReference want =
          test::attentionReference(q, k, v, mask, dout, onHost);
      std::vector<float> out(n), lse(rows), dq(n), dk(n), dv(n);
      cpu::attention(q.data(), k.data(), v.data(), mask.data(), out.data(),
                     lse.data(), onHost);
      cpu::attentionGrad(q.data(), k.data(), v.data(), mask.data(), out.data(),
                         lse.data(), dout.data(), dq.data(), dk.data(),
                         dv.data(), onHost);
      AttentionShape onDevice = a;
      onDevice.sequenceIds = device(ids);
      float *gOut = device(std::vector<float>(n)),
            *gLse = device(std::vector<float>(rows)),
            *gDq = device(std::vector<float>(n)),
            *gDk = device(std::vector<float>(n)),
            *gDv = device(std::vector<float>(n)),
            *work = device(std::vector<float>(rows));
      const float *dQ = device(q), *dK = device(k), *dV = device(v),
                  *dMask = device(mask), *dDout = device(dout);
      cuda::attention(stream, dQ, dK, dV, dMask, gOut, gLse, onDevice);
      cuda::attentionGrad(stream, dQ, dK, dV, dMask, gOut, gLse, dDout, gDq,
                          gDk, gDv, work, onDevice);
      std::vector<float> got[5] = {host(gOut, n), host(gLse, rows),
                                   host(gDq, n), host(gDk, n), host(gDv, n)};
      std::vector<double> *reference[5] = {&want.out, &want.lse, &want.dq,
                                           &want.dk, &want.dv};
      std::vector<float> *cpuResult[5] = {&out, &lse, &dq, &dk, &dv};
      const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
      std::string what =
          "seq " + std::to_string(c.seq) + (precision ? ", bf16" : ", fp32");
      for (int t = 0; t < 5; ++t) {
        int64_t width = t == 1 ? 1 : -1;
        std::vector<double> cpuAsDouble(cpuResult[t]->begin(),
                                        cpuResult[t]->end());
        std::vector<float> forCpu = got[t];
        test::dropPadding(ids, a, got[t], *reference[t], width);
        test::dropPadding(ids, a, forCpu, cpuAsDouble, width);
        double tolRef = precision ? 1e-2 : 1e-5,
               tolCpu = precision ? 5e-3 : 1e-5;
        if (t == 1)
          tolRef = tolCpu = precision ? 1e-2 : 1e-6;
        EXPECT_LE(test::relativeError(got[t], *reference[t]), tolRef)
            << names[t] << " against the reference, " << what;
        EXPECT_LE(test::relativeError(forCpu, cpuAsDouble), tolCpu)
            << names[t] << " against the CPU, " << what;
      }
    }
}

// Packed rows with their dropout keys (each sequence's sample key and the
// positions within it, DropoutKeys.h): the device's masks are the CPU's,
// forward and backward, and they are not the unkeyed masks.
TEST_F(CudaAttention, PackedDropoutKeysEqualTheCpu) {
  AttentionShape a;
  a.batch = 2, a.heads = 2, a.seq = 48, a.headDim = 16;
  a.seed = 42, a.purpose = 7, a.layer = 3, a.sampleOffset = 11, a.p = 0.2f;
  a.scale = 0.25f;
  std::vector<int32_t> ids = test::packedSequenceIds(a.batch, a.seq, 5);
  std::vector<int32_t> keys(static_cast<size_t>(2 * a.batch * a.seq), 0);
  for (int64_t b = 0; b < a.batch; ++b) {
    int64_t start = 0;
    for (int64_t t = 0; t < a.seq; ++t) {
      int32_t id = ids[b * a.seq + t];
      if (t > 0 && id != ids[b * a.seq + t - 1])
        start = t;
      keys[2 * (b * a.seq + t)] =
          id ? static_cast<int32_t>(100 + 3 * b + id) : 0;
      keys[2 * (b * a.seq + t) + 1] = id ? static_cast<int32_t>(t - start) : 0;
    }
  }
  size_t n = static_cast<size_t>(a.batch * a.heads * a.seq * a.headDim);
  size_t rows = static_cast<size_t>(a.batch * a.heads * a.seq);
  auto q = random(n, -1.5f, 1.5f), k = random(n, -1.5f, 1.5f),
       v = random(n, -1.5f, 1.5f), dout = random(n, -1.5f, 1.5f);
  auto mask = test::paddingMask(a.batch, a.seq, 5);
  auto onCpu = [&](bool keyed) {
    AttentionShape c = a;
    c.sequenceIds = ids.data();
    if (keyed)
      c.dropoutKeys = {keys.data(), a.seq, PackedDropoutKeys::Attention, 1};
    std::vector<float> out(n), lse(rows), dq(n), dk(n), dv(n);
    cpu::attention(q.data(), k.data(), v.data(), mask.data(), out.data(),
                   lse.data(), c);
    cpu::attentionGrad(q.data(), k.data(), v.data(), mask.data(), out.data(),
                       lse.data(), dout.data(), dq.data(), dk.data(), dv.data(),
                       c);
    return std::vector<std::vector<float>>{out, dq, dk, dv};
  };
  std::vector<std::vector<float>> want = onCpu(true), unkeyed = onCpu(false);
  AttentionShape g = a;
  g.sequenceIds = device(ids);
  g.dropoutKeys = {device(keys), a.seq, PackedDropoutKeys::Attention, 1};
  float *gOut = device(std::vector<float>(n)),
        *gLse = device(std::vector<float>(rows)),
        *gDq = device(std::vector<float>(n)),
        *gDk = device(std::vector<float>(n)),
        *gDv = device(std::vector<float>(n)),
        *work = device(std::vector<float>(rows));
  const float *dQ = device(q), *dK = device(k), *dV = device(v),
              *dMask = device(mask), *dDout = device(dout);
  cuda::attention(stream, dQ, dK, dV, dMask, gOut, gLse, g);
  cuda::attentionGrad(stream, dQ, dK, dV, dMask, gOut, gLse, dDout, gDq, gDk,
                      gDv, work, g);
  std::vector<float> got[4] = {host(gOut, n), host(gDq, n), host(gDk, n),
                               host(gDv, n)};
  const char *names[4] = {"out", "dq", "dk", "dv"};
  for (int t = 0; t < 4; ++t) {
    std::vector<double> reference(want[t].begin(), want[t].end());
    std::vector<float> mine = got[t];
    test::dropPadding(ids, a, mine, reference);
    // Tolerance: relative L2 1e-5 (fp32; the sums run in other orders).
    EXPECT_LE(test::relativeError(mine, reference), 1e-5) << names[t];
  }
  std::vector<double> other(unkeyed[0].begin(), unkeyed[0].end());
  std::vector<float> mine = got[0];
  test::dropPadding(ids, a, mine, other);
  EXPECT_GT(test::relativeError(mine, other), 1e-2)
      << "the keys changed no dropout decision";
}

// Keys masked with -inf at the start of the row (a whole first key tile of
// 32 and more): the running maximum stays -inf over them, and the result
// is the reference's, finite, not NaN.
TEST_F(CudaAttention, LeadingKeysMaskedWithMinusInfinity) {
  AttentionShape a;
  a.batch = 1, a.heads = 2, a.seq = 64, a.headDim = 16;
  a.seed = 7, a.purpose = 3, a.p = 0.1f, a.scale = 0.25f;
  size_t n = static_cast<size_t>(a.batch * a.heads * a.seq * a.headDim);
  auto q = random(n), k = random(n), v = random(n), dout = random(n);
  std::vector<float> mask(64, 0.0f);
  for (int j = 0; j < 40; ++j)
    mask[j] = -INFINITY;
  test::AttentionReference want =
      test::attentionReference(q, k, v, mask, dout, a);
  float *out = device(std::vector<float>(n)),
        *lse = device(std::vector<float>(128)),
        *dq = device(std::vector<float>(n)),
        *dk = device(std::vector<float>(n)),
        *dv = device(std::vector<float>(n)),
        *work = device(std::vector<float>(128));
  const float *dQ = device(q), *dK = device(k), *dV = device(v),
              *dM = device(mask);
  cuda::attention(stream, dQ, dK, dV, dM, out, lse, a);
  cuda::attentionGrad(stream, dQ, dK, dV, dM, out, lse, device(dout), dq, dk,
                      dv, work, a);
  EXPECT_LE(test::relativeError(host(out, n), want.out), 1e-5);
  EXPECT_LE(test::relativeError(host(dq, n), want.dq), 1e-5);
  EXPECT_LE(test::relativeError(host(dk, n), want.dk), 1e-5);
  EXPECT_LE(test::relativeError(host(dv, n), want.dv), 1e-5);
}

// Sequence-major q, k, v and results ([batch, seq, heads, dim], what the
// fusion makes of the head split and merge): the same values as head-major
// on both backends, fp32 and bf16, a partial last tile and head_dim 40.
TEST_F(CudaAttention, SequenceMajorEqualsHeadMajor) {
  for (int precision : {0, 1}) {
    AttentionShape a;
    a.batch = 2, a.heads = 3, a.seq = 50, a.headDim = 40;
    a.seed = 5, a.purpose = 9, a.layer = 1, a.sampleOffset = 4, a.p = 0.1f;
    a.scale = 0.15f, a.precision = precision;
    size_t n = static_cast<size_t>(a.batch * a.heads * a.seq * a.headDim);
    size_t rows = static_cast<size_t>(a.batch * a.heads * a.seq);
    auto q = random(n), k = random(n), v = random(n), dout = random(n);
    auto mask = test::paddingMask(a.batch, a.seq, 6);
    test::AttentionReference want =
        test::attentionReference(q, k, v, mask, dout, a);
    AttentionShape sm = a;
    sm.sequenceMajor = true;
    auto toSm = [&](const std::vector<float> &x) {
      return test::swapHeads(x, a, true);
    };
    // The CPU kernel, sequence-major.
    std::vector<float> cOut(n), cLse(rows), cDq(n), cDk(n), cDv(n);
    auto sq = toSm(q), sk = toSm(k), sv = toSm(v), sdo = toSm(dout);
    cpu::attention(sq.data(), sk.data(), sv.data(), mask.data(), cOut.data(),
                   cLse.data(), sm);
    cpu::attentionGrad(sq.data(), sk.data(), sv.data(), mask.data(),
                       cOut.data(), cLse.data(), sdo.data(), cDq.data(),
                       cDk.data(), cDv.data(), sm);
    // The CUDA kernels, sequence-major.
    float *out = device(std::vector<float>(n)),
          *lse = device(std::vector<float>(rows)),
          *dq = device(std::vector<float>(n)),
          *dk = device(std::vector<float>(n)),
          *dv = device(std::vector<float>(n)),
          *work = device(std::vector<float>(rows));
    const float *dQ = device(sq), *dK = device(sk), *dV = device(sv),
                *dM = device(mask);
    cuda::attention(stream, dQ, dK, dV, dM, out, lse, sm);
    cuda::attentionGrad(stream, dQ, dK, dV, dM, out, lse, device(sdo), dq, dk,
                        dv, work, sm);
    double tol = precision ? 1e-2 : 1e-5;
    std::string what = precision ? "bf16" : "fp32";
    auto back = [&](const std::vector<float> &x) {
      return test::swapHeads(x, a, false);
    };
    EXPECT_LE(test::relativeError(back(cOut), want.out), tol) << what;
    EXPECT_LE(test::relativeError(back(cDq), want.dq), tol) << what;
    EXPECT_LE(test::relativeError(back(cDk), want.dk), tol) << what;
    EXPECT_LE(test::relativeError(back(cDv), want.dv), tol) << what;
    EXPECT_LE(test::relativeError(back(host(out, n)), want.out), tol) << what;
    EXPECT_LE(test::relativeError(host(lse, rows), want.lse),
              precision ? 1e-2 : 1e-6)
        << what;
    EXPECT_LE(test::relativeError(back(host(dq, n)), want.dq), tol) << what;
    EXPECT_LE(test::relativeError(back(host(dk, n)), want.dk), tol) << what;
    EXPECT_LE(test::relativeError(back(host(dv, n)), want.dv), tol) << what;
  }
}
