// The CPU backend's fused attention (the `attention` and `attention_grad`
// kernels, dialects/rt/kernels/*.td): softmax(scale q kᵀ + mask) v with
// the probabilities' dropout, in blocks of kBlockRows query rows of every
// (sample, head) at once: the block's scores come from one batched GEMM
// (OpenBLAS), the row softmax and dropout run in place, and a second GEMM
// adds the block's output. Only one block of probabilities, [batch * heads,
// kBlockRows, seq], exists at a time (per-thread scratch, not the arena);
// the [seq, seq] probabilities are never stored, as in the CUDA kernels.
// The backward recomputes each block's probabilities from the forward's row
// logsumexp, regenerates the dropout mask from its key, and uses
// D_i = dout_i . out_i for the softmax's row sum (FlashAttention-2).
//
// precision 1 (bf16) rounds every product's inputs to bf16 first, as the
// unfused path's bf16 GEMMs do; the products accumulate in fp32.
// Sequence-major tensors ([batch, seq, heads, dim]) are transposed to
// [batch, heads, seq, dim] copies and back: the CPU's GEMMs want each
// head's rows contiguous, and the transposes cost what the graph's head
// split and merge did.
#include "runtime/backend/Collectives.h"
#include "runtime/cpu/CpuKernelContext.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/executable/KernelParams.h"

#include "runtime/cpu/CpuKernelCommon.h"
#include "runtime/random/Philox.h"

