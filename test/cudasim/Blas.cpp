// ferry's CUDA simulator: cuBLAS's cublasGemmStridedBatchedEx, as NVIDIA's
// cuBLAS documentation specifies it (section "cublasGemmStridedBatchedEx"):
// the argument checks return its documented statuses, the arithmetic is
// fp32 through OpenBLAS. Test-only.
#include "Blas.h"
#include "Sim.h"

#include <cblas.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

struct cublasContext {
  cudaStream_t stream = nullptr;
  // A workspace of the caller's (cublasSetWorkspace), or cuBLAS's default
  // pool, which cublasSetStream returns the handle to.
  bool ownWorkspace = false;
  bool used = false; // a GEMM has run: the library's first call is past
};

namespace cudasim {

size_t elementBytes(cudaDataType_t type) { return type == CUDA_R_32F ? 4 : 2; }
bool knownType(cudaDataType_t type) {
  return type == CUDA_R_32F || type == CUDA_R_16F || type == CUDA_R_16BF;
}

float loadAsFloat(const void *base, int64_t i, cudaDataType_t type) {
  switch (type) {
  case CUDA_R_16BF:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(base)[i]);
  case CUDA_R_16F:
    return __half2float(static_cast<const __half *>(base)[i]);
  default:
    return static_cast<const float *>(base)[i];
  }
}

void gemmColumnMajor(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                     float alpha, const void *a, int64_t lda, const void *b,
                     int64_t ldb, cudaDataType_t inputType, float beta,
                     float *c, int64_t ldc) {
  if (beta == 0.0f)
    for (int64_t j = 0; j < n; ++j)
      std::memset(c + j * ldc, 0, static_cast<size_t>(m) * 4);
  if (m == 0 || n == 0 || k == 0) {
    if (beta != 0.0f && beta != 1.0f)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i)
          c[j * ldc + i] *= beta;
    return;
  }
  std::vector<float> wideA, wideB;
  const float *fa = static_cast<const float *>(a);
  const float *fb = static_cast<const float *>(b);
  if (inputType != CUDA_R_32F) {
    int64_t spanA = spanOf(transA ? k : m, transA ? m : k, lda);
    int64_t spanB = spanOf(transB ? n : k, transB ? k : n, ldb);
    wideA.resize(static_cast<size_t>(spanA));
    wideB.resize(static_cast<size_t>(spanB));
    for (int64_t i = 0; i < spanA; ++i)
      wideA[i] = loadAsFloat(a, i, inputType);
    for (int64_t i = 0; i < spanB; ++i)
      wideB[i] = loadAsFloat(b, i, inputType);
    fa = wideA.data();
    fb = wideB.data();
  }
  cblas_sgemm(CblasColMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, fa,
              static_cast<int>(lda), fb, static_cast<int>(ldb),
              beta == 0.0f ? 0.0f : beta, c, static_cast<int>(ldc));
}

void gemmColumnMajorTo(bool transA, bool transB, int64_t m, int64_t n,
                       int64_t k, float alpha, const void *a, int64_t lda,
                       const void *b, int64_t ldb, cudaDataType_t inputType,
                       float beta, void *c, int64_t ldc,
                       cudaDataType_t outputType) {
  if (outputType == CUDA_R_32F) {
    gemmColumnMajor(transA, transB, m, n, k, alpha, a, lda, b, ldb, inputType,
                    beta, static_cast<float *>(c), ldc);
    return;
  }
  std::vector<float> wide(static_cast<size_t>(spanOf(m, n, ldc)));
  if (beta != 0.0f)
    for (size_t i = 0; i < wide.size(); ++i)
      wide[i] = loadAsFloat(c, static_cast<int64_t>(i), outputType);
  gemmColumnMajor(transA, transB, m, n, k, alpha, a, lda, b, ldb, inputType,
                  beta, wide.data(), ldc);
  auto *out = static_cast<uint16_t *>(c);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      float v = wide[static_cast<size_t>(j * ldc + i)];
      out[j * ldc + i] = outputType == CUDA_R_16BF
                             ? __float2bfloat16_rn(v).__x
                             : __float2half_rn(v).__x;
    }
}

