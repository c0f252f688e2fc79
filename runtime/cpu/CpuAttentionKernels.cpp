// The CPU backend's fused attention (the `attention` and `attention_grad`
// kernels, runtime/executable/Kernels.def): softmax(scale q kᵀ + mask) v with
// the probabilities' dropout, one (sample, head) per work item, one query row
// at a time. A row's scores (seq floats) are the only intermediate: the
// [seq, seq] probabilities never exist in memory, as in the CUDA kernel.
// The backward recomputes each row's probabilities from the forward's row
// logsumexp and regenerates the dropout mask from its key, and uses
// D_i = dout_i . out_i for the softmax's row sum (FlashAttention-2).
//
// precision 1 (bf16) rounds every product's inputs to bf16 first, as the
// unfused path's bf16 GEMMs do; the products accumulate in fp32.
#include "runtime/cpu/CpuKernels.h"

#include "runtime/cpu/CpuKernelCommon.h"
#include "runtime/random/Philox.h"

namespace ferry::cpu {
namespace {

float dot(const float *a, const float *b, int64_t n) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

// y += a * x.
void axpy(float a, const float *x, float *y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    y[i] += a * x[i];
}

float roundedBf16(float x) {
  float out;
  roundToBf16(&x, &out, 1);
  return out;
}

// One (sample, head) slice [seq, dim] of q, k, v (or dout), rounded to bf16
// when `bf16`, else the slice itself.
const float *operand(const float *x, float *copy, int64_t n, bool bf16) {
  if (!bf16)
    return x;
  roundToBf16(x, copy, n);
  return copy;
}

} // namespace

void attention(const float *q, const float *k, const float *v,
               const float *mask, float *out, float *lse,
               const AttentionShape &a) {
  const int64_t S = a.seq, D = a.headDim, slice = S * D;
  const bool bf16 = a.precision == 1;
#pragma omp parallel for schedule(static) if (worth(a.batch * a.heads * slice * S))
  for (int64_t bh = 0; bh < a.batch * a.heads; ++bh) {
    const int64_t b = bh / a.heads, h = bh % a.heads;
    float *buffers = scratch<float>(static_cast<size_t>(3 * slice + 2 * S));
    const float *qs = operand(q + bh * slice, buffers, slice, bf16);
    const float *ks = operand(k + bh * slice, buffers + slice, slice, bf16);
    const float *vs = operand(v + bh * slice, buffers + 2 * slice, slice, bf16);
    float *scores = buffers + 3 * slice, *probs = scores + S;
    const float *m = mask + b * S;
    for (int64_t i = 0; i < S; ++i) {
      for (int64_t j = 0; j < S; ++j)
        scores[j] = a.scale * dot(qs + i * D, ks + j * D, D) + m[j];
      const float high = rowMax(scores, S);
      float sum = 0.0f;
      for (int64_t j = 0; j < S; ++j) {
        probs[j] = expApprox(scores[j] - high);
        sum += probs[j];
      }
      const float inv = 1.0f / sum;
      lse[bh * S + i] = high + std::log(sum);
      float *o = out + bh * slice + i * D;
      std::fill(o, o + D, 0.0f);
      const uint64_t sample = a.sampleOffset + static_cast<uint64_t>(b);
      for (int64_t j = 0; j < S; ++j) {
        float p = probs[j] * inv;
        if (a.p != 0.0f)
          p = random::dropoutKeeps(a.seed, a.purpose, a.layer, sample,
                                   static_cast<uint64_t>((h * S + i) * S + j),
                                   a.p)
                  ? p / (1.0f - a.p)
                  : 0.0f;
        if (p != 0.0f)
          axpy(bf16 ? roundedBf16(p) : p, vs + j * D, o, D);
      }
    }
  }
}

void attentionGrad(const float *q, const float *k, const float *v,
                   const float *mask, const float *out, const float *lse,
                   const float *dout, float *dq, float *dk, float *dv,
                   const AttentionShape &a) {
  const int64_t S = a.seq, D = a.headDim, slice = S * D;
  const bool bf16 = a.precision == 1;
#pragma omp parallel for schedule(static) if (worth(a.batch * a.heads * slice * S))
  for (int64_t bh = 0; bh < a.batch * a.heads; ++bh) {
    const int64_t b = bh / a.heads, h = bh % a.heads;
    float *buffers = scratch<float>(static_cast<size_t>(4 * slice + S));
    const float *qs = operand(q + bh * slice, buffers, slice, bf16);
    const float *ks = operand(k + bh * slice, buffers + slice, slice, bf16);
    const float *vs = operand(v + bh * slice, buffers + 2 * slice, slice, bf16);
    const float *dos =
        operand(dout + bh * slice, buffers + 3 * slice, slice, bf16);
    float *ds = buffers + 4 * slice;
    float *dqs = dq + bh * slice, *dks = dk + bh * slice, *dvs = dv + bh * slice;
    std::fill(dks, dks + slice, 0.0f);
    std::fill(dvs, dvs + slice, 0.0f);
    const float *m = mask + b * S;
    const uint64_t sample = a.sampleOffset + static_cast<uint64_t>(b);
    const float keepScale = a.p != 0.0f ? 1.0f / (1.0f - a.p) : 1.0f;
    for (int64_t i = 0; i < S; ++i) {
      // D_i = dout_i . out_i, the unrounded values (the softmax's row sum).
      const float rowDot =
          dot(dout + bh * slice + i * D, out + bh * slice + i * D, D);
      const float *qi = qs + i * D, *doi = dos + i * D;
      for (int64_t j = 0; j < S; ++j) {
        const float p =
            expApprox(a.scale * dot(qi, ks + j * D, D) + m[j] - lse[bh * S + i]);
        const bool keep =
            a.p == 0.0f ||
            random::dropoutKeeps(a.seed, a.purpose, a.layer, sample,
                                 static_cast<uint64_t>((h * S + i) * S + j),
                                 a.p);
        const float kept = keep ? keepScale : 0.0f;
        // dv_j += dropout(p) dout_i; ds = p (dropout(dout_i . v_j) - D_i).
        const float pd = p * kept;
        if (pd != 0.0f)
          axpy(bf16 ? roundedBf16(pd) : pd, doi, dvs + j * D, D);
        ds[j] = a.scale * p * (dot(doi, vs + j * D, D) * kept - rowDot);
        if (bf16)
          ds[j] = roundedBf16(ds[j]);
      }
      float *dqi = dqs + i * D;
      std::fill(dqi, dqi + D, 0.0f);
      for (int64_t j = 0; j < S; ++j) {
        axpy(ds[j], ks + j * D, dqi, D);
        axpy(ds[j], qi, dks + j * D, D);
      }
    }
  }
}

} // namespace ferry::cpu
