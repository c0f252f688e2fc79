// ferry's CUDA kernels (CudaKernels.h declares them all). Reductions and the
// optimizer: reduce over a dimension, the global gradient norm, AdamW and LAMB
// updates.
//
// No float atomics: a sum over many blocks writes one partial per block into
// the backend's scratch, and one block adds the partials in a fixed order
// (foldPartials), so two runs give the same bits.
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/KernelCommon.cuh"

#include <cmath>

namespace ferry::cuda {
namespace {

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

// Two partial results of one reduction combined (max: a NaN wins).
__device__ double reduceCombine(int32_t kind, double acc, double v) {
  return kind == 2 ? ((v > acc || v != v) && acc == acc ? v : acc) : acc + v;
}

// Column c of slice o over rows [begin, end), by a block of kColumnTile
// columns x kRowLanes lanes: lane t takes rows begin + t, begin + t +
// kRowLanes, ..., and lane 0 adds the lanes in order. The result is lane
// 0's (threadIdx.y == 0). Block-wide: every thread calls it.
__device__ double reduceColumnRows(int32_t kind, const float *x, int64_t o,
                                   int64_t size, int64_t inner, int64_t c,
                                   int64_t begin, int64_t end) {
  __shared__ double partial[kRowLanes][kColumnTile];
  double acc = kind == 2 ? -INFINITY : 0.0;
  if (c < inner)
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes)
      acc = reduceStep(kind, acc, x[(o * size + r) * inner + c]);
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0)
    for (int lane = 1; lane < kRowLanes; ++lane)
      acc = reduceCombine(kind, acc, partial[lane][threadIdx.x]);
  __syncthreads(); // partial is rewritten by the next call
  return acc;
}

// x as [outer, size, inner], inner > 1: blocks of kColumnTile inner
// columns x kRowLanes lanes over size; grid (column tiles, outer).
__global__ void reduceColumnsKernel(int32_t kind, const float *x, float *out,
                                    int64_t outer, int64_t size,
                                    int64_t inner) {
  int64_t c = blockIdx.x * static_cast<int64_t>(kColumnTile) + threadIdx.x;
  // gridDim.y is capped at the hardware's 65535: blocks stride over outer.
  for (int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
    double acc = reduceColumnRows(kind, x, o, size, inner, c, 0, size);
    if (threadIdx.y == 0 && c < inner)
      out[o * inner + c] = reduceFinish(kind, acc, size);
  }
}

// reduceColumnsKernel on rows [z * chunk, (z + 1) * chunk) of each slice,
// z = blockIdx.z, for few slices (outer <= 65535): the chunk's value of
// column c of slice o goes to partials[(z * outer + o) * inner + c].
__global__ void reduceColumnChunks(int32_t kind, const float *x,
                                   double *partials, int64_t outer,
                                   int64_t size, int64_t inner,
                                   int64_t chunk) {
  int64_t c = blockIdx.x * static_cast<int64_t>(kColumnTile) + threadIdx.x;
  int64_t o = blockIdx.y, z = blockIdx.z;
  int64_t end = (z + 1) * chunk < size ? (z + 1) * chunk : size;
  double acc = reduceColumnRows(kind, x, o, size, inner, c, z * chunk, end);
  if (threadIdx.y == 0 && c < inner)
    partials[(z * outer + o) * inner + c] = acc;
}

