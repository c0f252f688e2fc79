// cuBLASLt GEMMs with epilogues (see LtGemm.h).
#include "runtime/cuda/LtGemm.h"
#include "runtime/cuda/Launch.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ferry::cuda {

namespace {

void checkLt(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLASLt ") + what +
                             " failed with status " +
                             std::to_string(static_cast<int>(status)));
}

// The largest power of two (up to 256) that divides the address: what the
// algorithm may assume (cuBLASLt assumes 256 unless told).
int alignmentOf(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  int alignment = 256;
  while (alignment > 1 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

} // namespace

struct LtGemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
  ~Plan() {
    if (desc)
      cublasLtMatmulDescDestroy(desc);
    for (cublasLtMatrixLayout_t l : {a, b, c})
      if (l)
        cublasLtMatrixLayoutDestroy(l);
  }
};

LtGemm::LtGemm() { checkLt(cublasLtCreate(&handle_), "initialisation"); }

LtGemm::~LtGemm() {
  plans_.clear();
  if (handle_)
    cublasLtDestroy(handle_);
}

bool LtGemm::run(const GemmCall &g, cudaStream_t stream) {
  int align = std::min({alignmentOf(g.a), alignmentOf(g.b), alignmentOf(g.c)});
  int vectorAlign = g.epilogue ? alignmentOf(g.vector) : 0;
  Key key{g.batch,
          g.m,
          g.n,
          g.k,
          (g.transA ? 1 : 0) | (g.transB ? 2 : 0) | (g.beta != 0 ? 4 : 0) |
              (g.bf16Out ? 8 : 0),
          g.strideA,
          g.strideB,
          g.strideC,
          g.inputType,
          g.epilogue,
          g.workspaceBytes,
          align,
          vectorAlign};
  std::unique_ptr<Plan> &slot = plans_[key];
  if (!slot) {
    auto plan = std::make_unique<Plan>();
    cudaDataType_t in = g.inputType == 1   ? CUDA_R_16BF
                        : g.inputType == 2 ? CUDA_R_16F
                                           : CUDA_R_32F;
    // fp32 inputs: fp32 arithmetic (no TF32), as the CPU backend computes.
    checkLt(
        cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "descriptor");
    // Column-major: Lt's A is ferry's B, Lt's B is ferry's A.
    cublasOperation_t opA = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opB = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    checkLt(cublasLtMatmulDescSetAttribute(
                plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)),
            "transpose");
    checkLt(cublasLtMatmulDescSetAttribute(
                plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)),
            "transpose");
    // Bias along ferry's n = the rows of column-major D (BIAS); the
    // gradient of ferry's A = Lt's B, reduced over k, one value per column
    // of D (BGRADB).
    cublasLtEpilogue_t epilogue = g.epilogue == 1   ? CUBLASLT_EPILOGUE_BIAS
                                  : g.epilogue == 2 ? CUBLASLT_EPILOGUE_BGRADB
                                                    : CUBLASLT_EPILOGUE_DEFAULT;
    checkLt(cublasLtMatmulDescSetAttribute(plan->desc,
                                           CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &epilogue, sizeof(epilogue)),
            "epilogue");
    if (g.epilogue) {
      // The heuristic reads the bias pointer's value for the alignment its
      // algorithm may assume: set before the query (the key holds it).
      checkLt(cublasLtMatmulDescSetAttribute(plan->desc,
                                             CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                             &g.vector, sizeof(g.vector)),
              "bias pointer");
      cudaDataType_t biasType = CUDA_R_32F;
      checkLt(cublasLtMatmulDescSetAttribute(
                  plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                  sizeof(biasType)),
              "bias type");
    }
    // Stored (pre-op) shapes, column-major.
    uint64_t rowsA = g.transB ? g.k : g.n, colsA = g.transB ? g.n : g.k;
    uint64_t rowsB = g.transA ? g.m : g.k, colsB = g.transA ? g.k : g.m;
    checkLt(cublasLtMatrixLayoutCreate(&plan->a, in, rowsA, colsA, rowsA),
            "layout");
    checkLt(cublasLtMatrixLayoutCreate(&plan->b, in, rowsB, colsB, rowsB),
            "layout");
    checkLt(cublasLtMatrixLayoutCreate(&plan->c,
                                       g.bf16Out ? CUDA_R_16BF : CUDA_R_32F,
                                       g.n, g.m, g.n),
            "layout");
    if (g.batch > 1) {
      if (g.batch > INT32_MAX)
        throw std::runtime_error("cuBLASLt: a batch of " +
                                 std::to_string(g.batch) +
                                 " exceeds its int32 batch count");
      int32_t count = static_cast<int32_t>(g.batch);
      std::pair<cublasLtMatrixLayout_t, int64_t> layouts[] = {
          {plan->a, g.strideB}, {plan->b, g.strideA}, {plan->c, g.strideC}};
      for (auto [layout, stride] : layouts) {
        checkLt(cublasLtMatrixLayoutSetAttribute(
                    layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                    sizeof(count)),
                "batch count");
        checkLt(cublasLtMatrixLayoutSetAttribute(
                    layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                    &stride, sizeof(stride)),
                "batch stride");
      }
    }
    cublasLtMatmulPreference_t preference;
    checkLt(cublasLtMatmulPreferenceCreate(&preference), "preference");
    uint32_t alignment = static_cast<uint32_t>(align);
    for (cublasLtMatmulPreferenceAttributes_t attribute :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      cublasLtMatmulPreferenceSetAttribute(preference, attribute, &alignment,
                                           sizeof(alignment));
    uint64_t workspace = g.workspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
        sizeof(workspace));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle_, plan->desc, plan->a, plan->b, plan->c, plan->c, preference, 1,
        &result, &returned);
    cublasLtMatmulPreferenceDestroy(preference);
    plan->found = status == CUBLAS_STATUS_SUCCESS && returned > 0;
    if (plan->found)
      plan->algo = result.algo;
    slot = std::move(plan);
  }
  Plan &plan = *slot;
  if (!plan.found)
    return false;
  if (g.epilogue)
    checkLt(cublasLtMatmulDescSetAttribute(plan.desc,
                                           CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                           &g.vector, sizeof(g.vector)),
            "bias pointer");
  ++launchCount();
  checkLt(cublasLtMatmul(handle_, plan.desc, &g.alpha, g.b, plan.a, g.a, plan.b,
                         &g.beta, g.c, plan.c, g.c, plan.c, &plan.algo,
                         g.workspace, g.workspaceBytes, stream),
          "matmul");
  return true;
}

} // namespace ferry::cuda
