// ferry's CUDA kernels (CudaKernels.h declares them all). Kernels that follow
// indices from the data: embedding lookups and their gradients, masked-
// position gathers, and the losses over labels. An index outside its range is
// skipped and recorded (takeIndexErrors), since the CPU backend checks them
// before its kernels run.
//
// No float atomics: the gradients sum each destination's rows in the CPU's
// order (embedding rows sorted by id, RadixSort.cu), and the losses sum
// per-row values in a fixed order, so two runs give the same bits.
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/KernelCommon.cuh"

namespace ferry::cuda {
namespace {

// Index inputs outside their range (the CPU backend checks them before its
// kernels run): the access is skipped and the kind recorded here, which the
// backend reads after each program (takeIndexErrors) and reports.
__device__ unsigned int indexErrors;
constexpr unsigned kBadIds = 1, kBadPositions = 2, kBadLabels = 4;

__device__ bool inRange(int64_t value, int64_t limit, unsigned kind) {
  if (value >= 0 && value < limit)
    return true;
  atomicOr(&indexErrors, kind);
  return false;
}

__global__ void embeddingKernel(const float *table, const int32_t *ids,
                                float *out, int64_t rows, int64_t width,
                                int64_t vocab) {
  FERRY_FOR(i, rows * width) {
    int64_t id = ids[i / width];
    out[i] = inRange(id, vocab, kBadIds) ? table[id * width + i % width] : 0.0f;
  }
}

// The sort key of each row: its id, or vocab (after every real id) when the
// id is out of range, which the sum skips.
__global__ void rowKeys(const int32_t *ids, int32_t *keys, int64_t rows,
                        int64_t vocab) {
  FERRY_FOR(r, rows) {
    keys[r] =
        inRange(ids[r], vocab, kBadIds) ? ids[r] : static_cast<int32_t>(vocab);
  }
}

// Rows sorted by id (stable): the first row of each id's run sums the run,
// column by column, in row order onto dtable's value: the CPU's loop, bit
// for bit, with no two threads writing one element.
__global__ void sortedSegmentSums(const int32_t *keys, const int32_t *sorted,
                                  const float *dy, float *dtable, int64_t rows,
                                  int64_t width, int64_t vocab) {
  FERRY_FOR(i, rows * width) {
    int64_t at = i / width, c = i % width;
    int32_t key = keys[sorted[at]];
    if (key >= vocab || (at > 0 && keys[sorted[at - 1]] == key))
      continue;
    float acc = dtable[key * width + c];
    for (int64_t j = at; j < rows && keys[sorted[j]] == key; ++j)
      acc += dy[sorted[j] * width + c];
    dtable[key * width + c] = acc;
  }
}

__global__ void gatherPositionsKernel(View x, const int32_t *pos, View out,
                                      int64_t batch, int64_t seq,
                                      int64_t predictions, int64_t width) {
  FERRY_FOR(i, batch * predictions * width) {
    int64_t w = i % width, bp = i / width, b = bp / predictions;
    out.set(i, inRange(pos[bp], seq, kBadPositions)
                   ? x[(b * seq + pos[bp]) * width + w]
                   : 0.0f);
  }
}

// dx zeroed; the first prediction of each position sums, in order of p,
// every prediction of its sample at that position (the CPU's order).
__global__ void gatherPositionsGradKernel(const int32_t *pos, const float *dy,
                                          float *dx, int64_t batch, int64_t seq,
                                          int64_t predictions, int64_t width) {
  FERRY_FOR(i, batch * predictions * width) {
    int64_t w = i % width, bp = i / width, b = bp / predictions;
    const int32_t *sample = pos + b * predictions;
    int32_t at = pos[bp];
    if (!inRange(at, seq, kBadPositions))
      continue;
    int64_t p = bp % predictions, q = 0;
    while (q < p && sample[q] != at)
      ++q;
    if (q < p)
      continue; // an earlier prediction sums this position
    float acc = 0.0f;
    for (q = p; q < predictions; ++q)
      if (sample[q] == at)
        acc += dy[(b * predictions + q) * width + w];
    dx[(b * seq + at) * width + w] = acc;
  }
}

// The sum of `rows` doubles in a fixed order (one block: strided partial
// sums, then the block's tree), written as a float: the losses' totals are
// the same bits whatever order their rows' blocks ran in.
__global__ void sumInOrder(const double *values, int64_t rows, float *out) {
  __shared__ double shared[32];
  double s = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    s += values[r];
  s = blockSumDouble(s, shared);
  if (threadIdx.x == 0)
    out[0] = static_cast<float>(s);
}

// One block per row: the row's weighted loss, or 0 (padding, a bad label).
__global__ void crossEntropyKernel(const float *logits, const int32_t *labels,
                                   const float *weights, double *rowLoss,
                                   int64_t cols, int64_t classes) {
  __shared__ float shared[32];
  int64_t r = blockIdx.x;
  // Written before the reductions' barriers: thread 0 writes the loss after.
  if (threadIdx.x == 0)
    rowLoss[r] = 0.0;
  if (!inRange(labels[r], classes, kBadLabels) || weights[r] == 0.0f)
    return;
  const float *lr = logits + r * cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
    m = fmaxf(m, lr[c]);
  m = blockMax(m, shared);
  float s = 0;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
    s += expf(lr[c] - m);
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    rowLoss[r] = static_cast<double>(weights[r]) *
                 (static_cast<double>(m) + log(static_cast<double>(s)) -
                  static_cast<double>(lr[labels[r]]));
}

__global__ void crossEntropyGradKernel(const float *logits,
                                       const int32_t *labels,
                                       const float *weights, const float *dloss,
                                       float *dlogits, int64_t cols,
                                       int64_t classes) {
  __shared__ float shared[32];
  int64_t r = blockIdx.x;
  const float *lr = logits + r * cols;
  float *dr = dlogits + r * cols;
  if (threadIdx.x == 0)
    inRange(labels[r], classes, kBadLabels);
  if (weights[r] == 0.0f) { // as the CPU: unweighted rows (padding) get 0,
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) // whatever
      dr[c] = 0.0f;                                          // their logits
    return;
  }
  float w = weights[r] * dloss[0];
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
    m = fmaxf(m, lr[c]);
  m = blockMax(m, shared);
  float s = 0;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
    s += expf(lr[c] - m);
  float inv = 1.0f / blockSum(s, shared);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dr[c] = c < classes
                ? w * (expf(lr[c] - m) * inv - (c == labels[r] ? 1.0f : 0.0f))
                : 0.0f;
}

// One block per row, the CPU's choice: the first column that holds the
// largest non-NaN value or a NaN. Each thread keeps its first NaN and its
// first maximum; the block takes the lowest NaN column and the largest value
// at its lowest column, and the earlier of the two.
__global__ void argmaxCorrectKernel(const float *logits, const int32_t *labels,
                                    const float *weights, double *rowCorrect,
                                    int64_t cols, int64_t classes) {
  __shared__ float value[kThreads];
  __shared__ int64_t index[kThreads], nanIndex[kThreads];
  int64_t r = blockIdx.x;
  const float *lr = logits + r * cols;
  float best = -INFINITY;
  int64_t at = -1, nan = -1;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    float v = lr[c];
    if (v != v) {
      if (nan < 0)
        nan = c;
    } else if (at < 0 || v > best) {
      best = v;
      at = c;
    }
  }
  value[threadIdx.x] = best;
  index[threadIdx.x] = at;
  nanIndex[threadIdx.x] = nan;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      int64_t n = nanIndex[threadIdx.x + half], mine = nanIndex[threadIdx.x];
      if (n >= 0 && (mine < 0 || n < mine))
        nanIndex[threadIdx.x] = n;
      float v = value[threadIdx.x + half];
      int64_t i = index[threadIdx.x + half], j = index[threadIdx.x];
      if (i >= 0 && (j < 0 || v > value[threadIdx.x] ||
                     (v == value[threadIdx.x] && i < j))) {
        value[threadIdx.x] = v;
        index[threadIdx.x] = i;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    inRange(labels[r], classes, kBadLabels);
    int64_t nanAt = nanIndex[0], maxAt = index[0];
    int64_t chosen = nanAt >= 0 && (maxAt < 0 || nanAt < maxAt) ? nanAt
                     : maxAt >= 0                               ? maxAt
                                                                : 0;
    rowCorrect[r] = chosen == labels[r] ? weights[r] : 0.0;
  }
}

} // namespace