namespace {
std::set<cublasHandle_t> &handles() {
  static std::set<cublasHandle_t> all;
  return all;
}
} // namespace

} // namespace cudasim

using namespace cudasim;

cublasStatus_t cublasCreate(cublasHandle_t *handle) {
  if (!handle)
    return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasContext;
  handles().insert(*handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (!handles().erase(handle))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!handles().count(handle))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  // NVIDIA's cuBLAS documentation: cublasSetStream "unconditionally resets
  // the cuBLAS library workspace back to the default workspace pool".
  handle->ownWorkspace = false;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace,
                                  size_t bytes) {
  if (!handles().count(handle))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes % 256 != 0 || (bytes > 0 && !workspace))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (bytes > 0)
    cudasim::requireDevice(workspace, bytes, "cublasSetWorkspace");
  handle->ownWorkspace = bytes > 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
    int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype,
    int lda, long long int strideA, const void *B, cudaDataType Btype, int ldb,
    long long int strideB, const void *beta, void *C, cudaDataType Ctype,
    int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  if (!handles().count(handle))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  // The documented INVALID_VALUE conditions.
  bool ta = transa != CUBLAS_OP_N, tb = transb != CUBLAS_OP_N;
  if ((transa != CUBLAS_OP_N && transa != CUBLAS_OP_T) ||
      (transb != CUBLAS_OP_N && transb != CUBLAS_OP_T) || m < 0 || n < 0 ||
      k < 0 || batchCount < 0 || !alpha || !beta ||
      lda < std::max(1, ta ? k : m) || ldb < std::max(1, tb ? n : k) ||
      ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  // Types: A and B alike; with CUBLAS_COMPUTE_32F, fp32 C for every input
  // type ferry uses, or C of the inputs' 16-bit type (the table of
  // cublasGemmEx).
  if (computeType != CUBLAS_COMPUTE_32F || Atype != Btype ||
      !knownType(Atype) || (Ctype != CUDA_R_32F && Ctype != Atype) ||
      algo != CUBLAS_GEMM_DEFAULT)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0 || batchCount == 0)
    return CUBLAS_STATUS_SUCCESS;
  float a = *static_cast<const float *>(alpha);
  float b = *static_cast<const float *>(beta);
  size_t in = elementBytes(Atype), outBytes = elementBytes(Ctype);
  // Every matrix of the batch must lie in device memory.
  for (int i = 0; i < batchCount; ++i) {
    if (k > 0) {
      requireDevice(static_cast<const char *>(A) + i * strideA * in,
                    spanOf(ta ? k : m, ta ? m : k, lda) * in, "cuBLAS gemm A");
      requireDevice(static_cast<const char *>(B) + i * strideB * in,
                    spanOf(tb ? n : k, tb ? k : n, ldb) * in, "cuBLAS gemm B");
    }
    requireDevice(static_cast<char *>(C) + i * strideC * outBytes,
                  spanOf(m, n, ldc) * outBytes, "cuBLAS gemm C");
  }
  // Under stream capture: the default pool allocates (also inside the
  // capture, where ferry's programs allocate nothing), and the library's
  // first call sets itself up, which NVIDIA does not promise is capturable.
  if (streamOf(handle->stream)->capture) {
    if (!handle->ownWorkspace)
      fail("cublasGemmStridedBatchedEx on a capturing stream with cuBLAS's "
           "default workspace pool, which allocates: cublasSetStream resets "
           "the handle's workspace to that pool (NVIDIA's cuBLAS "
           "documentation), so call cublasSetWorkspace after it");
    if (!handle->used)
      fail("a cuBLAS handle's first GEMM is under stream capture: run the "
           "work once outside a capture first (the library's first call "
           "sets itself up)");
  }
  handle->used = true;
  enqueue(handle->stream, "cublasGemmStridedBatchedEx", [=] {
    for (int i = 0; i < batchCount; ++i)
      gemmColumnMajorTo(ta, tb, m, n, k, a,
                        static_cast<const char *>(A) + i * strideA * in, lda,
                        static_cast<const char *>(B) + i * strideB * in, ldb,
                        Atype, b, static_cast<char *>(C) + i * strideC * outBytes,
                        ldc, Ctype);
  });
  return CUBLAS_STATUS_SUCCESS;
}
