// ferry's CUDA kernels, fp32 (see CudaKernels.h). Simple, correct first:
// grid-stride element-wise kernels, one block per row for row reductions
// (layer norm, softmax, cross-entropy), cuBLAS for GEMMs. Fusion and bf16
// come with the compiler's kernel grouping.
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/Launch.h"

#include "runtime/random/Philox.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ferry::cuda {
namespace {

constexpr int kThreads = 256;

int blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

#define FERRY_FOR(i, n)                                                        \
  for (int64_t i =                                                             \
           blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;        \
       i < (n); i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// A reduction over the block (sum or max); every thread gets the result.
// `shared` holds kThreads / 32 values of T.
template <typename T, typename Op>
__device__ T blockReduce(T v, T *shared, T identity, Op op) {
  for (int o = 16; o > 0; o >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  T total = identity;
  for (unsigned w = 0; w < (blockDim.x + 31) / 32; ++w)
    total = op(total, shared[w]);
  return total;
}

struct Add {
  template <typename T> __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

__device__ float blockSum(float v, float *shared) {
  return blockReduce(v, shared, 0.0f, Add{});
}
__device__ float blockMax(float v, float *shared) {
  return blockReduce(v, shared, -INFINITY, Max{});
}
__device__ double blockSumDouble(double v, double *shared) {
  return blockReduce(v, shared, 0.0, Add{});
}
struct MaxDouble {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};
__device__ double blockMaxDouble(double v, double *shared) {
  return blockReduce(v, shared, -static_cast<double>(INFINITY), MaxDouble{});
}

__global__ void toBf16Kernel(const float *x, __nv_bfloat16 *out, int64_t n) {
  FERRY_FOR(i, n) out[i] = __float2bfloat16_rn(x[i]);
}

__global__ void toFp16Kernel(const float *x, __half *out, int64_t n) {
  FERRY_FOR(i, n) out[i] = __float2half_rn(x[i]);
}

template <typename T> __global__ void fillKernel(T *out, int64_t n, T value) {
  FERRY_FOR(i, n) out[i] = value;
}

__global__ void iotaKernel(int32_t *out, int64_t outer, int64_t size,
                           int64_t inner) {
  FERRY_FOR(i, outer * size * inner) {
    out[i] = static_cast<int32_t>((i / inner) % size);
  }
}

__global__ void attentionMaskKernel(const int32_t *mask, float *out, int64_t n,
                                    float fill) {
  FERRY_FOR(i, n) out[i] = mask[i] != 0 ? 0.0f : fill;
}

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

__global__ void takeKernel(const float *x, float *out, int64_t outer,
                           int64_t size, int64_t inner, int64_t index) {
  FERRY_FOR(i, outer * inner) {
    out[i] = x[(i / inner * size + index) * inner + i % inner];
  }
}

__global__ void takeGradKernel(const float *dy, float *dx, int64_t outer,
                               int64_t size, int64_t inner, int64_t index) {
  FERRY_FOR(i, outer * size * inner) {
    int64_t d = (i / inner) % size;
    dx[i] = d == index ? dy[(i / (inner * size)) * inner + i % inner] : 0.0f;
  }
}

__global__ void biasAddKernel(const float *x, const float *bias, float *out,
                              int64_t rows, int64_t cols) {
  FERRY_FOR(i, rows * cols) out[i] = x[i] + bias[i % cols];
}

__global__ void binaryKernel(int32_t op, const float *a, const float *b,
                             float *out, int64_t n) {
  FERRY_FOR(i, n) {
    float x = a[i], y = b[i];
    out[i] = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
  }
}

__global__ void accumulateKernel(float *dst, const float *src, int64_t n) {
  FERRY_FOR(i, n) dst[i] += src[i];
}

__global__ void scaleKernel(const float *x, float *out, int64_t n,
                            float factor) {
  FERRY_FOR(i, n) out[i] = factor * x[i];
}

// Accurate in the lower tail too (0.5 * (1 + erf) cancels there).
__device__ float normalCdf(float x) { return normcdff(x); }

__global__ void geluKernel(const float *x, float *out, int64_t n) {
  FERRY_FOR(i, n) out[i] = x[i] * normalCdf(x[i]);
}

__global__ void geluGradKernel(const float *x, const float *dy, float *dx,
                               int64_t n) {
  FERRY_FOR(i, n) {
    float xi = x[i];
    float pdf = 0.39894228040143268f * expf(-0.5f * xi * xi);
    dx[i] = dy[i] * fmaf(xi, pdf, normalCdf(xi));
  }
}

__global__ void tanhKernel(const float *x, float *out, int64_t n) {
  FERRY_FOR(i, n) out[i] = tanhf(x[i]);
}

__global__ void tanhGradKernel(const float *y, const float *dy, float *dx,
                               int64_t n) {
  FERRY_FOR(i, n) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

// Mean and 1 / sqrt(biased variance + eps) of one row, by the whole block
// (two passes: the mean, then the squared deviations).
__device__ void rowMeanRstd(const float *xr, int64_t cols, float eps,
                            float *shared, float &mean, float &rstd) {
  float s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    s += xr[c];
  mean = blockSum(s, shared) / static_cast<float>(cols);
  float q = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float d = xr[c] - mean;
    q += d * d;
  }
  rstd = rsqrtf(blockSum(q, shared) / static_cast<float>(cols) + eps);
}

// One block per row.
__global__ void layerNormKernel(const float *x, const float *scale,
                                const float *bias, float *out, int64_t cols,
                                float eps) {
  __shared__ float shared[32];
  const float *xr = x + blockIdx.x * cols;
  float *orow = out + blockIdx.x * cols;
  float mean, rstd;
  rowMeanRstd(xr, cols, eps, shared, mean, rstd);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    orow[c] = (xr[c] - mean) * rstd * scale[c] + bias[c];
}

__global__ void layerNormGradRows(const float *x, const float *scale,
                                  const float *dy, float *dx, int64_t cols,
                                  float eps) {
  __shared__ float shared[32];
  const float *xr = x + blockIdx.x * cols;
  const float *dyr = dy + blockIdx.x * cols;
  float *dxr = dx + blockIdx.x * cols;
  float mean, rstd;
  rowMeanRstd(xr, cols, eps, shared, mean, rstd);
  float a = 0, b = 0; // sum(g), sum(g * xhat) with g = dy * scale
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float g = dyr[c] * scale[c];
    a += g;
    b += g * (xr[c] - mean) * rstd;
  }
  float sumG = blockSum(a, shared), sumGX = blockSum(b, shared);
  float invCols = 1.0f / static_cast<float>(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float xhat = (xr[c] - mean) * rstd;
    float g = dyr[c] * scale[c];
    dxr[c] = rstd * (g - invCols * sumG - xhat * invCols * sumGX);
  }
}

// Column sums over rows, the shape of a bias gradient: a block of
// kColumnTile columns x kRowLanes lanes; lane t sums rows t, t + kRowLanes,
// ... (coalesced along the columns) in double, as the CPU sums, and the
// lanes are added in shared memory. One block per tile of columns.
constexpr int kColumnTile = 32, kRowLanes = 8;

// dscale = sum dy * xhat, dbias = sum dy, per column.
__global__ void layerNormGradColumns(const float *x, const float *dy,
                                     float *dscale, float *dbias, int64_t rows,
                                     int64_t cols, float eps,
                                     const float *stats) {
  __shared__ double ds[kRowLanes][kColumnTile], db[kRowLanes][kColumnTile];
  int64_t c = blockIdx.x * static_cast<int64_t>(kColumnTile) + threadIdx.x;
  double s = 0, b = 0;
  if (c < cols)
    for (int64_t r = threadIdx.y; r < rows; r += kRowLanes) {
      float xhat = (x[r * cols + c] - stats[2 * r]) * stats[2 * r + 1];
      s += static_cast<double>(dy[r * cols + c]) * xhat;
      b += dy[r * cols + c];
    }
  ds[threadIdx.y][threadIdx.x] = s;
  db[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int lane = 1; lane < kRowLanes; ++lane) {
      s += ds[lane][threadIdx.x];
      b += db[lane][threadIdx.x];
    }
    dscale[c] = static_cast<float>(s);
    dbias[c] = static_cast<float>(b);
  }
}

// Mean and rstd per row, for the column pass.
__global__ void rowStats(const float *x, float *stats, int64_t cols,
                         float eps) {
  __shared__ float shared[32];
  const float *xr = x + blockIdx.x * cols;
  float mean, rstd;
  rowMeanRstd(xr, cols, eps, shared, mean, rstd);
  if (threadIdx.x == 0) {
    stats[2 * blockIdx.x] = mean;
    stats[2 * blockIdx.x + 1] = rstd;
  }
}

// One block per row of x viewed as [batch, rows, cols].
__global__ void softmaxKernel(const float *x, const float *mask, float *out,
                              int64_t rows, int64_t cols) {
  __shared__ float shared[32];
  int64_t row = blockIdx.x, b = row / rows;
  const float *xr = x + row * cols;
  float *orow = out + row * cols;
  const float *mr = mask ? mask + b * cols : nullptr;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    m = fmaxf(m, xr[c] + (mr ? mr[c] : 0.0f));
  m = blockMax(m, shared);
  float s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    s += expf(xr[c] + (mr ? mr[c] : 0.0f) - m);
  float inv = 1.0f / blockSum(s, shared);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    orow[c] = expf(xr[c] + (mr ? mr[c] : 0.0f) - m) * inv;
}

__global__ void softmaxGradKernel(const float *y, const float *dy, float *dx,
                                  int64_t cols) {
  __shared__ float shared[32];
  const float *yr = y + blockIdx.x * cols;
  const float *dyr = dy + blockIdx.x * cols;
  float s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    s += dyr[c] * yr[c];
  float dot = blockSum(s, shared);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dx[blockIdx.x * cols + c] = yr[c] * (dyr[c] - dot);
}

// The dropout of element i of a tensor with `perSample` elements per sample,
// the CPU's mask bits: kept elements scaled by 1 / (1 - p).
struct DropoutSite {
  int64_t perSample;
  uint64_t seed;
  uint32_t purpose, layer;
  uint64_t sampleOffset;
  float p;
  // perSample <= 0: the whole tensor of `count` elements is one sample.
  static DropoutSite of(int64_t count, int64_t perSample, uint64_t seed,
                        uint32_t purpose, uint32_t layer, uint64_t sampleOffset,
                        float p) {
    return DropoutSite{perSample > 0 ? perSample : count,
                       seed,
                       purpose,
                       layer,
                       sampleOffset,
                       p};
  }
  __device__ float operator()(float x, int64_t i) const {
    if (p == 0.0f)
      return x;
    uint64_t sample = sampleOffset + static_cast<uint64_t>(i / perSample);
    return random::dropoutKeeps(seed, purpose, layer, sample,
                                static_cast<uint64_t>(i % perSample), p)
               ? x / (1.0f - p)
               : 0.0f;
  }
};

__global__ void dropoutKernel(const float *x, float *out, int64_t n,
                              DropoutSite drop) {
  FERRY_FOR(i, n) out[i] = drop(x[i], i);
}

// softmaxKernel, then the dropout of each probability: one block per row,
// both written in the last pass.
__global__ void softmaxDropoutKernel(const float *x, const float *mask,
                                     float *probs, float *out, int64_t rows,
                                     int64_t cols, DropoutSite drop) {
  __shared__ float shared[32];
  int64_t row = blockIdx.x, b = row / rows;
  const float *xr = x + row * cols;
  const float *mr = mask + b * cols;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    m = fmaxf(m, xr[c] + mr[c]);
  m = blockMax(m, shared);
  float s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    s += expf(xr[c] + mr[c] - m);
  float inv = 1.0f / blockSum(s, shared);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    int64_t i = row * cols + c;
    float y = expf(xr[c] + mr[c] - m) * inv;
    probs[i] = y;
    out[i] = drop(y, i);
  }
}

// softmaxGradKernel of the dropped gradient: the dropped values go to dx
// first (each thread reads back only what it wrote).
__global__ void dropoutSoftmaxGradKernel(const float *y, const float *dy,
                                         float *dx, int64_t cols,
                                         DropoutSite drop) {
  __shared__ float shared[32];
  int64_t base = blockIdx.x * cols;
  float s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float d = drop(dy[base + c], base + c);
    dx[base + c] = d;
    s += d * y[base + c];
  }
  float dot = blockSum(s, shared);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dx[base + c] = y[base + c] * (dx[base + c] - dot);
}

