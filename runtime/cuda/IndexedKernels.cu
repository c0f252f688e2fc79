// ferry's CUDA kernels (CudaKernels.h declares them all). Kernels that follow
// indices from the data: embedding lookups and their gradients, masked-
// position gathers, and the losses over labels (over the whole row, or over
// classes split across the tensor-parallel group). An index outside its range
// is skipped and recorded (takeIndexErrors), since the CPU backend checks them
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

// The table holds rows [firstId, firstId + vocab) of one of wholeRows
// (a vocabulary-parallel part; firstId 0 and wholeRows vocab otherwise).
__global__ void embeddingKernel(const float *table, const int32_t *ids,
                                float *out, int64_t rows, int64_t width,
                                int64_t vocab, int64_t firstId,
                                int64_t wholeRows) {
  FERRY_FOR(i, rows * width) {
    int64_t id = ids[i / width];
    int64_t row = id - firstId;
    out[i] = inRange(id, wholeRows, kBadIds) && row >= 0 && row < vocab
                 ? table[row * width + i % width]
                 : 0.0f;
  }
}

// The sort key of each row: its row of the table, or vocab (after every
// real row) when the id is out of range or another rank's, which the sum
// skips.
__global__ void rowKeys(const int32_t *ids, int32_t *keys, int64_t rows,
                        int64_t vocab, int64_t firstId, int64_t wholeRows) {
  FERRY_FOR(r, rows) {
    int64_t row = static_cast<int64_t>(ids[r]) - firstId;
    keys[r] = inRange(ids[r], wholeRows, kBadIds) && row >= 0 && row < vocab
                  ? static_cast<int32_t>(row)
                  : static_cast<int32_t>(vocab);
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

// The losses over classes split across the tensor-parallel group (the
// vocabulary-parallel MLM head; cpu::classMax and the rest): one block per
// row; `real` of the row's `cols` columns are real classes, the first of
// them class `first` of the whole row.
__global__ void classMaxKernel(const float *logits, float *out, int64_t cols,
                               int64_t real) {
  __shared__ float shared[32];
  const float *row = logits + blockIdx.x * cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < real; c += blockDim.x)
    m = fmaxf(m, row[c]);
  m = blockMax(m, shared);
  if (threadIdx.x == 0)
    out[blockIdx.x] = m;
}

__global__ void classStatsKernel(const float *logits, const int32_t *labels,
                                 const float *rowMax, float *out, int64_t cols,
                                 int64_t real, int64_t first, int64_t classes) {
  __shared__ float shared[32];
  int64_t r = blockIdx.x;
  const float *row = logits + r * cols;
  float s = 0;
  for (int64_t c = threadIdx.x; c < real; c += blockDim.x)
    s += expf(row[c] - rowMax[r]);
  s = blockSum(s, shared);
  if (threadIdx.x == 0) {
    int64_t label = inRange(labels[r], classes, kBadLabels)
                        ? static_cast<int64_t>(labels[r]) - first
                        : -1;
    out[2 * r] = s;
    out[2 * r + 1] = label >= 0 && label < real ? row[label] : 0.0f;
  }
}

__global__ void classStatsGradKernel(const float *logits, const int32_t *labels,
                                     const float *rowMax, const float *dstats,
                                     float *dlogits, int64_t cols, int64_t real,
                                     int64_t first, int64_t classes) {
  int64_t r = blockIdx.x;
  const float *row = logits + r * cols;
  float *d = dlogits + r * cols;
  const float bySum = dstats[2 * r], byTarget = dstats[2 * r + 1];
  // A bad label was recorded by class_stats; it adds nothing here.
  const int64_t label = labels[r] >= 0 && labels[r] < classes
                            ? static_cast<int64_t>(labels[r]) - first
                            : -1;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = 0.0f;
    if (c < real && (bySum != 0.0f || byTarget != 0.0f)) // weight 0: zeros
      v = expf(row[c] - rowMax[r]) * bySum + (c == label ? byTarget : 0.0f);
    d[c] = v;
  }
}

// One block: the rows' weighted losses summed in double in a fixed order.
__global__ void crossEntropyOfStatsKernel(const float *stats,
                                          const float *rowMax,
                                          const float *weights, float *out,
                                          int64_t rows) {
  __shared__ double shared[32];
  double total = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    float w = weights[r];
    if (w != 0.0f)
      total +=
          static_cast<double>(w) * (static_cast<double>(rowMax[r]) +
                                    log(static_cast<double>(stats[2 * r])) -
                                    static_cast<double>(stats[2 * r + 1]));
  }
  total = blockSumDouble(total, shared);
  if (threadIdx.x == 0)
    out[0] = static_cast<float>(total);
}

__global__ void crossEntropyOfStatsGradKernel(const float *stats,
                                              const float *weights,
                                              const float *dloss, float *dstats,
                                              int64_t rows) {
  FERRY_FOR(r, rows) {
    float factor = dloss[0] * weights[r];
    dstats[2 * r] = factor == 0.0f
                        ? 0.0f
                        : static_cast<float>(static_cast<double>(factor) /
                                             static_cast<double>(stats[2 * r]));
    dstats[2 * r + 1] = factor == 0.0f ? 0.0f : -factor;
  }
}

