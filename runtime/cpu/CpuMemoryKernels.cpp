// The Memory family on the CPU (dialects/rt/kernels/Memory.td): copy, fill,
// iota and fill_i32, as run(Context &, const XArgs &). The loops are in
// CpuElementwiseKernels.cpp (CpuKernels.h), which other kernels share.
#include "runtime/cpu/CpuKernelContext.h"
#include "runtime/cpu/CpuKernels.h"

#include <cstring>

namespace ferry::cpu {

void run(Context &, const kernels::CopyArgs &a) {
  if (a.src.data != a.dst.data) // overlapping ranges are allowed
    std::memmove(a.dst.data, a.src.data, static_cast<size_t>(a.bytes));
}

void run(Context &, const kernels::FillArgs &a) {
  fill(a.dst.data, a.count, static_cast<float>(a.value));
}

void run(Context &, const kernels::IotaArgs &a) {
  iota(a.out.data, a.outer, a.size, a.inner);
}

void run(Context &, const kernels::FillI32Args &a) {
  fillInt(a.dst.data, a.count, static_cast<int32_t>(a.value));
}

} // namespace ferry::cpu