unsigned takeIndexErrors() {
  unsigned errors = 0, zero = 0;
  checkCall(cudaMemcpyFromSymbol(&errors, indexErrors, sizeof(errors)),
            "reading the index checks");
  checkCall(cudaMemcpyToSymbol(indexErrors, &zero, sizeof(zero)),
            "clearing the index checks");
  // The copy from the host may still be in flight on return, and the next
  // program's kernels (on a non-blocking stream) do not wait for it.
  checkCall(cudaDeviceSynchronize(), "clearing the index checks");
  return errors;
}

void embedding(cudaStream_t s, const float *table, const int32_t *ids,
               float *out, int64_t rows, int64_t width, int64_t vocab) {
  launchOver(s, "embedding", rows * width, embeddingKernel, table, ids, out,
             rows, width, vocab);
}

void embeddingGrad(cudaStream_t s, const int32_t *ids, const float *dy,
                   float *dtable, int64_t rows, int64_t width, int64_t vocab,
                   bool accumulate, int32_t *workspace) {
  if (!accumulate)
    checkCall(memsetAsync(dtable, 0, static_cast<size_t>(vocab * width) * 4, s),
              "embedding_grad (zeroing)");
  if (rows <= 0 || width <= 0)
    return;
  int32_t *keys = workspace;
  launchOver(s, "embedding_grad (keys)", rows, rowKeys, ids, keys, rows, vocab);
  const int32_t *sorted =
      sortRowsByKey(s, keys, rows, static_cast<int32_t>(vocab), keys + rows);
  launchOver(s, "embedding_grad", rows * width, sortedSegmentSums,
             static_cast<const int32_t *>(keys), sorted, dy, dtable, rows,
             width, vocab);
}

