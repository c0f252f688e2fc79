// One gemm / gemm_epilogue instruction on the CUDA backend (GemmInstr.h).
#include "runtime/cuda/GemmInstr.h"

#include "runtime/Error.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.h"

#include <cuda_runtime.h>

#include <algorithm>

namespace ferry::cuda {
namespace {

void checkZero(cudaError_t e) {
  if (e != cudaSuccess)
    throw RuntimeError(std::string("CUDA gemm (zeroing c) failed: ") +
                       cudaGetErrorString(e));
}

} // namespace

GemmPath runGemmInstr(const GemmInstr &instr, LtGemm &lt, const Cublas &cublas,
                      double *scratch, cudaStream_t s) {
  GemmCall g = instr.call;
  g.a = instr.a, g.b = instr.b, g.c = reinterpret_cast<float *>(instr.c);
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0)
    return GemmPath::None;
  char *workspace = instr.workspace;
  int64_t workspaceBytes = workspace ? instr.workspaceBytes : 0;
  if ((instr.bf16A || instr.bf16B || instr.bf16C) &&
      (g.inputType != 1 || !workspace))
    throw RuntimeError("gemm: a bf16-stored operand needs bf16 products and "
                       "the planned workspace; the executable is damaged: "
                       "recompile it");
  // Offsets in the workspace rounded up to 256 bytes (what cuBLASLt's
  // fastest kernels and its scratch want; the arena aligns to 64).
  auto align = [&](int64_t offset) {
    auto address = reinterpret_cast<uintptr_t>(workspace) + offset;
    return offset + static_cast<int64_t>((256 - address % 256) % 256);
  };
  // The workspace: 16-bit copies of A and B (2 bytes per element of the 4
  // planned, so the alignment padding fits), then the fp32 result when c
  // is stored as bf16, then cuBLASLt's scratch.
  int64_t extentA = (g.batch - 1) * g.strideA + g.m * g.k;
  int64_t extentB = (g.batch - 1) * g.strideB + g.k * g.n;
  int64_t extentC = (g.batch - 1) * g.strideC + g.m * g.n;
  bool rounded = g.inputType != 0 && workspace;
  int64_t used = 0, offsetA = 0, offsetB = 0;
  if (rounded) {
    if (4 * (extentA + extentB) > workspaceBytes)
      throw RuntimeError("gemm: the bf16 workspace is too small; the "
                         "executable is damaged: recompile it");
    offsetA = align(0);
    offsetB = align(offsetA + 2 * extentA);
    if (offsetB + 2 * extentB > workspaceBytes) { // tiny: no room to pad
      offsetA = 0;
      offsetB = 2 * extentA;
    }
    used = std::max(4 * (extentA + extentB), offsetB + 2 * extentB);
  } else {
    g.inputType = 0;
  }
  float *staged = nullptr; // the fp32 result of a bf16 c
  // Without an epilogue the library writes a bf16 c itself (converting its
  // fp32 result once); with one, its vector would have to be bf16 too, so
  // the result goes through the workspace in fp32 instead.
  g.bf16Out = instr.bf16C && g.epilogue == 0;
  if (instr.bf16C && !g.bf16Out) {
    int64_t offsetC = align(used);
    if (offsetC + 4 * extentC > workspaceBytes)
      throw RuntimeError("gemm: the workspace has no room for the fp32 "
                         "result of a bf16 c; the executable is damaged: "
                         "recompile it");
    staged = reinterpret_cast<float *>(workspace + offsetC);
    if (g.beta != 0.0f) // accumulating: c's values first
      expandBf16(s, instr.c, staged, extentC);
    g.c = staged;
    used = offsetC + 4 * extentC;
  }
  auto finish = [&] {
    if (staged) // rounded once, as the CPU's emulation
      roundToHalf(s, staged, instr.c, extentC, false);
  };
  if (g.k <= 0) { // an empty product (cuBLAS rejects ld = 0), as the CPU
    if (g.beta == 0.0f && g.bf16Out)
      checkZero(memsetAsync(instr.c, 0, static_cast<size_t>(extentC) * 2, s));
    else if (g.beta == 0.0f)
      fill(s, g.c, extentC, 0.0f);
    if (g.epilogue == 1)
      biasAdd(s, g.c, g.vector, g.c, g.batch * g.m, g.n);
    else if (g.epilogue == 2)
      fill(s, g.vector, g.m, 0.0f);
    finish();
    return GemmPath::None;
  }
  // An operand stored as bf16 is read where it is: no copy.
  if (rounded) {
    if (!instr.bf16A)
      roundToHalf(s, reinterpret_cast<const float *>(instr.a),
                  workspace + offsetA, extentA, g.inputType == 2);
    if (!instr.bf16B)
      roundToHalf(s, reinterpret_cast<const float *>(instr.b),
                  workspace + offsetB, extentB, g.inputType == 2);
    g.a = instr.bf16A ? static_cast<void *>(instr.a) : workspace + offsetA;
    g.b = instr.bf16B ? static_cast<void *>(instr.b) : workspace + offsetB;
  }
  if (workspace && workspaceBytes > align(used)) {
    g.workspace = workspace + align(used);
    g.workspaceBytes = static_cast<size_t>(workspaceBytes - align(used));
  }
  // The bias gradient is the sum of A as stored (as on the CPU): an fp32 A
  // with 16-bit products would be summed by cuBLASLt from its rounded copy,
  // so that sum is its own kernel; a bf16-stored A is what cuBLASLt reads.
  auto sumA = [&] {
    if (!instr.bf16A) {
      reduce(s, 0, reinterpret_cast<const float *>(instr.a), g.vector, 1, g.k,
             g.m, scratch);
      return;
    }
    // The product is done with the workspace's copies: A's fp32 values go
    // where they were (4 bytes an element of A are planned).
    auto *wide = reinterpret_cast<float *>(workspace);
    expandBf16(s, instr.a, wide, extentA);
    reduce(s, 0, wide, g.vector, 1, g.k, g.m, scratch);
  };
  int epilogue = g.epilogue;
  if (epilogue == 2 && g.inputType != 0 && !instr.bf16A)
    g.epilogue = 0;
  if (lt.run(g, s)) {
    if (epilogue == 2 && g.epilogue == 0)
      sumA();
    finish();
    return GemmPath::Lt;
  }
  g.epilogue = epilogue;
  // No cuBLASLt algorithm for this call: the GEMM, then the epilogue as its
  // own kernel.
  gemmEx(cublas, s, g.batch, g.m, g.n, g.k, g.transA, g.transB, g.alpha, g.a,
         g.strideA, g.b, g.strideB, g.beta, g.c, g.strideC, g.inputType,
         g.bf16Out);
  if (g.epilogue == 1)
    biasAdd(s, g.c, g.vector, g.c, g.batch * g.m, g.n);
  else if (g.epilogue == 2) // ferry's A is [k, m]: sum its rows
    sumA();
  finish();
  return GemmPath::Fallback;
}

} // namespace ferry::cuda