namespace ferry::cpu {
namespace {

constexpr int64_t kBlockRows = 64;

// The tensor itself, or (bf16) its rounded copy in `copy`.
const float *operand(const float *x, std::vector<float> &copy, int64_t n,
                     bool bf16) {
  if (!bf16)
    return x;
  copy.resize(static_cast<size_t>(n));
  roundToBf16(x, copy.data(), n);
  return copy.data();
}

// graph.dropout's factors for row i of head bh of the probabilities:
// factor[j] = 1 / (1 - p) where element (h * seq + i) * seq + j of the
// sample is kept, else 0 (all 1 without dropout). Philox blocks of four
// words, as cpu::dropout draws them.
void rowKeepFactors(const AttentionShape &a, int64_t bh, int64_t i,
                    float *factor) {
  const int64_t S = a.seq;
  if (a.p == 0.0f) {
    std::fill(factor, factor + S, 1.0f);
    return;
  }
  const int64_t b = bh / a.heads, h = bh % a.heads;
  if (a.dropoutKeys.packed()) { // packed rows: each element's own key
    const float kept = 1.0f / (1.0f - a.p);
    for (int64_t j = 0; j < S; ++j) {
      uint64_t sample = 0, element = 0;
      a.dropoutKeys.map(b, (h * S + i) * S + j, sample, element);
      factor[j] = random::dropoutKeeps(a.seed, a.purpose, a.layer, sample,
                                       a.keyOffset + element, a.p)
                      ? kept
                      : 0.0f;
    }
    return;
  }
  const uint64_t e0 = a.keyOffset + static_cast<uint64_t>((h * S + i) * S);
  const uint64_t first = e0 / 4;
  const int64_t skip = static_cast<int64_t>(e0 - 4 * first);
  const int64_t blocks = (skip + S + 3) / 4;
  uint32_t *words = scratch<uint32_t>(static_cast<size_t>(4 * blocks));
  philoxBlocks(
      static_cast<uint32_t>(a.seed),
      static_cast<uint32_t>(a.seed >> 32) ^ a.purpose, first,
      static_cast<uint32_t>(static_cast<uint64_t>(a.sampleOffset.value()) +
                            static_cast<uint64_t>(b)),
      a.layer, blocks, words);
  const float p = a.p, kept = 1.0f / (1.0f - a.p);
#pragma omp simd
  for (int64_t j = 0; j < S; ++j) {
    // random::uniform: (bits >> 8) * 2^-24, kept when >= p.
    const float u =
        static_cast<float>(static_cast<int32_t>(words[skip + j] >> 8)) *
        (1.0f / 16777216.0f);
    factor[j] = u >= p ? kept : 0.0f;
  }
}

// The block's raw scores scale q kᵀ: [heads, rows, seq] at `scores`.
void blockScores(const float *q, const float *k, float *scores, int64_t r0,
                 int64_t rows, const AttentionShape &a) {
  const int64_t S = a.seq, D = a.headDim;
  gemm(a.batch * a.heads, rows, S, D, false, true, a.scale, q + r0 * D, S * D,
       k, S * D, 0.0f, scores, rows * S);
}

} // namespace

namespace {

// [batch, seq, heads, dim] <-> [batch, heads, seq, dim] (the [0, 2, 1, 3]
// transpose is its own inverse).
void swapHeads(const float *x, float *out, const AttentionShape &a,
               bool toSequenceMajor) {
  int64_t dims[4] = {a.batch, toSequenceMajor ? a.heads : a.seq,
                     toSequenceMajor ? a.seq : a.heads, a.headDim};
  int64_t perm[4] = {0, 2, 1, 3};
  transpose(x, out, 4, dims, perm);
}

} // namespace

void attention(const float *q, const float *k, const float *v,
               const float *mask, float *out, float *lse,
               const AttentionShape &a) {
  if (a.sequenceMajor) {
    const size_t n = static_cast<size_t>(a.batch * a.heads * a.seq * a.headDim);
    thread_local std::vector<float> t;
    t.resize(4 * n);
    swapHeads(q, t.data(), a, false);
    swapHeads(k, t.data() + n, a, false);
    swapHeads(v, t.data() + 2 * n, a, false);
    AttentionShape b = a;
    b.sequenceMajor = false;
    attention(t.data(), t.data() + n, t.data() + 2 * n, mask, t.data() + 3 * n,
              lse, b);
    swapHeads(t.data() + 3 * n, out, a, true);
    return;
  }
  const int64_t S = a.seq, D = a.headDim, BH = a.batch * a.heads;
  const bool bf16 = a.precision == 1;
  thread_local std::vector<float> qc, kc, vc, block;
  const int64_t n = BH * S * D;
  const float *qs = operand(q, qc, n, bf16), *ks = operand(k, kc, n, bf16),
              *vs = operand(v, vc, n, bf16);
  block.resize(static_cast<size_t>(BH * std::min(S, kBlockRows) * S));
  for (int64_t r0 = 0; r0 < S; r0 += kBlockRows) {
    const int64_t rows = std::min(kBlockRows, S - r0);
    float *scores = block.data();
    blockScores(qs, ks, scores, r0, rows, a);
    // Each row: + mask, softmax (its logsumexp kept), dropout, rounding.
#pragma omp parallel for schedule(static) if (worth(BH * rows * S))
    for (int64_t t = 0; t < BH * rows; ++t) {
      const int64_t bh = t / rows, i = r0 + t % rows;
      float *row = scores + t * S;
      const float *m = mask + (bh / a.heads) * S;
      float high = -std::numeric_limits<float>::infinity();
      if (a.sequenceIds) { // packed rows: other sequences' keys are out
        for (int64_t j = 0; j < S; ++j)
          row[j] = a.sameSequence(bh / a.heads, i, j)
                       ? row[j] + m[j]
                       : -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : high)
        for (int64_t j = 0; j < S; ++j)
          high = std::max(high, row[j]);
      } else {
#pragma omp simd reduction(max : high)
        for (int64_t j = 0; j < S; ++j) {
          row[j] += m[j];
          high = std::max(high, row[j]);
        }
      }
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = 0; j < S; ++j) {
        row[j] = expApprox(row[j] - high);
        sum += row[j];
      }
      lse[bh * S + i] = high + std::log(sum);
      float *factor = scratch<float>(static_cast<size_t>(S));
      rowKeepFactors(a, bh, i, factor);
      const float inv = 1.0f / sum;
#pragma omp simd
      for (int64_t j = 0; j < S; ++j)
        row[j] *= inv * factor[j];
      if (bf16)
        roundToBf16(row, row, S);
    }
    gemm(BH, rows, D, S, false, false, 1.0f, scores, rows * S, vs, S * D, 0.0f,
         out + r0 * D, S * D);
  }
}