// The end of a sublayer, one block per row: sum = dropout(input) + residual
// written first (each thread its own columns), then the row's layer norm
// from it (after the block's barrier the row is visible to every thread).
__global__ void residualLayerNormKernel(const float *input,
                                        const float *residual,
                                        const float *scale, const float *bias,
                                        float *sum, float *out, int64_t cols,
                                        float eps, DropoutSite drop) {
  __shared__ float shared[32];
  int64_t base = blockIdx.x * cols;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    sum[base + c] = drop(input[base + c], base + c) + residual[base + c];
  __syncthreads();
  float mean, rstd;
  rowMeanRstd(sum + base, cols, eps, shared, mean, rstd);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    out[base + c] = (sum[base + c] - mean) * rstd * scale[c] + bias[c];
}

struct Shape6 {
  int64_t dims[6], strides[6]; // output dims; input strides in output order
  int32_t rank;
};

__global__ void transposeKernel(const float *x, float *out, int64_t total,
                                Shape6 shape) {
  FERRY_FOR(i, total) {
    int64_t rest = i, offset = 0;
    for (int32_t d = shape.rank - 1; d >= 0; --d) {
      offset += (rest % shape.dims[d]) * shape.strides[d];
      rest /= shape.dims[d];
    }
    out[i] = x[offset];
  }
}

