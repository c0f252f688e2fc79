// ferry's CUDA simulator: the cuBLASLt calls ferry makes, as NVIDIA's
// cuBLASLt documentation specifies them (sections cublasLtMatmul,
// cublasLtMatmulAlgoGetHeuristic, cublasLtMatmulDescAttributes_t,
// cublasLtEpilogue_t, cublasLtMatrixLayoutCreate). Every documented
// constraint ferry's calls could break is checked and answered with the
// documented status; docs/cuda-simulator.md lists them. The "algorithm" the
// heuristic returns records what it was promised (the pointers' alignments,
// the bias pointer's alignment, the workspace), and cublasLtMatmul refuses
// a call that breaks the promise, as the real algorithm would fail.
//
// FERRY_CUDA_SIM_LT_NO_ALGO=1 makes the heuristic find nothing (as the real
// one does for shapes and epilogues its kernels do not cover), so that
// ferry's fallback path runs. Test-only.
#include "Blas.h"
#include "Sim.h"

#include <cublasLt.h>

#include <cstdlib>
#include <cstring>
#include <set>

struct cublasLtContext {
  bool used = false; // a matmul has run: the library's first call is past
};
struct cublasLtMatmulDescOpaque_st {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  int32_t biasType = -1; // -1: D's type
  int64_t biasBatchStride = 0;
};
struct cublasLtMatrixLayoutOpaque_st {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct cublasLtMatmulPreferenceOpaque_st {
  uint64_t maxWorkspace = 0;
  uint32_t alignment[4] = {256, 256, 256, 256}; // A, B, C, D (documented)
};

namespace cudasim {
namespace {

std::set<cublasLtHandle_t> &handles() {
  static std::set<cublasLtHandle_t> all;
  return all;
}

// What an algorithm was chosen for (stored in cublasLtMatmulAlgo_t).
struct Promise {
  uint32_t alignment[4]; // A, B, C, D
  uint32_t biasAlignment;
  uint64_t workspace;
  uint64_t magic;
};
constexpr uint64_t kMagic = 0xfe77c0da51a1c0deull;
static_assert(sizeof(Promise) <= sizeof(cublasLtMatmulAlgo_t));

uint32_t alignmentOf(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && address % a != 0)
    a /= 2;
  return a;
}

template <typename T>
cublasStatus_t setValue(T &field, const void *buf, size_t size) {
  if (!buf || size != sizeof(T))
    return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

// The shape of a matmul from its descriptors, or the documented status.
struct Shape {
  int64_t m, n, k;
  cudaDataType_t in, out, bias;
  int32_t batch;
};
cublasStatus_t shapeOf(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                       cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                       cublasLtMatrixLayout_t d, Shape &s) {
  if (!op || !a || !b || !c || !d)
    return CUBLAS_STATUS_INVALID_VALUE;
  // The datatype table of cublasLtMatmul, the rows ferry can use: compute
  // and scale fp32; A and B alike; fp32 inputs with fp32 C/D, 16-bit
  // inputs with C/D of their own type or fp32; C and D of one type.
  if (op->compute != CUBLAS_COMPUTE_32F || op->scale != CUDA_R_32F ||
      a->type != b->type || !knownType(a->type) || c->type != d->type ||
      (a->type == CUDA_R_32F && d->type != CUDA_R_32F) ||
      (d->type != CUDA_R_32F && d->type != a->type))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if ((op->transA != CUBLAS_OP_N && op->transA != CUBLAS_OP_T) ||
      (op->transB != CUBLAS_OP_N && op->transB != CUBLAS_OP_T))
    return CUBLAS_STATUS_INVALID_VALUE;
  s.m = static_cast<int64_t>(d->rows);
  s.n = static_cast<int64_t>(d->cols);
  bool ta = op->transA == CUBLAS_OP_T, tb = op->transB == CUBLAS_OP_T;
  s.k = static_cast<int64_t>(ta ? a->rows : a->cols);
  int64_t aRows = ta ? s.k : s.m, aCols = ta ? s.m : s.k;
  int64_t bRows = tb ? s.n : s.k, bCols = tb ? s.k : s.n;
  if (int64_t(a->rows) != aRows || int64_t(a->cols) != aCols ||
      int64_t(b->rows) != bRows || int64_t(b->cols) != bCols ||
      c->rows != d->rows || c->cols != d->cols)
    return CUBLAS_STATUS_INVALID_VALUE;
  // Column-major: ld >= rows (cublasLtMatrixLayoutCreate), all batches
  // alike (C out of place: same rows, columns, batch and order as D).
  for (cublasLtMatrixLayout_t l : {a, b, c, d})
    if (l->ld < std::max<int64_t>(1, int64_t(l->rows)) || l->batch < 1)
      return CUBLAS_STATUS_INVALID_VALUE;
  if (a->batch != d->batch || b->batch != d->batch || c->batch != d->batch)
    return CUBLAS_STATUS_INVALID_VALUE;
  s.batch = d->batch;
  s.in = a->type;
  s.out = d->type;
  s.bias =
      op->biasType == -1 ? d->type : static_cast<cudaDataType_t>(op->biasType);
  switch (op->epilogue) {
  case CUBLASLT_EPILOGUE_DEFAULT:
    break;
  case CUBLASLT_EPILOGUE_BIAS:
  case CUBLASLT_EPILOGUE_BGRADA:
  case CUBLASLT_EPILOGUE_BGRADB:
    // The bias (gradient) has D's type in every row of the table ferry
    // uses (16-bit inputs with fp32 D: an fp32 bias).
    if (s.bias != d->type)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    break;
  default: // epilogues ferry does not use: not simulated
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

bool noAlgorithm() {
  const char *v = std::getenv("FERRY_CUDA_SIM_LT_NO_ALGO");
  return v && *v && std::strcmp(v, "0") != 0;
}

} // namespace
} // namespace cudasim

using namespace cudasim;

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  if (!handle)
    return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasLtContext{};
  handles().insert(*handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (!handles().erase(handle))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (!desc)
    return CUBLAS_STATUS_INVALID_VALUE;
  *desc = new cublasLtMatmulDescOpaque_st{compute, scale};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                               cublasLtMatmulDescAttributes_t attr,
                               const void *buf, size_t size) {
  if (!d)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    return setValue(d->transA, buf, size);
  case CUBLASLT_MATMUL_DESC_TRANSB:
    return setValue(d->transB, buf, size);
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    return setValue(d->epilogue, buf, size);
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    return setValue(d->bias, buf, size);
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    return setValue(d->biasType, buf, size);
  case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
    return setValue(d->biasBatchStride, buf, size);
  default:
    fail("cublasLtMatmulDescSetAttribute: attribute " + std::to_string(attr) +
         " is not simulated");
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (!layout)
    return CUBLAS_STATUS_INVALID_VALUE;
  *layout = new cublasLtMatrixLayoutOpaque_st{type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                 cublasLtMatrixLayoutAttribute_t attr,
                                 const void *buf, size_t size) {
  if (!l)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
    return setValue(l->batch, buf, size);
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
    return setValue(l->stride, buf, size);
  default:
    fail("cublasLtMatrixLayoutSetAttribute: attribute " + std::to_string(attr) +
         " is not simulated");
  }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
  if (!p)
    return CUBLAS_STATUS_INVALID_VALUE;
  *p = new cublasLtMatmulPreferenceOpaque_st{};
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                     cublasLtMatmulPreferenceAttributes_t attr,
                                     const void *buf, size_t size) {
  if (!p)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    return setValue(p->maxWorkspace, buf, size);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    return setValue(
        p->alignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf,
        size);
  default:
    fail("cublasLtMatmulPreferenceSetAttribute: attribute " +
         std::to_string(attr) + " is not simulated");
  }
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
    cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t pref, int requested,
    cublasLtMatmulHeuristicResult_t results[], int *returned) {
  if (!handles().count(handle))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!pref || !results || !returned || requested <= 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  Shape shape;
  if (cublasStatus_t s = shapeOf(op, a, b, c, d, shape))
    return s;
  if (noAlgorithm())
    return CUBLAS_STATUS_NOT_SUPPORTED;
  Promise promise{};
  std::memcpy(promise.alignment, pref->alignment, sizeof promise.alignment);
  // The bias pointer is not read here, but its value sets the alignment
  // the algorithm expects (unset: null, aligned to anything: 256 bytes).
  promise.biasAlignment =
      op->epilogue == CUBLASLT_EPILOGUE_DEFAULT ? 0 : alignmentOf(op->bias);
  // The simulated algorithm takes up to 1 MiB of the workspace it is
  // offered and scribbles over it, so a workspace that overlaps live data
  // shows.
  promise.workspace =
      std::min<uint64_t>(pref->maxWorkspace, 1u << 20) / 256 * 256;
  promise.magic = kMagic;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  std::memcpy(&results[0].algo, &promise, sizeof promise);
  results[0].workspaceSize = promise.workspace;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                              const void *alpha, const void *A,
                              cublasLtMatrixLayout_t a, const void *B,
                              cublasLtMatrixLayout_t b, const void *beta,
                              const void *C, cublasLtMatrixLayout_t c, void *D,
                              cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspaceBytes, cudaStream_t stream) {
  if (!handles().count(handle))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!alpha || !beta || !A || !B || !D || !algo)
    return CUBLAS_STATUS_INVALID_VALUE;
  Shape s;
  if (cublasStatus_t status = shapeOf(op, a, b, c, d, s))
    return status;
  // In place only with one descriptor (stricter since CUDA 13.0 Update 2).
  if (C == D && c != d)
    return CUBLAS_STATUS_INVALID_VALUE;
  Promise promise;
  std::memcpy(&promise, algo, sizeof promise);
  if (promise.magic != kMagic)
    return CUBLAS_STATUS_INVALID_VALUE;
  // The algorithm's promises: pointer alignments, bias alignment, and the
  // workspace (at least its size, 256-byte aligned).
  const void *pointers[4] = {A, B, C, D};
  for (int i = 0; i < 4; ++i)
    if (alignmentOf(pointers[i]) < promise.alignment[i])
      return CUBLAS_STATUS_INVALID_VALUE;
  if (op->epilogue != CUBLASLT_EPILOGUE_DEFAULT &&
      (!op->bias || alignmentOf(op->bias) < promise.biasAlignment))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (workspaceBytes < promise.workspace ||
      (promise.workspace > 0 && (!workspace || alignmentOf(workspace) < 256)))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (streamOf(stream)->capture && !handle->used)
    fail("a cuBLASLt handle's first cublasLtMatmul is under stream capture: "
         "run the work once outside a capture first (the library's first "
         "call sets itself up)");
  handle->used = true;
  bool ta = op->transA == CUBLAS_OP_T, tb = op->transB == CUBLAS_OP_T;
  size_t in = elementBytes(s.in), outBytes = elementBytes(s.out);
  for (int i = 0; i < s.batch; ++i) {
    if (s.k > 0) {
      requireDevice(static_cast<const char *>(A) + i * a->stride * in,
                    spanOf(a->rows, a->cols, a->ld) * in, "cuBLASLt A");
      requireDevice(static_cast<const char *>(B) + i * b->stride * in,
                    spanOf(b->rows, b->cols, b->ld) * in, "cuBLASLt B");
    }
    requireDevice(static_cast<char *>(D) + i * d->stride * outBytes,
                  spanOf(d->rows, d->cols, d->ld) * outBytes, "cuBLASLt D");
    if (*static_cast<const float *>(beta) != 0.0f && C != D)
      requireDevice(static_cast<const char *>(C) + i * c->stride * outBytes,
                    spanOf(c->rows, c->cols, c->ld) * outBytes, "cuBLASLt C");
  }
  if (promise.workspace > 0)
    requireDevice(workspace, promise.workspace, "cuBLASLt workspace");
  float al = *static_cast<const float *>(alpha);
  float be = *static_cast<const float *>(beta);
  uint32_t epilogue = op->epilogue;
  const void *bias = op->bias;
  int64_t biasStride = op->biasBatchStride;
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    requireDevice(bias,
                  (epilogue == CUBLASLT_EPILOGUE_BGRADB ? s.n : s.m) * 4 +
                      (s.batch - 1) * biasStride * 4,
                  "cuBLASLt bias vector");
  int64_t lda = a->ld, ldb = b->ld, ldd = d->ld, ldc = c->ld;
  int64_t strideA = a->stride, strideB = b->stride, strideC = c->stride,
          strideD = d->stride;
  uint64_t scribble = promise.workspace;
  enqueue(stream, "cublasLtMatmul", [=] {
    if (scribble)
      std::memset(workspace, 0xa5, scribble);
    if (s.out != CUDA_R_32F) { // 16-bit D: no epilogue (shapeOf)
      for (int i = 0; i < s.batch; ++i) {
        char *out = static_cast<char *>(D) + i * strideD * outBytes;
        const char *cin =
            static_cast<const char *>(C) + i * strideC * outBytes;
        if (be != 0.0f && out != cin)
          for (int64_t j = 0; j < s.n; ++j)
            std::memcpy(out + j * ldd * outBytes, cin + j * ldc * outBytes,
                        s.m * outBytes);
        gemmColumnMajorTo(ta, tb, s.m, s.n, s.k, al,
                          static_cast<const char *>(A) + i * strideA * in, lda,
                          static_cast<const char *>(B) + i * strideB * in, ldb,
                          s.in, be, out, ldd, s.out);
      }
      return;
    }
    for (int i = 0; i < s.batch; ++i) {
      float *out = static_cast<float *>(D) + i * strideD;
      const float *cin = static_cast<const float *>(C) + i * strideC;
      if (be != 0.0f && out != cin)
        for (int64_t j = 0; j < s.n; ++j)
          std::memcpy(out + j * ldd, cin + j * ldc, s.m * 4);
      const char *ai = static_cast<const char *>(A) + i * strideA * in;
      const char *bi = static_cast<const char *>(B) + i * strideB * in;
      gemmColumnMajor(ta, tb, s.m, s.n, s.k, al, ai, lda, bi, ldb, s.in, be,
                      out, ldd);
      float *vector = const_cast<float *>(static_cast<const float *>(bias)) +
                      i * biasStride;
      if (epilogue == CUBLASLT_EPILOGUE_BIAS) {
        for (int64_t j = 0; j < s.n; ++j)
          for (int64_t r = 0; r < s.m; ++r)
            out[j * ldd + r] += vector[r];
      } else if (epilogue == CUBLASLT_EPILOGUE_BGRADB) {
        // Columns of D: the sum over k of op(B)[p, j].
        for (int64_t j = 0; j < s.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < s.k; ++p)
            sum += loadAsFloat(bi, tb ? p * ldb + j : j * ldb + p, s.in);
          vector[j] = static_cast<float>(sum);
        }
      } else if (epilogue == CUBLASLT_EPILOGUE_BGRADA) {
        // Rows of D: the sum over k of op(A)[r, p].
        for (int64_t r = 0; r < s.m; ++r) {
          double sum = 0;
          for (int64_t p = 0; p < s.k; ++p)
            sum += loadAsFloat(ai, ta ? r * lda + p : p * lda + r, s.in);
          vector[r] = static_cast<float>(sum);
        }
      }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}