void attentionGrad(const float *q, const float *k, const float *v,
                   const float *mask, const float *out, const float *lse,
                   const float *dout, float *dq, float *dk, float *dv,
                   const AttentionShape &a) {
  if (a.sequenceMajor) {
    const size_t n = static_cast<size_t>(a.batch * a.heads * a.seq * a.headDim);
    thread_local std::vector<float> t;
    t.resize(8 * n);
    const float *in[5] = {q, k, v, out, dout};
    for (int i = 0; i < 5; ++i)
      swapHeads(in[i], t.data() + i * n, a, false);
    AttentionShape b = a;
    b.sequenceMajor = false;
    attentionGrad(t.data(), t.data() + n, t.data() + 2 * n, mask,
                  t.data() + 3 * n, lse, t.data() + 4 * n, t.data() + 5 * n,
                  t.data() + 6 * n, t.data() + 7 * n, b);
    float *grads[3] = {dq, dk, dv};
    for (int i = 0; i < 3; ++i)
      swapHeads(t.data() + (5 + i) * n, grads[i], a, true);
    return;
  }
  const int64_t S = a.seq, D = a.headDim, BH = a.batch * a.heads;
  const bool bf16 = a.precision == 1;
  thread_local std::vector<float> qc, kc, vc, dc, probs, dscores, rowDots;
  const int64_t n = BH * S * D;
  const float *qs = operand(q, qc, n, bf16), *ks = operand(k, kc, n, bf16),
              *vs = operand(v, vc, n, bf16), *dos = operand(dout, dc, n, bf16);
  // The scratch is this thread's: the OpenMP workers use raw pointers (a
  // thread_local named inside the parallel loops would be each worker's).
  // D_i = dout_i . out_i, from the unrounded values.
  rowDots.resize(static_cast<size_t>(BH * S));
  float *dots = rowDots.data();
#pragma omp parallel for schedule(static) if (worth(n))
  for (int64_t i = 0; i < BH * S; ++i) {
    float s = 0.0f;
    for (int64_t c = 0; c < D; ++c)
      s += dout[i * D + c] * out[i * D + c];
    dots[i] = s;
  }
  const size_t blockSize =
      static_cast<size_t>(BH * std::min(S, kBlockRows) * S);
  probs.resize(blockSize);
  dscores.resize(blockSize);
  float *probsBlock = probs.data(), *dscoresBlock = dscores.data();
  for (int64_t r0 = 0; r0 < S; r0 += kBlockRows) {
    const int64_t rows = std::min(kBlockRows, S - r0);
    blockScores(qs, ks, probsBlock, r0, rows, a);
    // dout vᵀ of the block, then per element: the probability from the row
    // logsumexp, dropped (probs), and the score's gradient (dscores).
    gemm(BH, rows, S, D, false, true, 1.0f, dos + r0 * D, S * D, vs, S * D,
         0.0f, dscoresBlock, rows * S);
#pragma omp parallel for schedule(static) if (worth(BH * rows * S))
    for (int64_t t = 0; t < BH * rows; ++t) {
      const int64_t bh = t / rows, i = r0 + t % rows;
      float *p = probsBlock + t * S, *ds = dscoresBlock + t * S;
      const float *m = mask + (bh / a.heads) * S;
      const float rowLse = lse[bh * S + i], rowDot = dots[bh * S + i];
      float *factor = scratch<float>(static_cast<size_t>(S));
      rowKeepFactors(a, bh, i, factor);
#pragma omp simd
      for (int64_t j = 0; j < S; ++j) {
        const float prob = expApprox(p[j] + m[j] - rowLse);
        p[j] = prob * factor[j];
        ds[j] = a.scale * prob * (ds[j] * factor[j] - rowDot);
      }
      if (a.sequenceIds) // packed rows: other sequences' keys are out
        for (int64_t j = 0; j < S; ++j)
          if (!a.sameSequence(bh / a.heads, i, j))
            p[j] = ds[j] = 0.0f;
      if (bf16) {
        roundToBf16(p, p, S);
        roundToBf16(ds, ds, S);
      }
    }
    // dv += dropout(P)ᵀ dout, dq = dS k, dk += dSᵀ q (this block's rows).
    const float beta = r0 == 0 ? 0.0f : 1.0f;
    gemm(BH, S, D, rows, true, false, 1.0f, probsBlock, rows * S, dos + r0 * D,
         S * D, beta, dv, S * D);
    gemm(BH, rows, D, S, false, false, 1.0f, dscoresBlock, rows * S, ks, S * D,
         0.0f, dq + r0 * D, S * D);
    gemm(BH, S, D, rows, true, false, 1.0f, dscoresBlock, rows * S, qs + r0 * D,
         S * D, beta, dk, S * D);
  }
}

// The family's typed bodies (dialects/rt/kernels/Attention.td).
// Tensor parallelism: this rank's heads start at rank x tensor_key_stride
// of each sample's probabilities.
template <class Args>
AttentionShape shapeOf(const Context &cx, const Args &a, const char *kernel) {
  AttentionShape shape = kernels::attentionShapeOf(a);
  shape.keyOffset = cx.collectives->tensorKeyOffset(a.tensor_key_stride,
                                                    shape.dropoutKeys, kernel);
  return shape;
}

void run(Context &cx, const kernels::AttentionArgs &a) {
  attention(a.q.data, a.k.data, a.v.data, a.mask.data, a.out.data, a.lse.data,
            shapeOf(cx, a, "attention"));
}

void run(Context &cx, const kernels::AttentionGradArgs &a) {
  attentionGrad(a.q.data, a.k.data, a.v.data, a.mask.data, a.out.data,
                a.lse.data, a.dout.data, a.dq.data, a.dk.data, a.dv.data,
                shapeOf(cx, a, "attention_grad"));
}

} // namespace ferry::cpu
