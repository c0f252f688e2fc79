// ferry's CUDA kernels (CudaKernels.h declares them all). A stable sort of
// row indices by small non-negative integer keys, for the deterministic
// scatter-adds (embedding gradients): rows with equal keys keep their order,
// so a sum over them runs in row order, as the CPU's loop does.
//
// Hand-written rather than CUB's DeviceRadixSort: ferry's CUDA sources also
// run under the CUDA simulator, which compiles them with the host compiler,
// and CUB's kernels are PTX-level code the simulator cannot run. Every step
// counts integers, so the result is the same whatever order blocks and
// threads run in.
//
// Least-significant-digit radix sort, 8 bits a pass, tiles of kThreads rows:
// 1. each tile counts its rows per digit (hist[digit * tiles + tile]);
// 2. one block turns the counts into exclusive offsets, digit-major;
// 3. each row goes to its digit's offset for its tile plus the number of
//    rows before it in its tile with the same digit.
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/KernelCommon.cuh"

namespace ferry::cuda {
namespace {

constexpr int kDigits = 256; // 8 bits a pass; kThreads is 256 too

// The row at sorted position i of the previous pass (null: position i).
__device__ int32_t rowAt(const int32_t *order, int64_t i) {
  return order ? order[i] : static_cast<int32_t>(i);
}

__global__ void digitHistogram(const int32_t *keys, const int32_t *order,
                               int64_t n, int shift, int32_t *hist,
                               int64_t tiles) {
  __shared__ int32_t counts[kDigits];
  counts[threadIdx.x] = 0;
  __syncthreads();
  int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  if (i < n)
    atomicAdd(&counts[(keys[rowAt(order, i)] >> shift) & (kDigits - 1)], 1);
  __syncthreads();
  hist[threadIdx.x * tiles + blockIdx.x] = counts[threadIdx.x];
}

// One block: hist[0, n) becomes its exclusive prefix sums. Each thread
// scans a contiguous chunk; thread 0 scans the chunk totals.
__global__ void exclusiveScan(int32_t *hist, int64_t n) {
  __shared__ int32_t totals[kThreads];
  int64_t per = (n + kThreads - 1) / kThreads;
  int64_t begin = threadIdx.x * per, end = begin + per < n ? begin + per : n;
  int32_t sum = 0;
  for (int64_t i = begin; i < end; ++i)
    sum += hist[i];
  totals[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t running = 0;
    for (int t = 0; t < kThreads; ++t) {
      int32_t v = totals[t];
      totals[t] = running;
      running += v;
    }
  }
  __syncthreads();
  int32_t running = totals[threadIdx.x];
  for (int64_t i = begin; i < end; ++i) {
    int32_t v = hist[i];
    hist[i] = running;
    running += v;
  }
}

__global__ void digitScatter(const int32_t *keys, const int32_t *order,
                             int64_t n, int shift, const int32_t *offsets,
                             int64_t tiles, int32_t *sorted) {
  __shared__ int32_t digits[kThreads];
  int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  int32_t row = i < n ? rowAt(order, i) : 0;
  int32_t digit = i < n ? (keys[row] >> shift) & (kDigits - 1) : -1;
  digits[threadIdx.x] = digit;
  __syncthreads();
  if (i >= n)
    return;
  int32_t rank = 0; // earlier rows of this tile with the same digit
  for (unsigned j = 0; j < threadIdx.x; ++j)
    rank += digits[j] == digit;
  sorted[offsets[digit * tiles + blockIdx.x] + rank] = row;
}

} // namespace

int64_t sortRowsWorkspace(int64_t n) {
  return 2 * n + kDigits * ((n + kThreads - 1) / kThreads);
}

const int32_t *sortRowsByKey(cudaStream_t s, const int32_t *keys, int64_t n,
                             int32_t maxKey, int32_t *workspace) {
  int64_t tiles = (n + kThreads - 1) / kThreads;
  int32_t *buffers[2] = {workspace, workspace + n};
  int32_t *hist = workspace + 2 * n;
  int bits = 0;
  while (bits < 31 && (maxKey >> bits) != 0)
    ++bits;
  int passes = bits <= 8 ? 1 : (bits + 7) / 8; // one pass even for one key
  const int32_t *order = nullptr;              // the identity
  for (int p = 0; p < passes; ++p) {
    launch("embedding_grad (sort: histogram)", digitHistogram,
           dim3(gridDimension(tiles, kMaxGridX, "sort")), dim3(kThreads), 0, s,
           keys, order, n, 8 * p, hist, tiles);
    launch("embedding_grad (sort: scan)", exclusiveScan, dim3(1),
           dim3(kThreads), 0, s, hist, kDigits * tiles);
    launch("embedding_grad (sort: scatter)", digitScatter, dim3(tiles),
           dim3(kThreads), 0, s, keys, order, n, 8 * p,
           static_cast<const int32_t *>(hist), tiles, buffers[p % 2]);
    order = buffers[p % 2];
  }
  return order;
}

} // namespace ferry::cuda