void gatherPositions(cudaStream_t s, const float *x, const int32_t *positions,
                     float *out, int64_t batch, int64_t seq,
                     int64_t predictions, int64_t width, uint64_t bf16) {
  launchOver(s, "gather_positions", batch * predictions * width,
             gatherPositionsKernel, viewOf(x, bf16, 0), positions,
             viewOf(out, bf16, 2), batch, seq, predictions, width);
}

void gatherPositionsGrad(cudaStream_t s, const int32_t *positions,
                         const float *dy, float *dx, int64_t batch, int64_t seq,
                         int64_t predictions, int64_t width) {
  checkCall(memsetAsync(dx, 0, static_cast<size_t>(batch * seq * width) * 4, s),
            "gather_positions_grad (zeroing)");
  launchOver(s, "gather_positions_grad", batch * predictions * width,
             gatherPositionsGradKernel, positions, dy, dx, batch, seq,
             predictions, width);
}

void softmaxCrossEntropy(cudaStream_t s, const float *logits,
                         const int32_t *labels, const float *weights,
                         float *out, int64_t rows, int64_t cols,
                         int64_t classes, double *rowLosses) {
  if (rows <= 0) {
    fill(s, out, 1, 0.0f);
    return;
  }
  launchRows(s, "softmax_cross_entropy", rows, crossEntropyKernel, logits,
             labels, weights, rowLosses, cols, classes);
  launch("softmax_cross_entropy (sum)", sumInOrder, dim3(1), dim3(kThreads), 0,
         s, static_cast<const double *>(rowLosses), rows, out);
}

void softmaxCrossEntropyGrad(cudaStream_t s, const float *logits,
                             const int32_t *labels, const float *weights,
                             const float *dloss, float *dlogits, int64_t rows,
                             int64_t cols, int64_t classes) {
  if (rows <= 0)
    return;
  launchRows(s, "softmax_cross_entropy_grad", rows, crossEntropyGradKernel,
             logits, labels, weights, dloss, dlogits, cols, classes);
}

void argmaxCorrect(cudaStream_t s, const float *logits, const int32_t *labels,
                   const float *weights, float *out, int64_t rows, int64_t cols,
                   int64_t classes, double *rowCounts) {
  if (rows <= 0 || classes <= 0) {
    fill(s, out, 1, 0.0f);
    return;
  }
  launchRows(s, "argmax_correct", rows, argmaxCorrectKernel, logits, labels,
             weights, rowCounts, cols, classes);
  launch("argmax_correct (sum)", sumInOrder, dim3(1), dim3(kThreads), 0, s,
         static_cast<const double *>(rowCounts), rows, out);
}

} // namespace ferry::cuda
