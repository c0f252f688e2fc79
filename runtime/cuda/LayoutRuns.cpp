// The Layout family on CUDA (dialects/rt/kernels/Layout.td): take,
// take_grad, transpose and broadcast, as run(Context &, const XArgs &). Host
// code launching ElementwiseKernels.cu's grids; take and transpose read and
// write bf16-stored buffers (bits 0 and 1: x and out).
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/CudaKernels.h"

namespace ferry::cuda {
namespace {

uint64_t bf16Bits(bool x, bool out) { return (x ? 1u : 0u) | (out ? 2u : 0u); }

} // namespace

void run(Context &cx, const kernels::TakeArgs &a) {
  take(cx.stream, a.x.data, a.out.data, a.outer, a.size, a.inner, a.index,
       bf16Bits(a.x.bf16, a.out.bf16));
}

void run(Context &cx, const kernels::TakeGradArgs &a) {
  takeGrad(cx.stream, a.dy.data, a.dx.data, a.outer, a.size, a.inner, a.index);
}

void run(Context &cx, const kernels::TransposeArgs &a) {
  // The record's checks ran: 1 <= rank <= 6 and the shape holds 2 * rank.
  int64_t dims[6], perm[6];
  for (int64_t d = 0; d < a.rank && d < 6; ++d) {
    dims[d] = a.shape[static_cast<size_t>(d)];
    perm[d] = a.shape[static_cast<size_t>(a.rank + d)];
  }
  transpose(cx.stream, a.x.data, a.out.data, static_cast<int32_t>(a.rank), dims,
            perm, bf16Bits(a.x.bf16, a.out.bf16));
}

void run(Context &cx, const kernels::BroadcastArgs &a) {
  broadcast(cx.stream, a.x.data, a.out.data, a.outer, a.size, a.inner);
}

} // namespace ferry::cuda
