// The Layout family on the CPU (dialects/rt/kernels/Layout.td): take,
// take_grad, transpose and broadcast, as run(Context &, const XArgs &). The
// loops are in CpuElementwiseKernels.cpp and CpuReductionKernels.cpp
// (CpuKernels.h).
#include "runtime/Error.h"
#include "runtime/cpu/CpuKernelContext.h"
#include "runtime/cpu/CpuKernels.h"

namespace ferry::cpu {

void run(Context &, const kernels::TakeArgs &a) {
  take(a.x.data, a.out.data, a.outer, a.size, a.inner, a.index);
}

void run(Context &, const kernels::TakeGradArgs &a) {
  takeGrad(a.dy.data, a.dx.data, a.outer, a.size, a.inner, a.index);
}

void run(Context &, const kernels::TransposeArgs &a) {
  // The record's checks ran: 1 <= rank <= 6 and the shape holds 2 * rank.
  if (a.rank < 1 || a.rank > 6 ||
      a.shape.size < static_cast<size_t>(2 * a.rank))
    throw RuntimeError("transpose with a malformed shape");
  int64_t dims[6], perm[6];
  for (int64_t d = 0; d < a.rank; ++d) {
    dims[d] = a.shape[static_cast<size_t>(d)];
    perm[d] = a.shape[static_cast<size_t>(a.rank + d)];
  }
  transpose(a.x.data, a.out.data, static_cast<int32_t>(a.rank), dims, perm);
}

void run(Context &, const kernels::BroadcastArgs &a) {
  broadcast(a.x.data, a.out.data, a.outer, a.size, a.inner);
}

} // namespace ferry::cpu
