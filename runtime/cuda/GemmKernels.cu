// ferry's CUDA kernels (CudaKernels.h declares them all). GEMMs through cuBLAS
// (GemmStridedBatchedEx): fp32, and bf16/fp16 inputs rounded into the
// workspace first; cuBLASLt with epilogues is in LtGemm.cpp.
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/KernelCommon.cuh"

#include <cublas_v2.h>

namespace ferry::cuda {

void gemmEx(const Cublas &cublas, cudaStream_t stream, int64_t batch,
            int64_t m, int64_t n, int64_t k, bool transA, bool transB,
            float alpha, const void *a, int64_t strideA, const void *b,
            int64_t strideB, float beta, float *c, int64_t strideC,
            int inputType, bool bf16Out) {
  // cuBLAS takes int dimensions: a larger one would wrap.
  for (int64_t v : {batch, m, n, k})
    if (v > 2147483647)
      throw std::runtime_error("cuBLAS gemm: a dimension of " +
                               std::to_string(v) + " exceeds cuBLAS's int");
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  cudaDataType_t type = inputType == 1   ? CUDA_R_16BF
                        : inputType == 2 ? CUDA_R_16F
                                         : CUDA_R_32F;
  // The stream, then the workspace again (see Cublas in CudaKernels.h).
  if (cublasSetStream(cublas.handle, stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(cublas.handle, cublas.workspace,
                         cublas.workspaceBytes) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cuBLAS refused its stream or workspace");
  ++launchCount();
  cublasStatus_t status = cublasGemmStridedBatchedEx(
      cublas.handle, transB ? CUBLAS_OP_T : CUBLAS_OP_N,
      transA ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n),
      static_cast<int>(m), static_cast<int>(k), &alpha, b, type,
      static_cast<int>(transB ? k : n), strideB, a, type,
      static_cast<int>(transA ? m : k), strideA, &beta, c,
      bf16Out ? CUDA_R_16BF : CUDA_R_32F,
      static_cast<int>(n), strideC, static_cast<int>(batch), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cuBLAS gemm failed with status " +
                             std::to_string(static_cast<int>(status)));
}

void gemm(const Cublas &cublas, cudaStream_t stream, int64_t batch, int64_t m,
          int64_t n, int64_t k, bool transA, bool transB, float alpha,
          const float *a, int64_t strideA, const float *b, int64_t strideB,
          float beta, float *c, int64_t strideC) {
  gemmEx(cublas, stream, batch, m, n, k, transA, transB, alpha, a, strideA, b,
         strideB, beta, c, strideC, 0);
}

void gemmBf16(const Cublas &cublas, cudaStream_t stream, int64_t batch,
              int64_t m, int64_t n, int64_t k, bool transA, bool transB,
              float alpha, const float *a, int64_t strideA, const float *b,
              int64_t strideB, float beta, float *c, int64_t strideC,
              void *workspace, bool fp16) {
  int64_t extentA = (batch - 1) * strideA + m * k;
  int64_t extentB = (batch - 1) * strideB + k * n;
  // Both 16-bit types are 2 bytes: the same workspace layout.
  auto *wa = static_cast<uint16_t *>(workspace);
  uint16_t *wb = wa + extentA;
  roundToHalf(stream, a, wa, extentA, fp16);
  roundToHalf(stream, b, wb, extentB, fp16);
  gemmEx(cublas, stream, batch, m, n, k, transA, transB, alpha, wa, strideA, wb,
         strideB, beta, c, strideC, fp16 ? 2 : 1);
}

} // namespace ferry::cuda
