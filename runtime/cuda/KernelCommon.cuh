// What every file of ferry's CUDA kernels shares (runtime/cuda/*Kernels.cu):
// the block size, the grid-stride loop, block reductions, and the launch
// shapes (one thread per element, one block per row). Each including file
// gets its own copy (anonymous namespace): nvcc compiles each file alone.
#pragma once

#include "runtime/cuda/Launch.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ferry::cuda {
namespace {

constexpr int kThreads = 256;

inline int blocksFor(int64_t n) {
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

__device__ inline float blockSum(float v, float *shared) {
  return blockReduce(v, shared, 0.0f, Add{});
}
__device__ inline float blockMax(float v, float *shared) {
  return blockReduce(v, shared, -INFINITY, Max{});
}
__device__ inline double blockSumDouble(double v, double *shared) {
  return blockReduce(v, shared, 0.0, Add{});
}
struct MaxDouble {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};
__device__ inline double blockMaxDouble(double v, double *shared) {
  return blockReduce(v, shared, -static_cast<double>(INFINITY), MaxDouble{});
}

// Column sums over rows (bias-gradient shapes, reduce over a middle
// dimension): a block of kColumnTile columns x kRowLanes lanes.
constexpr int kColumnTile = 32, kRowLanes = 8;

// How many row chunks a column reduction of `blocks` column-tile blocks
// over `rows` rows splits into, so that the grid fills the machine (about
// two blocks per multiprocessor of an H100) with at least 256 rows a chunk
// and `perSplit` doubles a chunk fitting the backend's scratch. 1: no split.
// Each chunk writes its partials and one pass adds them in chunk order, so
// the result does not depend on the order blocks run in.
inline int64_t rowSplits(int64_t blocks, int64_t rows, int64_t perSplit,
                         int64_t scratchDoubles) {
  constexpr int64_t kTargetBlocks = 264;
  if (blocks >= kTargetBlocks || perSplit <= 0)
    return 1;
  int64_t splits = (kTargetBlocks + blocks - 1) / blocks;
  splits = splits < rows / 256 ? splits : rows / 256;
  splits =
      splits < scratchDoubles / perSplit ? splits : scratchDoubles / perSplit;
  return splits > 1 ? splits : 1;
}

inline void checkCall(cudaError_t e, const char *what) {
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

// Element-wise maps, 128-bit wide: out[i] = op(i, a[i], b[i]) (b unused by
// one-input ops). Where out, a and b are all 16-byte aligned (the arena
// aligns buffers to 64 bytes; a view into one may not be), each thread
// loads and stores four consecutive elements as one float4 and the last n %
// 4 go element by element; otherwise every element alone. out may be a or b.
template <typename Op>
__global__ void mapKernel(Op op, float *out, const float *a, const float *b,
                          int64_t n, bool vectors) {
  if (vectors) {
    int64_t quads = n / 4;
    FERRY_FOR(q, quads) {
      float4 x = reinterpret_cast<const float4 *>(a)[q];
      float4 y = b ? reinterpret_cast<const float4 *>(b)[q] : x;
      int64_t i = 4 * q;
      float4 r;
      r.x = op(i, x.x, y.x);
      r.y = op(i + 1, x.y, y.y);
      r.z = op(i + 2, x.z, y.z);
      r.w = op(i + 3, x.w, y.w);
      reinterpret_cast<float4 *>(out)[q] = r;
    }
    FERRY_FOR(t, n - 4 * quads) {
      int64_t i = 4 * quads + t;
      out[i] = op(i, a[i], b ? b[i] : 0.0f);
    }
    return;
  }
  FERRY_FOR(i, n) out[i] = op(i, a[i], b ? b[i] : 0.0f);
}

inline bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

template <typename Op>
void launchMap(cudaStream_t s, const char *what, int64_t n, Op op, float *out,
               const float *a, const float *b = nullptr) {
  if (n <= 0)
    return;
  bool vectors = aligned16(out) && aligned16(a) && (!b || aligned16(b));
  launch(what, mapKernel<Op>, dim3(blocksFor(vectors ? (n + 3) / 4 : n)),
         dim3(kThreads), 0, s, op, out, a, b, n, vectors);
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

} // namespace ferry::cuda
