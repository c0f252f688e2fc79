// What the CPU backend's typed kernel bodies are given: run(Context &,
// const XArgs &) per kernel, in the file of its op family
// (CpuMemoryKernels.cpp, ...), declared once for all by the generated
// KernelRuns.inc and reached through the generated dispatch
// (runtime/executable/KernelArgs.h). Buffers stored as bf16 arrive as the
// fp32 copies Bf16Staging makes, so a CPU body always sees fp32.
#pragma once

#include "runtime/executable/KernelArgs.h"

namespace ferry::cpu {

// The backend state a kernel body may use. The families still in
// CpuBackend::execute's switch need the backend's own members; this grows
// as they move onto typed arguments.
struct KernelContext {};
using Context = KernelContext;

#include "runtime/executable/KernelRuns.inc"

} // namespace ferry::cpu
