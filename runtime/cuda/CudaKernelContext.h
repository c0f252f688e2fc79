// What the CUDA backend's typed kernel bodies are given: run(Context &,
// const XArgs &) per kernel, in the file of its op family
// (MemoryRuns.cpp, ...: the family's typed launchers, host code beside its
// *Kernels.cu), declared once for all by the generated
// KernelRuns.inc and reached through the generated dispatch
// (runtime/executable/KernelArgs.h) from CudaBackend's dispatch(). Host
// code: the bodies launch the family's kernels (CudaKernels.h) on `stream`.
#pragma once

#include "runtime/executable/KernelArgs.h"
#include "runtime/kernels/StepValue.h"

#include <cuda_runtime.h>

#include <initializer_list>

namespace ferry {
class Collectives; // runtime/backend/Collectives.h
} // namespace ferry

namespace ferry::cuda {

// The per-run values of the call being run, for the bodies of kernels with
// per-step integers (StepTable.h): the backend implements it for each call.
class CallSteps {
public:
  // A per-step integer as the kernel reads it on the device in every run
  // (its affine form over the step table's input registers), so that a
  // captured graph replays each run's value.
  virtual StepValue stepValue(const kernels::StepInt &integer) const = 0;
  // The call's scalars the host derives for each run, in the step table:
  // a learning rate, or Adam's two bias corrections.
  virtual const float *stepScalars() const = 0;

protected:
  ~CallSteps() = default;
};

// The backend state a kernel body may use.
struct Cublas;   // CudaKernels.h
class LtGemm;    // LtGemm.h
class NcclGroup; // NcclGroup.h

struct KernelContext {
  cudaStream_t stream = nullptr;    // the compute stream (may be capturing)
  double *scratch = nullptr;        // kScratchDoubles doubles (CudaKernels.h)
  const CallSteps *steps = nullptr; // the running call's per-run values
  LtGemm *lt = nullptr;             // cuBLASLt, for the GEMMs
  const Cublas *cublas = nullptr;   // cuBLAS, where cuBLASLt has no algorithm
  const Collectives *collectives = nullptr; // the replica group's checks
  NcclGroup *nccl = nullptr; // the collectives (null: the program has none)
  NcclGroup *tensorNccl = nullptr; // the tensor group's (null: none)
};
using Context = KernelContext;

// Throws RuntimeError naming `what` when `e` is an error.
void checkCuda(cudaError_t e, const char *what);

// The bf16 mask the row, gather and attention kernels take (bit b: buffer
// b of the call is stored as bf16), from their buffers' flags in the
// record's order (as far as the last one that may be bf16).
inline uint64_t bf16Bits(std::initializer_list<bool> flags) {
  uint64_t bits = 0, bit = 1;
  for (bool flag : flags) {
    bits |= flag ? bit : 0;
    bit <<= 1;
  }
  return bits;
}

// A workspace the compiler plans for a CUDA body (its sums in a fixed
// order; the records mark it optional, as the CPU bodies do without it):
// executables compiled before it existed lack it, which is an error saying
// to recompile.
[[noreturn]] void missingWorkspace(const char *kernel);
template <class T>
T *needWorkspace(const kernels::Buffer<T> &workspace, const char *kernel) {
  if (!workspace)
    missingWorkspace(kernel);
  return workspace.data;
}

#include "runtime/executable/KernelRuns.inc"

} // namespace ferry::cuda
