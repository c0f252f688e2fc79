// What every file of ferry's CUDA kernels shares (runtime/cuda/*Kernels.cu):
// the block size, the grid-stride loop, block reductions, and the launch
// shapes (one thread per element, one block per row). Each including file
// gets its own copy (anonymous namespace): nvcc compiles each file alone.
#pragma once

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.h"

#include <cuda_bf16.h>
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

// Element i of a buffer that holds fp32, or bf16 (2-byte words, the
// storage Kernels.def's FERRY_BF16 allows): read as fp32, written rounded
// to nearest even.
__device__ inline float loadAt(const void *p, bool bf16, int64_t i) {
  return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i])
              : static_cast<const float *>(p)[i];
}
__device__ inline void storeAt(void *p, bool bf16, int64_t i, float v) {
  if (bf16)
    static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
  else
    static_cast<float *>(p)[i] = v;
}
// A kernel's tensor argument, fp32 or bf16 (Kernels.def's FERRY_BF16
// storage): elements read as fp32, written rounded to nearest even.
struct View {
  void *p;
  bool bf16;
  __device__ float operator[](int64_t i) const { return loadAt(p, bf16, i); }
  __device__ void set(int64_t i, float v) const { storeAt(p, bf16, i, v); }
  // The view from element `offset` on.
  __device__ View at(int64_t offset) const {
    return View{static_cast<char *>(p) + offset * (bf16 ? 2 : 4), bf16};
  }
};
// Buffer b of a call whose bf16 mask (Instr.bf16_buffers) is `mask`.
inline View viewOf(const void *p, uint64_t mask, int b) {
  return View{const_cast<void *>(p), (mask >> b & 1) != 0};
}

// Elements 4q .. 4q + 3: one 128-bit access for fp32, one 64-bit for bf16.
struct alignas(8) Bf16x4 {
  __nv_bfloat16 v[4];
};
__device__ inline float4 load4(const void *p, bool bf16, int64_t q) {
  if (!bf16)
    return static_cast<const float4 *>(p)[q];
  Bf16x4 w = static_cast<const Bf16x4 *>(p)[q];
  return make_float4(__bfloat162float(w.v[0]), __bfloat162float(w.v[1]),
                     __bfloat162float(w.v[2]), __bfloat162float(w.v[3]));
}
__device__ inline void store4(void *p, bool bf16, int64_t q, float4 r) {
  if (!bf16) {
    static_cast<float4 *>(p)[q] = r;
    return;
  }
  Bf16x4 w;
  w.v[0] = __float2bfloat16_rn(r.x);
  w.v[1] = __float2bfloat16_rn(r.y);
  w.v[2] = __float2bfloat16_rn(r.z);
  w.v[3] = __float2bfloat16_rn(r.w);
  static_cast<Bf16x4 *>(p)[q] = w;
}

// Element-wise maps, 128-bit wide: out[i] = op(i, a[i], b[i]) (b unused by
// one-input ops), each operand fp32 or bf16 (`bf16`, MapBits in CudaKernels.h).
// Where every operand is aligned to four of its elements (the arena aligns
// buffers to 64 bytes; a view into one may not be), each thread loads and
// stores four consecutive elements at once (a float4, or four bf16 in 64
// bits) and the last n % 4 go element by element; otherwise every element
// alone. out may be a or b.
template <typename Op>
__global__ void mapKernel(Op op, void *out, const void *a, const void *b,
                          int64_t n, bool vectors, unsigned bf16) {
  bool ho = bf16 & kMapOut, ha = bf16 & kMapA, hb = bf16 & kMapB;
  if (vectors) {
    int64_t quads = n / 4;
    FERRY_FOR(q, quads) {
      float4 x = load4(a, ha, q);
      float4 y = b ? load4(b, hb, q) : x;
      int64_t i = 4 * q;
      float4 r;
      r.x = op(i, x.x, y.x);
      r.y = op(i + 1, x.y, y.y);
      r.z = op(i + 2, x.z, y.z);
      r.w = op(i + 3, x.w, y.w);
      store4(out, ho, q, r);
    }
    FERRY_FOR(t, n - 4 * quads) {
      int64_t i = 4 * quads + t;
      storeAt(out, ho, i, op(i, loadAt(a, ha, i), b ? loadAt(b, hb, i) : 0.0f));
    }
    return;
  }
  FERRY_FOR(i, n)
  storeAt(out, ho, i, op(i, loadAt(a, ha, i), b ? loadAt(b, hb, i) : 0.0f));
}

inline bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}
// Aligned to four elements: 16 bytes for fp32, 8 for bf16.
inline bool alignedQuad(const void *p, bool bf16) {
  return reinterpret_cast<uintptr_t>(p) % (bf16 ? 8 : 16) == 0;
}

template <typename Op>
void launchMap(cudaStream_t s, const char *what, int64_t n, Op op, void *out,
               const void *a, const void *b = nullptr, unsigned bf16 = 0) {
  if (n <= 0)
    return;
  bool vectors = alignedQuad(out, bf16 & kMapOut) &&
                 alignedQuad(a, bf16 & kMapA) &&
                 (!b || alignedQuad(b, bf16 & kMapB));
  launch(what, mapKernel<Op>, dim3(blocksFor(vectors ? (n + 3) / 4 : n)),
         dim3(kThreads), 0, s, op, out, a, b, n, vectors, bf16);
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
