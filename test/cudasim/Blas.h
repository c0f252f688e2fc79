// ferry's CUDA simulator: the arithmetic both BLAS references share.
// Test-only.
#pragma once

#include "cublas_api.h"

#include <cstdint>

namespace cudasim {

size_t elementBytes(cudaDataType_t type);
bool knownType(cudaDataType_t type);

// Column-major D = alpha op(A) op(B) + beta C for one matrix of a batch,
// with A and B of `inputType` converted to fp32 and fp32 accumulation
// (OpenBLAS does the arithmetic); beta 0 ignores C (it may hold NaN).
void gemmColumnMajor(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                     float alpha, const void *a, int64_t lda, const void *b,
                     int64_t ldb, cudaDataType_t inputType, float beta,
                     float *c, int64_t ldc);

// gemmColumnMajor into a C of `outputType` (fp32, or a 16-bit type: the
// fp32 result, C's values expanded into it first when beta is not 0, is
// rounded to nearest even once, as the library's conversion of D).
void gemmColumnMajorTo(bool transA, bool transB, int64_t m, int64_t n,
                       int64_t k, float alpha, const void *a, int64_t lda,
                       const void *b, int64_t ldb, cudaDataType_t inputType,
                       float beta, void *c, int64_t ldc,
                       cudaDataType_t outputType);

// The element count a column-major matrix of `rows` x `cols` with leading
// dimension `ld` spans.
inline int64_t spanOf(int64_t rows, int64_t cols, int64_t ld) {
  return rows == 0 || cols == 0 ? 0 : (cols - 1) * ld + rows;
}

// Element i of a matrix of `type`, as fp32.
float loadAsFloat(const void *base, int64_t i, cudaDataType_t type);

} // namespace cudasim