// The reductions of reduce(): 0 sum, 1 mean, 2 max (NaN wins, as on the
// CPU), 3 sum of squares; sums in double.
__device__ double reduceStep(int32_t kind, double acc, float v) {
  if (kind == 2)
    return (v > acc || v != v || acc != acc) ? (acc != acc ? acc : v) : acc;
  return kind == 3 ? acc + static_cast<double>(v) * v : acc + v;
}
__device__ float reduceFinish(int32_t kind, double acc, int64_t size) {
  return static_cast<float>(kind == 1 ? acc / static_cast<double>(size) : acc);
}

// x as [outer, size, inner], inner > 1: blocks of kColumnTile inner
// columns x kRowLanes lanes over size; grid (column tiles, outer).
__global__ void reduceColumnsKernel(int32_t kind, const float *x, float *out,
                                    int64_t outer, int64_t size,
                                    int64_t inner) {
  __shared__ double partial[kRowLanes][kColumnTile];
  int64_t c = blockIdx.x * static_cast<int64_t>(kColumnTile) + threadIdx.x;
  // gridDim.y is capped at the hardware's 65535: blocks stride over outer.
  for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
    double acc = kind == 2 ? -INFINITY : 0.0;
    if (c < inner)
      for (int64_t r = threadIdx.y; r < size; r += kRowLanes)
        acc = reduceStep(kind, acc, x[(o * size + r) * inner + c]);
    partial[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < inner) {
      for (int lane = 1; lane < kRowLanes; ++lane) {
        double v = partial[lane][threadIdx.x];
        acc =
            kind == 2 ? ((v > acc || v != v) && acc == acc ? v : acc) : acc + v;
      }
      out[o * inner + c] = reduceFinish(kind, acc, size);
    }
    __syncthreads(); // partial is rewritten by the next slice
  }
}

