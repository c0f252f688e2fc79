// The Memory family on CUDA (dialects/rt/kernels/Memory.td): copy, fill,
// iota and fill_i32, as run(Context &, const XArgs &). Host code: fill,
// fill_i32 and iota launch ElementwiseKernels.cu's grids; copy is a
// device-to-device memcpy, in pieces when its ranges overlap.
#include "runtime/Error.h"
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.h"

#include <fmt/format.h>

#include <algorithm>

namespace ferry::cuda {

void checkCuda(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw RuntimeError(
        fmt::format("CUDA {} failed: {}", what, cudaGetErrorString(e)));
}

void missingWorkspace(const char *kernel) {
  throw RuntimeError(fmt::format(
      "{} has no workspace buffer, which the CUDA backend needs: the "
      "executable was compiled by an earlier ferry; compile it again "
      "(ferry compile, or ferry train --no-cache)",
      kernel));
}

namespace {

// memmove on the stream, without allocating (a graph may be capturing): in
// pieces no longer than the distance between the ranges, in the direction
// that reads each piece before it is overwritten; a range far longer than
// the distance goes through the scratch in pieces.
void copyOverlapping(Context &cx, char *dst, const char *src, int64_t bytes) {
  int64_t distance = dst > src ? dst - src : src - dst;
  int64_t piece = distance;
  int64_t stage = kScratchDoubles * 8;
  bool staged = bytes / distance > 64;
  if (staged)
    piece = stage;
  int64_t pieces = (bytes + piece - 1) / piece;
  for (int64_t k = 0; k < pieces; ++k) {
    // Forward when the destination is below the source, else backward.
    int64_t at = dst < src ? k * piece : (pieces - 1 - k) * piece;
    int64_t n = std::min(piece, bytes - at);
    if (!staged) {
      checkCuda(memcpyAsync(dst + at, src + at, n, cudaMemcpyDeviceToDevice,
                            cx.stream),
                "copy");
      continue;
    }
    auto *scratch = reinterpret_cast<char *>(cx.scratch);
    checkCuda(
        memcpyAsync(scratch, src + at, n, cudaMemcpyDeviceToDevice, cx.stream),
        "copy");
    checkCuda(
        memcpyAsync(dst + at, scratch, n, cudaMemcpyDeviceToDevice, cx.stream),
        "copy");
  }
}

} // namespace

void run(Context &cx, const kernels::CopyArgs &a) {
  const char *src = a.src.data;
  char *dst = a.dst.data;
  if (src == dst || a.bytes <= 0)
    return;
  if (src < dst + a.bytes && dst < src + a.bytes) {
    copyOverlapping(cx, dst, src, a.bytes);
    return;
  }
  checkCuda(memcpyAsync(dst, src, a.bytes, cudaMemcpyDeviceToDevice, cx.stream),
            "copy");
}

void run(Context &cx, const kernels::FillArgs &a) {
  fill(cx.stream, a.dst.data, a.count, static_cast<float>(a.value));
}

void run(Context &cx, const kernels::IotaArgs &a) {
  iota(cx.stream, a.out.data, a.outer, a.size, a.inner);
}

void run(Context &cx, const kernels::FillI32Args &a) {
  fillInt(cx.stream, a.dst.data, a.count, static_cast<int32_t>(a.value));
}

} // namespace ferry::cuda
