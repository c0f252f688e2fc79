// What the CUDA backend's typed kernel bodies are given: run(Context &,
// const XArgs &) per kernel, in the file of its op family
// (MemoryRuns.cpp, ...: the family's typed launchers, host code beside its
// *Kernels.cu), declared once for all by the generated
// KernelRuns.inc and reached through the generated dispatch
// (runtime/executable/KernelArgs.h) from CudaBackend's dispatch(). Host
// code: the bodies launch the family's kernels (CudaKernels.h) on `stream`.
#pragma once

#include "runtime/executable/KernelArgs.h"

#include <cuda_runtime.h>

namespace ferry::cuda {

// The backend state a kernel body may use. The families still in
// CudaBackend's switch need more of the backend; this grows as they move
// onto typed arguments.
struct KernelContext {
  cudaStream_t stream = nullptr; // the compute stream (may be capturing)
  double *scratch = nullptr;     // kScratchDoubles doubles (CudaKernels.h)
};
using Context = KernelContext;

// Throws RuntimeError naming `what` when `e` is an error.
void checkCuda(cudaError_t e, const char *what);

#include "runtime/executable/KernelRuns.inc"

} // namespace ferry::cuda
