// One `gemm` / `gemm_epilogue` instruction on the CUDA backend: its operands
// as the executable gives them (fp32, or bf16 where the call's mask says:
// training.bf16_activations), rounded into the planned workspace where
// the products are 16-bit and the operand is fp32, a bf16 result written
// by the library (no epilogue) or through the workspace in fp32 (with an
// epilogue, whose vector would have to be bf16 for the library), then
// cuBLASLt (with the epilogue) or, when it has no algorithm, cuBLAS and the
// epilogue as its own kernel.
#pragma once

#include "runtime/cuda/LtGemm.h"

#include <cstdint>

namespace ferry::cuda {

struct Cublas; // CudaKernels.h

struct GemmInstr {
  GemmCall call; // shape, strides, alpha, beta, inputType, epilogue, vector
  char *a = nullptr, *b = nullptr, *c = nullptr;
  bool bf16A = false, bf16B = false, bf16C = false;
  char *workspace = nullptr; // null: none planned
  int64_t workspaceBytes = 0;
};

// Which library ran the product: cuBLASLt (with its epilogue), or cuBLAS
// with the epilogue as ferry's own kernel (cuBLASLt had no algorithm).
enum class GemmPath { None, Lt, Fallback };

// Throws RuntimeError when the workspace cannot hold what the call needs
// (a damaged executable). Returns the path taken (None: an empty product).
GemmPath runGemmInstr(const GemmInstr &instr, LtGemm &lt, const Cublas &cublas,
                      double *scratch, cudaStream_t s);

} // namespace ferry::cuda
