// ferry's CUDA kernels (CudaKernels.h declares them all). Kernels that follow
// indices from the data: embedding lookups and their gradients, masked-
// position gathers, and the losses over labels. An index outside its range is
// skipped and recorded (takeIndexErrors), since the CPU backend checks them
// before its kernels run.
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

__global__ void scatterAddRows(const int32_t *ids, const float *dy,
                               float *dtable, int64_t rows, int64_t width,
                               int64_t vocab) {
  FERRY_FOR(i, rows * width) {
    int64_t id = ids[i / width];
    if (inRange(id, vocab, kBadIds))
      atomicAdd(&dtable[id * width + i % width], dy[i]);
  }
}

__global__ void gatherPositionsKernel(const float *x, const int32_t *pos,
                                      float *out, int64_t batch, int64_t seq,
                                      int64_t predictions, int64_t width) {
  FERRY_FOR(i, batch * predictions * width) {
    int64_t w = i % width, bp = i / width, b = bp / predictions;
    out[i] = inRange(pos[bp], seq, kBadPositions)
                 ? x[(b * seq + pos[bp]) * width + w]
                 : 0.0f;
  }
}

__global__ void gatherPositionsGradKernel(const int32_t *pos, const float *dy,
                                          float *dx, int64_t batch, int64_t seq,
                                          int64_t predictions, int64_t width) {
  FERRY_FOR(i, batch * predictions * width) {
    int64_t w = i % width, bp = i / width, b = bp / predictions;
    if (inRange(pos[bp], seq, kBadPositions))
      atomicAdd(&dx[(b * seq + pos[bp]) * width + w], dy[i]);
  }
}

// One block per row; atomically adds the row's weighted loss into out[0].
__global__ void crossEntropyKernel(const float *logits, const int32_t *labels,
                                   const float *weights, float *out,
                                   int64_t cols, int64_t classes) {
  __shared__ float shared[32];
  int64_t r = blockIdx.x;
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
    atomicAdd(out, weights[r] * (m + logf(s) - lr[labels[r]]));
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
                                    const float *weights, float *out,
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
    if (chosen == labels[r] && weights[r] != 0.0f)
      atomicAdd(out, weights[r]);
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
                   bool accumulate) {
  if (!accumulate)
    checkCall(
        cudaMemsetAsync(dtable, 0, static_cast<size_t>(vocab * width) * 4, s),
        "embedding_grad (zeroing)");
  launchOver(s, "embedding_grad", rows * width, scatterAddRows, ids, dy, dtable,
             rows, width, vocab);
}

void gatherPositions(cudaStream_t s, const float *x, const int32_t *positions,
                     float *out, int64_t batch, int64_t seq,
                     int64_t predictions, int64_t width) {
  launchOver(s, "gather_positions", batch * predictions * width,
             gatherPositionsKernel, x, positions, out, batch, seq, predictions,
             width);
}

void gatherPositionsGrad(cudaStream_t s, const int32_t *positions,
                         const float *dy, float *dx, int64_t batch, int64_t seq,
                         int64_t predictions, int64_t width) {
  checkCall(
      cudaMemsetAsync(dx, 0, static_cast<size_t>(batch * seq * width) * 4, s),
      "gather_positions_grad (zeroing)");
  launchOver(s, "gather_positions_grad", batch * predictions * width,
             gatherPositionsGradKernel, positions, dy, dx, batch, seq,
             predictions, width);
}

void softmaxCrossEntropy(cudaStream_t s, const float *logits,
                         const int32_t *labels, const float *weights,
                         float *out, int64_t rows, int64_t cols,
                         int64_t classes) {
  checkCall(cudaMemsetAsync(out, 0, 4, s), "softmax_cross_entropy (zeroing)");
  if (rows <= 0)
    return;
  launchRows(s, "softmax_cross_entropy", rows, crossEntropyKernel, logits,
             labels, weights, out, cols, classes);
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
                   int64_t classes) {
  checkCall(cudaMemsetAsync(out, 0, 4, s), "argmax_correct (zeroing)");
  if (rows <= 0 || classes <= 0)
    return;
  launchRows(s, "argmax_correct", rows, argmaxCorrectKernel, logits, labels,
             weights, out, cols, classes);
}

} // namespace ferry::cuda