// inner == 1: one block per row of size elements.
__global__ void reduceRowsKernel(int32_t kind, const float *x, float *out,
                                 int64_t size) {
  __shared__ double shared[32];
  const float *row = x + blockIdx.x * size;
  double acc = kind == 2 ? -INFINITY : 0.0;
  for (int64_t r = threadIdx.x; r < size; r += blockDim.x)
    acc = reduceStep(kind, acc, row[r]);
  if (kind == 2) {
    // NaN-aware max through the sum's shared memory: a NaN anywhere wins.
    double nan = blockSumDouble(acc != acc ? 1.0 : 0.0, shared);
    double m = blockMaxDouble(acc != acc ? -INFINITY : acc, shared);
    acc = nan > 0 ? NAN : m;
  } else {
    acc = blockSumDouble(acc, shared);
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = reduceFinish(kind, acc, size);
}

__global__ void broadcastKernel(const float *x, float *out, int64_t outer,
                                int64_t size, int64_t inner) {
  FERRY_FOR(i, outer * size * inner) {
    out[i] = x[(i / (size * inner)) * inner + i % inner];
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

__global__ void sumSquaresKernel(const float *x, int64_t n, double *acc) {
  __shared__ double shared[32];
  double s = 0;
  FERRY_FOR(i, n) s += static_cast<double>(x[i]) * x[i];
  s = blockSumDouble(s, shared);
  if (threadIdx.x == 0)
    atomicAdd(acc, s);
}

__global__ void sqrtKernel(const double *acc, float *out) {
  out[0] = static_cast<float>(sqrt(acc[0]));
}

struct AdamK {
  float b1, b2, c1, c2, invCorrection1, invCorrection2, epsilon, weightDecay,
      clipNorm;
};

// The clip factor times 1 / loss scale, or 0 when the update is skipped
// (a non-finite norm under loss scaling).
__device__ float clipFactor(const AdamK &k, const float *norm,
                            const float *lossScale) {
  float clip =
      (k.clipNorm > 0.0f && norm[0] > k.clipNorm) ? k.clipNorm / norm[0] : 1.0f;
  return lossScale ? clip * (1.0f / lossScale[0]) : clip; // as the CPU
}

__device__ bool skipped(const float *norm, const float *lossScale) {
  return lossScale && !isfinite(norm[0]);
}

__device__ float adamDirection(float m, float v, float w, const AdamK &k) {
  float u = (m * k.invCorrection1) / (sqrtf(v * k.invCorrection2) + k.epsilon);
  return fmaf(k.weightDecay, w, u);
}

__global__ void adamwKernel(float *w, const float *g, float *m, float *v,
                            int64_t total, const float *lr, const float *norm,
                            AdamK k, const float *lossScale) {
  if (skipped(norm, lossScale))
    return;
  float clip = clipFactor(k, norm, lossScale);
  FERRY_FOR(i, total) {
    float gi = clip * g[i];
    float mi = k.b1 * m[i] + k.c1 * gi;
    float vi = k.b2 * v[i] + k.c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] -= lr[0] * adamDirection(mi, vi, w[i], k);
  }
}

// LAMB pass 1: moments, and per segment sum w^2 and u^2 into scratch.
__global__ void lambMoments(const float *w, const float *g, float *m, float *v,
                            int64_t n, const float *norm, AdamK k,
                            double *scratch, int64_t segments,
                            const float *lossScale) {
  __shared__ double shared[32];
  if (skipped(norm, lossScale))
    return;
  int64_t seg = blockIdx.y;
  float clip = clipFactor(k, norm, lossScale);
  double ww = 0, uu = 0;
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       j < n; j += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t i = seg * n + j;
    float gi = clip * g[i];
    float mi = k.b1 * m[i] + k.c1 * gi;
    float vi = k.b2 * v[i] + k.c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    double u = adamDirection(mi, vi, w[i], k);
    ww += static_cast<double>(w[i]) * w[i];
    uu += u * u;
  }
  ww = blockSumDouble(ww, shared);
  uu = blockSumDouble(uu, shared);
  if (threadIdx.x == 0) {
    atomicAdd(&scratch[seg], ww);
    atomicAdd(&scratch[segments + seg], uu);
  }
}

__global__ void lambApply(float *w, const float *m, const float *v, int64_t n,
                          const float *lr, AdamK k, const double *scratch,
                          int64_t segments, const float *norm,
                          const float *lossScale) {
  if (skipped(norm, lossScale))
    return;
  int64_t seg = blockIdx.y;
  double ww = scratch[seg], uu = scratch[segments + seg];
  double ratio = (ww > 0.0 && uu > 0.0) ? sqrt(ww) / sqrt(uu) : 1.0;
  float step = static_cast<float>(static_cast<double>(lr[0]) * ratio);
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       j < n; j += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t i = seg * n + j;
    w[i] -= step * adamDirection(m[i], v[i], w[i], k);
  }
}

