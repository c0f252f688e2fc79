// The CPU backend's GEMM (OpenBLAS cblas_sgemm per batch entry) and the
// rounding of its inputs to bf16 / fp16 (training.precision).
#include "runtime/cpu/CpuKernels.h"

#include "runtime/cpu/CpuKernelCommon.h"

#include <cblas.h>

namespace ferry::cpu {

void gemm(int64_t batch, int64_t m, int64_t n, int64_t k, bool transA,
          bool transB, float alpha, const float *a, int64_t strideA,
          const float *b, int64_t strideB, float beta, float *c,
          int64_t strideC) {
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    // An empty product: C = beta * C (cblas would reject lda = 0).
    for (int64_t e = 0; e < batch; ++e) {
      float *cb = c + e * strideC;
      for (int64_t i = 0; i < m * n; ++i)
        cb[i] = beta == 0.0f ? 0.0f : beta * cb[i];
    }
    return;
  }
  const CBLAS_TRANSPOSE opA = transA ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE opB = transB ? CblasTrans : CblasNoTrans;
  const int64_t lda = transA ? m : k;
  const int64_t ldb = transB ? k : n;
  // A shared B with A and C contiguous across the batch and A not
  // transposed: the batch is one GEMM of batch * m rows.
  if (batch > 1 && strideB == 0 && !transA && strideA == m * k &&
      strideC == m * n && batch * m <= INT_MAX) {
    cblas_sgemm(CblasRowMajor, opA, opB, static_cast<blasint>(batch * m),
                static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
                static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta,
                c, static_cast<blasint>(n));
    return;
  }
  for (int64_t e = 0; e < batch; ++e)
    cblas_sgemm(CblasRowMajor, opA, opB, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), alpha,
                a + e * strideA, static_cast<blasint>(lda), b + e * strideB,
                static_cast<blasint>(ldb), beta, c + e * strideC,
                static_cast<blasint>(n));
}

void roundToBf16(const float *x, float *out, int64_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { // NaN
      out[i] = x[i];
      continue;
    }
    bits += 0x7fffu + ((bits >> 16) & 1u);
    bits &= 0xffff0000u;
    std::memcpy(&out[i], &bits, 4);
  }
}

void roundToFp16(const float *x, float *out, int64_t n) {
#pragma omp parallel for schedule(static) if (worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(static_cast<_Float16>(x[i])); // IEEE RNE
}

} // namespace ferry::cpu