// The lowest column holding the row's maximum (or a NaN), as minus its
// class; -inf when none of this rank's columns does.
__global__ void classArgmaxKernel(const float *logits, const float *rowMax,
                                  float *out, int64_t cols, int64_t real,
                                  int64_t first) {
  __shared__ int64_t lowest[kThreads];
  const float *row = logits + blockIdx.x * cols;
  const float m = rowMax[blockIdx.x];
  int64_t at = -1;
  for (int64_t c = threadIdx.x; c < real && at < 0; c += blockDim.x)
    if (row[c] == m || row[c] != row[c])
      at = c;
  lowest[threadIdx.x] = at;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      int64_t other = lowest[threadIdx.x + half], mine = lowest[threadIdx.x];
      if (other >= 0 && (mine < 0 || other < mine))
        lowest[threadIdx.x] = other;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] =
        lowest[0] >= 0 ? -static_cast<float>(first + lowest[0]) : -INFINITY;
}

// One block: the weights of the rows whose chosen class is their label.
__global__ void indexCorrectKernel(const float *negatedIndex,
                                   const int32_t *labels, const float *weights,
                                   float *out, int64_t rows, int64_t classes) {
  __shared__ double shared[32];
  double total = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    if (inRange(labels[r], classes, kBadLabels) &&
        -negatedIndex[r] == static_cast<float>(labels[r]))
      total += static_cast<double>(weights[r]);
  total = blockSumDouble(total, shared);
  if (threadIdx.x == 0)
    out[0] = static_cast<float>(total);
}

} // namespace

void classMax(cudaStream_t s, const float *logits, float *out, int64_t rows,
              int64_t cols, int64_t real) {
  if (rows > 0)
    launchRows(s, "class_max", rows, classMaxKernel, logits, out, cols, real);
}

void classStats(cudaStream_t s, const float *logits, const int32_t *labels,
                const float *rowMax, float *out, int64_t rows, int64_t cols,
                int64_t real, int64_t first, int64_t classes) {
  if (rows > 0)
    launchRows(s, "class_stats", rows, classStatsKernel, logits, labels, rowMax,
               out, cols, real, first, classes);
}

void classStatsGrad(cudaStream_t s, const float *logits, const int32_t *labels,
                    const float *rowMax, const float *dstats, float *dlogits,
                    int64_t rows, int64_t cols, int64_t real, int64_t first,
                    int64_t classes) {
  if (rows > 0)
    launchRows(s, "class_stats_grad", rows, classStatsGradKernel, logits,
               labels, rowMax, dstats, dlogits, cols, real, first, classes);
}

void crossEntropyOfStats(cudaStream_t s, const float *stats,
                         const float *rowMax, const float *weights, float *out,
                         int64_t rows) {
  launch("cross_entropy_of_stats", crossEntropyOfStatsKernel, dim3(1),
         dim3(kThreads), 0, s, stats, rowMax, weights, out, rows);
}

void crossEntropyOfStatsGrad(cudaStream_t s, const float *stats,
                             const float *weights, const float *dloss,
                             float *dstats, int64_t rows) {
  if (rows > 0)
    launchOver(s, "cross_entropy_of_stats_grad", rows,
               crossEntropyOfStatsGradKernel, stats, weights, dloss, dstats,
               rows);
}

void classArgmax(cudaStream_t s, const float *logits, const float *rowMax,
                 float *out, int64_t rows, int64_t cols, int64_t real,
                 int64_t first) {
  if (rows > 0)
    launchRows(s, "class_argmax", rows, classArgmaxKernel, logits, rowMax, out,
               cols, real, first);
}

void indexCorrect(cudaStream_t s, const float *negatedIndex,
                  const int32_t *labels, const float *weights, float *out,
                  int64_t rows, int64_t classes) {
  launch("index_correct", indexCorrectKernel, dim3(1), dim3(kThreads), 0, s,
         negatedIndex, labels, weights, out, rows, classes);
}

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
               float *out, int64_t rows, int64_t width, int64_t vocab,
               int64_t firstId, int64_t wholeRows) {
  launchOver(s, "embedding", rows * width, embeddingKernel, table, ids, out,
             rows, width, vocab, firstId, wholeRows < 0 ? vocab : wholeRows);
}

void embeddingGrad(cudaStream_t s, const int32_t *ids, const float *dy,
                   float *dtable, int64_t rows, int64_t width, int64_t vocab,
                   bool accumulate, int32_t *workspace, int64_t firstId,
                   int64_t wholeRows) {
  if (!accumulate)
    checkCall(memsetAsync(dtable, 0, static_cast<size_t>(vocab * width) * 4, s),
              "embedding_grad (zeroing)");
  if (rows <= 0 || width <= 0)
    return;
  int32_t *keys = workspace;
  launchOver(s, "embedding_grad (keys)", rows, rowKeys, ids, keys, rows, vocab,
             firstId, wholeRows < 0 ? vocab : wholeRows);
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