void checkCall(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA ") + what +
                             " failed: " + cudaGetErrorString(e));
}

// One thread per element over n (grid-stride, capped grid): the shape of
// every element-wise wrapper below.
template <typename... Params, typename... Args>
void launchOver(cudaStream_t s, const char *what, int64_t n,
                void (*kernel)(Params...), Args... args) {
  launch(what, kernel, dim3(blocksFor(n)), dim3(kThreads), 0, s, args...);
}

// One block of kThreads per row: the row kernels (layer norm, softmax,
// cross-entropy). Rows are the grid's x dimension.
template <typename... Params, typename... Args>
void launchRows(cudaStream_t s, const char *what, int64_t rows,
                void (*kernel)(Params...), Args... args) {
  launch(what, kernel, dim3(gridDimension(rows, kMaxGridX, what)),
         dim3(kThreads), 0, s, args...);
}

} // namespace

void roundToHalf(cudaStream_t stream, const float *x, void *out, int64_t n,
                 bool fp16) {
  if (fp16)
    launchOver(stream, "rounding to fp16", n, toFp16Kernel, x,
               static_cast<__half *>(out), n);
  else
    launchOver(stream, "rounding to bf16", n, toBf16Kernel, x,
               static_cast<__nv_bfloat16 *>(out), n);
}

void gemmEx(cublasHandle_t handle, cudaStream_t stream, int64_t batch,
            int64_t m, int64_t n, int64_t k, bool transA, bool transB,
            float alpha, const void *a, int64_t strideA, const void *b,
            int64_t strideB, float beta, float *c, int64_t strideC,
            int inputType) {
  // cuBLAS takes int dimensions: a larger one would wrap.
  for (int64_t v : {batch, m, n, k})
    if (v > 2147483647)
      throw std::runtime_error("cuBLAS gemm: a dimension of " +
                               std::to_string(v) + " exceeds cuBLAS's int");
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  cudaDataType_t type = inputType == 1   ? CUDA_R_16BF
                        : inputType == 2 ? CUDA_R_16F
                                         : CUDA_R_32F;
  cublasSetStream(handle, stream);
  cublasStatus_t status = cublasGemmStridedBatchedEx(
      handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
      transA ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
      static_cast<int>(m), static_cast<int>(k), &alpha, b, type,
      static_cast<int>(transB ? k : n), strideB, a, type,
      static_cast<int>(transA ? m : k), strideA, &beta, c, CUDA_R_32F,
      static_cast<int>(n), strideC, static_cast<int>(batch), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cuBLAS gemm failed with status " +
                             std::to_string(static_cast<int>(status)));
}

