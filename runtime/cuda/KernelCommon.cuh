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
