// The CPU backend's kernels: every op of a ferry program in fp32, on plain
// row-major contiguous arrays. GEMMs go through OpenBLAS (cblas_sgemm); the
// rest are OpenMP loops over both cores, written with unit-stride inner loops
// so the compiler vectorises them. Each kernel is a pure function of its
// inputs (dropout of its key), so results do not depend on thread count
// except for float reassociation in reductions.
#pragma once

#include "runtime/kernels/AttentionShape.h"
#include "runtime/kernels/DropoutKeys.h"
#include "runtime/kernels/LearningRate.h"

#include <cstdint>

namespace ferry::cpu {

// C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b] for b < batch, with
// op(A) = A^T when transA (A stored [K, M]) else A ([M, K]); likewise B
// ([N, K] when transB, else [K, N]). C is [M, N]. The strides are in
// elements between consecutive batch entries; 0 repeats the same matrix.
void gemm(int64_t batch, int64_t m, int64_t n, int64_t k, bool transA,
          bool transB, float alpha, const float *a, int64_t strideA,
          const float *b, int64_t strideB, float beta, float *c,
          int64_t strideC);

// out = x rounded to the nearest bf16 (ties to even), kept as fp32: what a
// bf16 matmul input holds (training.precision: bf16). NaN stays NaN.
void roundToBf16(const float *x, float *out, int64_t n);
// out = x rounded to the nearest IEEE fp16 (ties to even; overflow to
// infinity, gradual underflow), kept as fp32: an fp16 matmul input.
void roundToFp16(const float *x, float *out, int64_t n);

void fill(float *out, int64_t n, float value);
void fillInt(int32_t *out, int64_t n, int32_t value);

// out[o, d, i] = d for o < outer, d < size, i < inner (int32).
void iota(int32_t *out, int64_t outer, int64_t size, int64_t inner);

// out[b, k] = 0 where mask[b, k] != 0, else fill (additive attention mask).
void attentionMask(const int32_t *mask, float *out, int64_t n, float fill);

// out[r, :] = table[ids[r] - firstId, :]; ids are checked by the caller to
// lie in the table. With tableRows >= 0 (a vocabulary-parallel part of the
// whole table, whose first row is id firstId), ids outside [firstId,
// firstId + tableRows) give rows of zeros.
void embedding(const float *table, const int32_t *ids, float *out, int64_t rows,
               int64_t width, int64_t firstId = 0, int64_t tableRows = -1);
// dtable = 0 (unless `accumulate`: then it adds into dtable), then
// dtable[ids[r] - firstId, :] += dy[r, :] for the ids in [firstId, firstId +
// vocab). Deterministic (no atomics).
void embeddingGrad(const int32_t *ids, const float *dy, float *dtable,
                   int64_t rows, int64_t width, int64_t vocab,
                   bool accumulate = false, int64_t firstId = 0);

// out[b, p, :] = x[b, positions[b, p], :]  (x: [B, S, H], positions [B, P]).
void gatherPositions(const float *x, const int32_t *positions, float *out,
                     int64_t batch, int64_t seq, int64_t predictions,
                     int64_t width);
// dx = 0, then dx[b, positions[b, p], :] += dy[b, p, :].
void gatherPositionsGrad(const int32_t *positions, const float *dy, float *dx,
                         int64_t batch, int64_t seq, int64_t predictions,
                         int64_t width);

// out[o, i] = x[o, index, i] for x viewed as [outer, size, inner].
void take(const float *x, float *out, int64_t outer, int64_t size,
          int64_t inner, int64_t index);
// dx = 0 except dx[o, index, i] = dy[o, i].
void takeGrad(const float *dy, float *dx, int64_t outer, int64_t size,
              int64_t inner, int64_t index);

// out[r, c] = x[r, c] + bias[c].
void biasAdd(const float *x, const float *bias, float *out, int64_t rows,
             int64_t cols);

enum class Binary : int32_t { Add = 0, Sub = 1, Mul = 2, Div = 3 };
// out = a op b elementwise (n elements each).
void binary(Binary op, const float *a, const float *b, float *out, int64_t n);
// dst += src (n elements).
void accumulate(float *dst, const float *src, int64_t n);
// out = factor * x.
void scale(const float *x, float *out, int64_t n, float factor);

// Exact GELU: x * 0.5 * (1 + erf(x / sqrt 2)); grad dx = dy * gelu'(x).
void gelu(const float *x, float *out, int64_t n);
void geluGrad(const float *x, const float *dy, float *dx, int64_t n);
// tanh; grad from the output: dx = dy * (1 - y^2).
void tanhForward(const float *x, float *out, int64_t n);
void tanhGrad(const float *y, const float *dy, float *dx, int64_t n);

// Row-wise layer norm over cols: out = (x - mean) / sqrt(var + eps) * scale
// + bias (biased variance, as PyTorch).
void layerNorm(const float *x, const float *scale, const float *bias,
               float *out, int64_t rows, int64_t cols, float eps);
// dx from (x, scale, dy), recomputing mean and rstd; dscale = sum over rows
// of dy * xhat, dbias = sum over rows of dy (both overwritten, not added).
void layerNormGrad(const float *x, const float *scale, const float *dy,
                   float *dx, float *dscale, float *dbias, int64_t rows,
                   int64_t cols, float eps);

// Softmax over the last dimension of x viewed as [batch, rows, cols] with an
// additive mask [batch, cols] (nullptr: none): out = softmax(x + mask[b]).
// With sequenceIds [batch, cols] (packed rows; x is [batch, ..., cols
// queries, cols keys]), row r's query is r % cols, and keys of another
// sequence than the query's get probability 0.
void softmax(const float *x, const float *mask, float *out, int64_t batch,
             int64_t rows, int64_t cols, const int32_t *sequenceIds = nullptr);
// dx = y * (dy - sum(dy * y)) per row.
void softmaxGrad(const float *y, const float *dy, float *dx, int64_t rows,
                 int64_t cols);

// CpuAttentionKernels.cpp: out = dropout(softmax(scale q kᵀ + mask[b])) v
// per (sample, head) and lse = each query row's logsumexp; q, k, v, out are
// [batch, heads, seq, headDim], mask [batch, seq], lse [batch, heads, seq].
void attention(const float *q, const float *k, const float *v,
               const float *mask, float *out, float *lse,
               const AttentionShape &shape);
// Its gradient from the forward's out and lse: dq, dk, dv.
void attentionGrad(const float *q, const float *k, const float *v,
                   const float *mask, const float *out, const float *lse,
                   const float *dout, float *dq, float *dk, float *dv,
                   const AttentionShape &shape);

// out[e] = keep ? x[e] / (1 - p) : 0 where element e of sample
// s = sampleOffset + e / perSample is kept when
// random::dropoutKeeps(seed, purpose, layer, s, e % perSample, p).
// p = 0 copies. Packed rows (`keys`): element e of row e / perSample takes
// the decision keys.map gives it instead. `keyOffset` (tensor parallelism:
// x holds a part of each sample): element e of a sample is element
// keyOffset + e of the whole one.
void dropout(const float *x, float *out, int64_t n, int64_t perSample,
             uint64_t seed, uint32_t purpose, uint32_t layer,
             uint64_t sampleOffset, float p, const PackedDropoutKeys &keys = {},
             uint64_t keyOffset = 0);

// Permutes x (shape dims[0..rank)) into out: out dimension i is x dimension
// perm[i]. rank <= 6.
void transpose(const float *x, float *out, int32_t rank, const int64_t *dims,
               const int64_t *perm);

enum class Reduce : int32_t { Sum = 0, Mean = 1, Max = 2, SumSquares = 3 };
// out[o, i] = reduce over r of x[o, r, i] (x viewed as [outer, size, inner]).
void reduce(Reduce kind, const float *x, float *out, int64_t outer,
            int64_t size, int64_t inner);
// out[o, r, i] = x[o, i]: the inverse shape of reduce.
void broadcast(const float *x, float *out, int64_t outer, int64_t size,
               int64_t inner);

// out[0] = sum over rows r with weights[r] != 0 of
// weights[r] * (logsumexp(logits[r, :classes]) - logits[r, labels[r]]).
// logits rows have `cols` entries; entries at and after `classes` (the
// padded vocabulary) take no part.
void softmaxCrossEntropy(const float *logits, const int32_t *labels,
                         const float *weights, float *out, int64_t rows,
                         int64_t cols, int64_t classes);
// dlogits[r, c] = dloss[0] * weights[r] * (softmax(r)[c] - [c == label]) for
// c < classes, 0 for padded columns.
void softmaxCrossEntropyGrad(const float *logits, const int32_t *labels,
                             const float *weights, const float *dloss,
                             float *dlogits, int64_t rows, int64_t cols,
                             int64_t classes);
// out[0] = sum over rows of weights[r] * [argmax over c < classes of
// logits[r, c] == labels[r]] (ties: the lowest index).
void argmaxCorrect(const float *logits, const int32_t *labels,
                   const float *weights, float *out, int64_t rows, int64_t cols,
                   int64_t classes);

// The losses over classes split across the tensor group
// (CpuClassSplitKernels.cpp, dialects/rt/kernels/ClassSplit.td). `logits`
// is this rank's [rows, cols] part, whose column c is global class
// firstClass + c; `real` of its columns (the ones below the whole row's
// real classes) take part.
void classMax(const float *logits, float *out, int64_t rows, int64_t cols,
              int64_t real);
void classStats(const float *logits, const int32_t *labels, const float *rowMax,
                float *out, int64_t rows, int64_t cols, int64_t real,
                int64_t firstClass);
void classStatsGrad(const float *logits, const int32_t *labels,
                    const float *rowMax, const float *dstats, float *dlogits,
                    int64_t rows, int64_t cols, int64_t real,
                    int64_t firstClass);
void crossEntropyOfStats(const float *stats, const float *rowMax,
                         const float *weights, float *out, int64_t rows);
void crossEntropyOfStatsGrad(const float *stats, const float *weights,
                             const float *dloss, float *dstats, int64_t rows);
void classArgmax(const float *logits, const float *rowMax, float *out,
                 int64_t rows, int64_t cols, int64_t real, int64_t firstClass);
void indexCorrect(const float *negatedIndex, const int32_t *labels,
                  const float *weights, float *out, int64_t rows);

// out[0] = sqrt of the sum of squares of every element of every tensor,
// accumulated in double.
void globalNorm(const float *const *tensors, const int64_t *sizes,
                int64_t count, float *out);

// The learning-rate schedule (runtime/kernels/LearningRate.h).
using ferry::learningRate;

struct AdamParams {
  float beta1, beta2, epsilon, weightDecay;
  bool applyWeightDecay; // false for biases and LayerNorm parameters
  bool lamb;             // LAMB trust ratio, else AdamW
  int64_t step;          // t, counting updates from 1
  // fp16 loss scaling: the gradient holds lossScale times its value (it is
  // multiplied by invLossScale), and a non-finite globalNorm (an overflow)
  // skips the update.
  float invLossScale = 1.0f;
  bool skipNonFinite = false;
};
// One optimizer update of `segments` independent tensors of `n` elements
// each (a stacked parameter has one segment per layer; LAMB's trust ratio is
// per segment). The gradient is scaled by min(1, clipNorm / globalNorm)
// first (clipNorm 0: no clipping). Formulas: ARCHITECTURE.md, "Optimizers".
void adamUpdate(float *w, const float *g, float *m, float *v, int64_t n,
                int64_t segments, float lr, float globalNorm, float clipNorm,
                const AdamParams &params);
// adamUpdate's LAMB in two halves, for shards whose trust-ratio norms are
// summed over the replicas in between: lambMoments updates the moments and
// writes sums[s] = sum of w^2, sums[segments + s] = sum of u^2 per segment;
// lambApply applies the update with the ratio from (summed) `sums`. Both do
// nothing when the update is skipped (a non-finite norm under loss scaling).
void lambMoments(const float *w, const float *g, float *m, float *v, int64_t n,
                 int64_t segments, float globalNorm, float clipNorm,
                 const AdamParams &params, float *sums);
void lambApply(float *w, const float *m, const float *v, int64_t n,
               int64_t segments, float lr, float globalNorm,
               const AdamParams &params, const float *sums);

} // namespace ferry::cpu