// The chunks' partials of each output, added (or maxed) in chunk order.
__global__ void finishColumnChunks(int32_t kind, const double *partials,
                                   float *out, int64_t outer, int64_t size,
                                   int64_t inner, int64_t chunks) {
  FERRY_FOR(e, outer * inner) {
    double acc = partials[e];
    for (int64_t z = 1; z < chunks; ++z)
      acc = reduceCombine(kind, acc, partials[z * outer * inner + e]);
    out[e] = reduceFinish(kind, acc, size);
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

// partials[blockIdx.x] = this block's share of sum x^2 (a fixed grid: the
// same elements go to the same block every run).
__global__ void sumSquaresKernel(const float *x, int64_t n, double *partials) {
  __shared__ double shared[32];
  double s = 0;
  FERRY_FOR(i, n) s += static_cast<double>(x[i]) * x[i];
  s = blockSumDouble(s, shared);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = s;
}

// One block per sum (blockIdx.x = sum): total[sum] (+)= the `count`
// partials at partials[sum * count], added in a fixed order.
__global__ void foldPartials(const double *partials, int64_t count,
                             double *total, bool add) {
  __shared__ double shared[32];
  const double *mine = partials + blockIdx.x * count;
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    s += mine[i];
  s = blockSumDouble(s, shared);
  if (threadIdx.x == 0)
    total[blockIdx.x] = add ? total[blockIdx.x] + s : s;
}

__global__ void sqrtKernel(const double *acc, float *out) {
  out[0] = static_cast<float>(sqrt(acc[0]));
}

struct AdamK {
  float b1, b2, c1, c2, invCorrection1, invCorrection2, epsilon, weightDecay,
      clipNorm;
  // Device copies of the two corrections (AdamParams::corrections), which
  // replace the host's values when given.
  const float *corrections;
};

// This run's bias corrections, read once per thread.
__device__ void loadCorrections(AdamK &k) {
  if (k.corrections) {
    k.invCorrection1 = k.corrections[0];
    k.invCorrection2 = k.corrections[1];
  }
}

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
  loadCorrections(k);
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

// LAMB pass 1: moments, and per segment each block's share of sum w^2 and
// sum u^2: partials[seg * gridDim.x + block] and, after all segments',
// partials[(segments + seg) * gridDim.x + block].
__global__ void lambMomentsKernel(const float *w, const float *g, float *m, float *v,
                            int64_t n, const float *norm, AdamK k,
                            double *partials, int64_t segments,
                            const float *lossScale) {
  loadCorrections(k);
  __shared__ double shared[32];
  int64_t seg = blockIdx.y;
  if (skipped(norm, lossScale)) { // no update: the sums are zeros, not junk
    if (threadIdx.x == 0)
      partials[seg * gridDim.x + blockIdx.x] =
          partials[(segments + seg) * gridDim.x + blockIdx.x] = 0.0;
    return;
  }
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
    partials[seg * gridDim.x + blockIdx.x] = ww;
    partials[(segments + seg) * gridDim.x + blockIdx.x] = uu;
  }
}

__global__ void lambApplyKernel(float *w, const float *m, const float *v, int64_t n,
                          const float *lr, AdamK k, const double *scratch,
                          int64_t segments, const float *norm,
                          const float *lossScale) {
  loadCorrections(k);
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

__global__ void doublesToFloats(const double *in, float *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    out[i] = static_cast<float>(in[i]);
}

__global__ void floatsToDoubles(const float *in, double *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    out[i] = in[i];
}

AdamK adamConstants(const AdamParams &params, float clipNorm) {
  double t = static_cast<double>(params.step);
  return AdamK{
      params.beta1,
      params.beta2,
      1.0f - params.beta1,
      1.0f - params.beta2,
      static_cast<float>(1.0 / (1.0 - std::pow(double(params.beta1), t))),
      static_cast<float>(1.0 / (1.0 - std::pow(double(params.beta2), t))),
      params.epsilon,
      params.applyWeightDecay ? params.weightDecay : 0.0f,
      clipNorm,
      params.corrections};
}

} // namespace

void reduce(cudaStream_t s, int32_t kind, const float *x, float *out,
            int64_t outer, int64_t size, int64_t inner, double *scratch) {
  if (outer <= 0 || inner <= 0)
    return;
  if (size <= 0) { // as the CPU: 0 for sums, NaN for the mean, -inf for max
    fill(s, out, outer * inner, kind == 1 ? NAN : kind == 2 ? -INFINITY : 0.0f);
    return;
  }
  if (inner == 1) {
    launchRows(s, "reduce (rows)", outer, reduceRowsKernel, kind, x, out, size);
  } else if (int64_t tiles = (inner + kColumnTile - 1) / kColumnTile,
             chunks = scratch && outer <= kMaxGridYZ
                          ? rowSplits(tiles * outer, size, outer * inner,
                                      kScratchDoubles)
                          : 1;
             chunks > 1) {
    // Few columns over many rows (a bias gradient): the rows split into
    // chunks across more blocks, then the chunks added in order.
    int64_t chunk = (size + chunks - 1) / chunks;
    chunks = (size + chunk - 1) / chunk;
    launch("reduce (column chunks)", reduceColumnChunks,
           dim3(gridDimension(tiles, kMaxGridX, "reduce"),
                static_cast<unsigned>(outer), static_cast<unsigned>(chunks)),
           dim3(kColumnTile, kRowLanes), 0, s, kind, x, scratch, outer, size,
           inner, chunk);
    launchOver(s, "reduce (chunks added)", outer * inner, finishColumnChunks,
               kind, static_cast<const double *>(scratch), out, outer, size,
               inner, chunks);
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

void globalNorm(cudaStream_t s, const float *const *tensors,
                const int64_t *sizes, int64_t count, float *out,
                double *scratch) {
  // scratch[0]: the running total; then the partials of the tensors since
  // the last fold (at most kFoldEvery). Each tensor gets a fixed grid of up
  // to 64 blocks.
  constexpr int64_t kFoldEvery = 4096;
  double *partials = scratch + 1;
  int64_t used = 0;
  checkCall(memsetAsync(scratch, 0, sizeof(double), s),
            "global_norm (zeroing)");
  auto fold = [&]() {
    if (used > 0)
      launch("global_norm (fold)", foldPartials, dim3(1), dim3(kThreads), 0,
             s, static_cast<const double *>(partials), used, scratch, true);
    used = 0;
  };
  for (int64_t t = 0; t < count; ++t) {
    if (sizes[t] <= 0)
      continue;
    int blocks = std::min(blocksFor(sizes[t]), 64);
    if (used + blocks > kFoldEvery)
      fold();
    launch("global_norm", sumSquaresKernel, dim3(blocks), dim3(kThreads), 0,
           s, tensors[t], sizes[t], partials + used);
    used += blocks;
  }
  fold();
  launch("global_norm (sqrt)", sqrtKernel, dim3(1), dim3(1), 0, s,
         static_cast<const double *>(scratch), out);
}

namespace {
// LAMB's moments over `segments` segments of n: the per-block partials at
// scratch + 2 * segments, folded into scratch[0, 2 * segments) (sum w^2,
// then sum u^2, per segment).
void lambMomentsInto(cudaStream_t s, const char *what, const float *w,
                     const float *g, float *m, float *v, int64_t n,
                     int64_t segments, const float *globalNorm, AdamK k,
                     const float *lossScale, double *scratch) {
  if (2 * segments + 2 * segments > kScratchDoubles)
    throw std::runtime_error(std::string(what) + ": " +
                             std::to_string(segments) +
                             " segments do not fit the backend's scratch");
  int64_t fit = (kScratchDoubles - 2 * segments) / (2 * segments);
  int64_t blocks = std::min<int64_t>(std::min<int64_t>(blocksFor(n), 1024), fit);
  double *partials = scratch + 2 * segments;
  dim3 grid(static_cast<unsigned>(blocks),
            gridDimension(segments, kMaxGridYZ, what));
  launch(what, lambMomentsKernel, grid, dim3(kThreads), 0, s, w, g, m, v, n,
         globalNorm, k, partials, segments, lossScale);
  launch("LAMB (fold)", foldPartials,
         dim3(gridDimension(2 * segments, kMaxGridX, what)), dim3(kThreads), 0,
         s, static_cast<const double *>(partials), blocks, scratch, false);
}
} // namespace

void adamUpdate(cudaStream_t s, float *w, const float *g, float *m, float *v,
                int64_t n, int64_t segments, const float *lr,
                const float *globalNorm, float clipNorm,
                const AdamParams &params, double *scratch) {
  if (n <= 0 || segments <= 0)
    return;
  AdamK k = adamConstants(params, clipNorm);
  if (!params.lamb) {
    launchOver(s, "optimizer_update (AdamW)", n * segments, adamwKernel, w, g,
               m, v, n * segments, lr, globalNorm, k, params.lossScale);
    return;
  }
  lambMomentsInto(s, "optimizer_update (LAMB moments)", w, g, m, v, n,
                  segments, globalNorm, k, params.lossScale, scratch);
  dim3 grid(static_cast<unsigned>(std::min<int64_t>(blocksFor(n), 1024)),
            gridDimension(segments, kMaxGridYZ, "optimizer_update"));
  launch("optimizer_update (LAMB apply)", lambApplyKernel, grid, dim3(kThreads), 0, s,
         w, static_cast<const float *>(m), static_cast<const float *>(v), n, lr,
         k, static_cast<const double *>(scratch), segments, globalNorm,
         params.lossScale);
}

void lambMoments(cudaStream_t s, const float *w, const float *g, float *m,
                 float *v, int64_t n, int64_t segments,
                 const float *globalNorm, float clipNorm,
                 const AdamParams &params, float *sums, double *scratch) {
  if (segments <= 0)
    return;
  if (n > 0)
    lambMomentsInto(s, "lamb_moments", w, g, m, v, n, segments, globalNorm,
                    adamConstants(params, clipNorm), params.lossScale,
                    scratch);
  else
    checkCall(
        memsetAsync(scratch, 0, static_cast<size_t>(2 * segments) * 8, s),
        "lamb_moments (zeroing)");
  launchOver(s, "lamb_moments (sums)", 2 * segments, doublesToFloats,
             static_cast<const double *>(scratch), sums, 2 * segments);
}

void lambApply(cudaStream_t s, float *w, const float *m, const float *v,
               int64_t n, int64_t segments, const float *lr,
               const float *globalNorm, const AdamParams &params,
               const float *sums, double *scratch) {
  if (n <= 0 || segments <= 0)
    return;
  launchOver(s, "lamb_apply (sums)", 2 * segments, floatsToDoubles, sums,
             scratch, 2 * segments);
  dim3 grid(static_cast<unsigned>(std::min<int64_t>(blocksFor(n), 1024)),
            gridDimension(segments, kMaxGridYZ, "lamb_apply"));
  launch("lamb_apply", lambApplyKernel, grid, dim3(kThreads), 0, s, w, m, v, n, lr,
         adamConstants(params, 0.0f), static_cast<const double *>(scratch),
         segments, globalNorm, params.lossScale);
}

} // namespace ferry::cuda
