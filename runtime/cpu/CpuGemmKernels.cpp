// The CPU backend's GEMM (OpenBLAS cblas_sgemm per batch entry) and the
// rounding of its inputs to bf16 / fp16 (training.precision); and the
// family's typed bodies (dialects/rt/kernels/Gemm.td).
#include "runtime/Error.h"
#include "runtime/cpu/CpuKernelContext.h"
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

// The family's typed bodies.
namespace {

// c = alpha op(a) op(b) (+ c), with bf16 / fp16 inputs (precision 1 / 2)
// rounded into copies in the workspace and fp32 accumulation.
template <class Args> void product(const Args &g) {
  const float *a = g.a.data, *b = g.b.data;
  if (g.precision != 0 && g.workspace) {
    const int64_t extentA = (g.batch - 1) * g.stride_a + g.m * g.k;
    const int64_t extentB = (g.batch - 1) * g.stride_b + g.k * g.n;
    if ((extentA + extentB) * 4 > g.workspace.bytes)
      throw RuntimeError("gemm: the bf16 workspace is too small; the "
                         "executable is damaged: recompile it");
    auto round = g.precision == 2 ? roundToFp16 : roundToBf16;
    round(a, g.workspace.data, extentA);
    round(b, g.workspace.data + extentA, extentB);
    a = g.workspace.data;
    b = g.workspace.data + extentA;
  }
  gemm(g.batch, g.m, g.n, g.k, g.trans_a != 0, g.trans_b != 0,
       static_cast<float>(g.alpha), a, g.stride_a, b, g.stride_b,
       g.accumulate ? 1.0f : 0.0f, g.c.data, g.stride_c);
}

} // namespace

void run(Context &, const kernels::GemmArgs &g) { product(g); }

void run(Context &, const kernels::GemmEpilogueArgs &g) {
  product(g);
  // The epilogues, as the bias_add and reduce kernels they replace compute
  // them (fusion leaves the CPU's results unchanged to the bit).
  if (g.epilogue == 1)
    biasAdd(g.c.data, g.vector.data, g.c.data, g.batch * g.m, g.n);
  else if (g.epilogue == 2) // A is [k, m]: sum its k rows
    reduce(Reduce::Sum, g.a.data, g.vector.data, 1, g.k, g.m);
}

} // namespace ferry::cpu