void gemm(cublasHandle_t handle, cudaStream_t stream, int64_t batch, int64_t m,
          int64_t n, int64_t k, bool transA, bool transB, float alpha,
          const float *a, int64_t strideA, const float *b, int64_t strideB,
          float beta, float *c, int64_t strideC) {
  gemmEx(handle, stream, batch, m, n, k, transA, transB, alpha, a, strideA, b,
         strideB, beta, c, strideC, 0);
}

void gemmBf16(cublasHandle_t handle, cudaStream_t stream, int64_t batch,
              int64_t m, int64_t n, int64_t k, bool transA, bool transB,
              float alpha, const float *a, int64_t strideA, const float *b,
              int64_t strideB, float beta, float *c, int64_t strideC,
              void *workspace, bool fp16) {
  int64_t extentA = (batch - 1) * strideA + m * k;
  int64_t extentB = (batch - 1) * strideB + k * n;
  // Both 16-bit types are 2 bytes: the same workspace layout.
  auto *wa = static_cast<uint16_t *>(workspace);
  uint16_t *wb = wa + extentA;
  roundToHalf(stream, a, wa, extentA, fp16);
  roundToHalf(stream, b, wb, extentB, fp16);
  gemmEx(handle, stream, batch, m, n, k, transA, transB, alpha, wa, strideA, wb,
         strideB, beta, c, strideC, fp16 ? 2 : 1);
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

void fill(cudaStream_t s, float *out, int64_t n, float value) {
  launchOver(s, "fill", n, fillKernel<float>, out, n, value);
}
void fillInt(cudaStream_t s, int32_t *out, int64_t n, int32_t value) {
  launchOver(s, "fill_i32", n, fillKernel<int32_t>, out, n, value);
}
void iota(cudaStream_t s, int32_t *out, int64_t outer, int64_t size,
          int64_t inner) {
  launchOver(s, "iota", outer * size * inner, iotaKernel, out, outer, size,
             inner);
}
void attentionMask(cudaStream_t s, const int32_t *mask, float *out, int64_t n,
                   float fill) {
  launchOver(s, "attention_mask", n, attentionMaskKernel, mask, out, n, fill);
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
void take(cudaStream_t s, const float *x, float *out, int64_t outer,
          int64_t size, int64_t inner, int64_t index) {
  launchOver(s, "take", outer * inner, takeKernel, x, out, outer, size, inner,
             index);
}
void takeGrad(cudaStream_t s, const float *dy, float *dx, int64_t outer,
              int64_t size, int64_t inner, int64_t index) {
  launchOver(s, "take_grad", outer * size * inner, takeGradKernel, dy, dx,
             outer, size, inner, index);
}
void biasAdd(cudaStream_t s, const float *x, const float *bias, float *out,
             int64_t rows, int64_t cols) {
  launchOver(s, "bias_add", rows * cols, biasAddKernel, x, bias, out, rows,
             cols);
}
void binary(cudaStream_t s, int32_t op, const float *a, const float *b,
            float *out, int64_t n) {
  launchOver(s, "binary", n, binaryKernel, op, a, b, out, n);
}
void accumulate(cudaStream_t s, float *dst, const float *src, int64_t n) {
  launchOver(s, "accumulate", n, accumulateKernel, dst, src, n);
}
void scale(cudaStream_t s, const float *x, float *out, int64_t n,
           float factor) {
  launchOver(s, "scale", n, scaleKernel, x, out, n, factor);
}
void gelu(cudaStream_t s, const float *x, float *out, int64_t n) {
  launchOver(s, "gelu", n, geluKernel, x, out, n);
}
void geluGrad(cudaStream_t s, const float *x, const float *dy, float *dx,
              int64_t n) {
  launchOver(s, "gelu_grad", n, geluGradKernel, x, dy, dx, n);
}
void tanhForward(cudaStream_t s, const float *x, float *out, int64_t n) {
  launchOver(s, "tanh", n, tanhKernel, x, out, n);
}
void tanhGrad(cudaStream_t s, const float *y, const float *dy, float *dx,
              int64_t n) {
  launchOver(s, "tanh_grad", n, tanhGradKernel, y, dy, dx, n);
}
void layerNorm(cudaStream_t s, const float *x, const float *scale,
               const float *bias, float *out, int64_t rows, int64_t cols,
               float eps) {
  if (rows <= 0 || cols <= 0)
    return;
  launchRows(s, "layer_norm", rows, layerNormKernel, x, scale, bias, out, cols,
             eps);
}
void layerNormGrad(cudaStream_t s, const float *x, const float *scale,
                   const float *dy, float *dx, float *dscale, float *dbias,
                   int64_t rows, int64_t cols, float eps) {
  if (cols <= 0) // nothing to write (a grid of 0 column tiles is invalid)
    return;
  if (rows <= 0) { // no rows: zero parameter gradients, as the CPU
    fill(s, dscale, cols, 0.0f);
    fill(s, dbias, cols, 0.0f);
    return;
  }
  launchRows(s, "layer_norm_grad", rows, layerNormGradRows, x, scale, dy, dx,
             cols, eps);
  // The rows' statistics for the column pass, from the stream-ordered pool
  // (the backend keeps the pool's memory, so this does not reach the
  // driver after the first step).
  float *stats = nullptr;
  checkCall(cudaMallocAsync(&stats, static_cast<size_t>(2 * rows) * 4, s),
            "layer_norm_grad (row statistics)");
  launchRows(s, "layer_norm_grad (row statistics)", rows, rowStats, x, stats,
             cols, eps);
  launch("layer_norm_grad (columns)", layerNormGradColumns,
         dim3(gridDimension((cols + kColumnTile - 1) / kColumnTile, kMaxGridX,
                            "layer_norm_grad")),
         dim3(kColumnTile, kRowLanes), 0, s, x, dy, dscale, dbias, rows, cols,
         eps, static_cast<const float *>(stats));
  checkCall(cudaFreeAsync(stats, s), "layer_norm_grad (row statistics)");
}
void softmax(cudaStream_t s, const float *x, const float *mask, float *out,
             int64_t batch, int64_t rows, int64_t cols) {
  if (batch * rows <= 0 || cols <= 0)
    return;
  launchRows(s, "softmax", batch * rows, softmaxKernel, x, mask, out, rows,
             cols);
}
void softmaxGrad(cudaStream_t s, const float *y, const float *dy, float *dx,
                 int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0)
    return;
  launchRows(s, "softmax_grad", rows, softmaxGradKernel, y, dy, dx, cols);
}
void dropout(cudaStream_t s, const float *x, float *out, int64_t n,
             int64_t perSample, uint64_t seed, uint32_t purpose, uint32_t layer,
             uint64_t sampleOffset, float p) {
  if (n <= 0)
    return;
  if (p == 0.0f) {
    if (out != x)
      checkCall(cudaMemcpyAsync(out, x, static_cast<size_t>(n) * 4,
                                cudaMemcpyDeviceToDevice, s),
                "dropout (copy)");
    return;
  }
  launchOver(
      s, "dropout", n, dropoutKernel, x, out, n,
      DropoutSite::of(n, perSample, seed, purpose, layer, sampleOffset, p));
}
void softmaxDropout(cudaStream_t s, const float *x, const float *mask,
                    float *probs, float *out, int64_t batch, int64_t rows,
                    int64_t cols, int64_t perSample, uint64_t seed,
                    uint32_t purpose, uint32_t layer, uint64_t sampleOffset,
                    float p) {
  if (batch * rows <= 0 || cols <= 0)
    return;
  DropoutSite drop = DropoutSite::of(batch * rows * cols, perSample, seed,
                                     purpose, layer, sampleOffset, p);
  launchRows(s, "softmax_dropout", batch * rows, softmaxDropoutKernel, x, mask,
             probs, out, rows, cols, drop);
}
void residualLayerNorm(cudaStream_t s, const float *input,
                       const float *residual, const float *scale,
                       const float *bias, float *sum, float *out, int64_t rows,
                       int64_t cols, float eps, int64_t perSample,
                       uint64_t seed, uint32_t purpose, uint32_t layer,
                       uint64_t sampleOffset, float p) {
  if (rows <= 0 || cols <= 0)
    return;
  DropoutSite drop = DropoutSite::of(rows * cols, perSample, seed, purpose,
                                     layer, sampleOffset, p);
  launchRows(s, "residual_layer_norm", rows, residualLayerNormKernel, input,
             residual, scale, bias, sum, out, cols, eps, drop);
}
void dropoutSoftmaxGrad(cudaStream_t s, const float *y, const float *dy,
                        float *dx, int64_t rows, int64_t cols,
                        int64_t perSample, uint64_t seed, uint32_t purpose,
                        uint32_t layer, uint64_t sampleOffset, float p) {
  if (rows <= 0 || cols <= 0)
    return;
  DropoutSite drop = DropoutSite::of(rows * cols, perSample, seed, purpose,
                                     layer, sampleOffset, p);
  launchRows(s, "dropout_softmax_grad", rows, dropoutSoftmaxGradKernel, y, dy,
             dx, cols, drop);
}
void transpose(cudaStream_t s, const float *x, float *out, int32_t rank,
               const int64_t *dims, const int64_t *perm) {
  Shape6 shape{};
  shape.rank = rank;
  int64_t inStrides[6], total = 1, stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    inStrides[d] = stride;
    stride *= dims[d];
  }
  for (int32_t i = 0; i < rank; ++i) {
    shape.dims[i] = dims[perm[i]];
    shape.strides[i] = inStrides[perm[i]];
    total *= dims[i];
  }
  if (total <= 0)
    return;
  launchOver(s, "transpose", total, transposeKernel, x, out, total, shape);
}
void reduce(cudaStream_t s, int32_t kind, const float *x, float *out,
            int64_t outer, int64_t size, int64_t inner) {
  if (outer <= 0 || inner <= 0)
    return;
  if (size <= 0) { // as the CPU: 0 for sums, NaN for the mean, -inf for max
    fill(s, out, outer * inner, kind == 1 ? NAN : kind == 2 ? -INFINITY : 0.0f);
    return;
  }
  if (inner == 1) {
    launchRows(s, "reduce (rows)", outer, reduceRowsKernel, kind, x, out, size);
  } else {
    // Outer slices beyond the y limit are strided over by the blocks.
    dim3 grid(gridDimension((inner + kColumnTile - 1) / kColumnTile, kMaxGridX,
                            "reduce"),
              static_cast<unsigned>(std::min(outer, kMaxGridYZ)));
    launch("reduce (columns)", reduceColumnsKernel, grid,
           dim3(kColumnTile, kRowLanes), 0, s, kind, x, out, outer, size,
           inner);
  }
}
void broadcast(cudaStream_t s, const float *x, float *out, int64_t outer,
               int64_t size, int64_t inner) {
  launchOver(s, "broadcast", outer * size * inner, broadcastKernel, x, out,
             outer, size, inner);
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
void globalNorm(cudaStream_t s, const float *const *tensors,
                const int64_t *sizes, int64_t count, float *out,
                double *scratch) {
  checkCall(cudaMemsetAsync(scratch, 0, sizeof(double), s),
            "global_norm (zeroing)");
  for (int64_t t = 0; t < count; ++t)
    if (sizes[t] > 0)
      // A few blocks per SM, each striding: few atomics on one address.
      launch("global_norm", sumSquaresKernel,
             dim3(std::min(blocksFor(sizes[t]), 1024)), dim3(kThreads), 0, s,
             tensors[t], sizes[t], scratch);
  launch("global_norm (sqrt)", sqrtKernel, dim3(1), dim3(1), 0, s,
         static_cast<const double *>(scratch), out);
}
void adamUpdate(cudaStream_t s, float *w, const float *g, float *m, float *v,
                int64_t n, int64_t segments, const float *lr,
                const float *globalNorm, float clipNorm,
                const AdamParams &params, double *scratch) {
  if (n <= 0 || segments <= 0)
    return;
  double t = static_cast<double>(params.step);
  AdamK k{params.beta1,
          params.beta2,
          1.0f - params.beta1,
          1.0f - params.beta2,
          static_cast<float>(1.0 / (1.0 - std::pow(double(params.beta1), t))),
          static_cast<float>(1.0 / (1.0 - std::pow(double(params.beta2), t))),
          params.epsilon,
          params.applyWeightDecay ? params.weightDecay : 0.0f,
          clipNorm};
  if (!params.lamb) {
    launchOver(s, "optimizer_update (AdamW)", n * segments, adamwKernel, w, g,
               m, v, n * segments, lr, globalNorm, k, params.lossScale);
    return;
  }
  checkCall(
      cudaMemsetAsync(scratch, 0, static_cast<size_t>(2 * segments) * 8, s),
      "optimizer_update (zeroing)");
  dim3 grid(static_cast<unsigned>(std::min<int64_t>(blocksFor(n), 1024)),
            gridDimension(segments, kMaxGridYZ, "optimizer_update"));
  launch("optimizer_update (LAMB moments)", lambMoments, grid, dim3(kThreads),
         0, s, w, g, m, v, n, globalNorm, k, scratch, segments,
         params.lossScale);
  launch("optimizer_update (LAMB apply)", lambApply, grid, dim3(kThreads), 0, s,
         w, static_cast<const float *>(m), static_cast<const float *>(v), n, lr,
         k, static_cast<const double *>(scratch), segments, globalNorm,
         params.lossScale);
}

} // namespace ferry::cuda
