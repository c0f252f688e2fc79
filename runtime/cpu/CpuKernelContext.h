// What the CPU backend's typed kernel bodies are given: run(Context &,
// const XArgs &) per kernel, in the file of its op family
// (CpuMemoryKernels.cpp, ...), declared once for all by the generated
// KernelRuns.inc and reached through the generated dispatch
// (runtime/executable/KernelArgs.h). Buffers stored as bf16 arrive as the
// fp32 copies Bf16Staging makes, so a CPU body always sees fp32.
#pragma once

#include "runtime/executable/KernelArgs.h"
#include "runtime/kernels/DropoutKeys.h"

namespace ferry {
class Collectives; // runtime/backend/Collectives.h
} // namespace ferry

namespace ferry::cpu {

// The backend state a kernel body may use: the replica group, for the
// collectives.
struct KernelContext {
  const Collectives *collectives = nullptr;
};
using Context = KernelContext;

// This process's rank in the tensor-parallel group and the group's size (0
// and 1 without one): where its part of a split table or of split classes
// lies.
int64_t tensorRank(const Context &cx);
int64_t tensorSize(const Context &cx);
// Throws RuntimeError naming `what`, the value and its slot when an index
// from the data is outside [0, limit) (CpuIndexedKernels.cpp).
void checkIndices(const char *what, const int32_t *values, int64_t count,
                  int64_t limit);

#include "runtime/executable/KernelRuns.inc"

} // namespace ferry::cpu
