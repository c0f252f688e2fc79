// The CPU backend's fp32 kernels (see CpuKernels.h): GEMMs through OpenBLAS,
// everything else OpenMP loops whose inner loops the compiler vectorises.
// exp and erf are evaluated with polynomial approximations written here
// (within a few float ulps) because glibc's vector math is only used under
// -ffast-math; scalar libm calls would dominate softmax, GELU and the loss.
// Reductions split their input into fixed-size pieces combined in a fixed
// order, so results do not depend on the thread count either.
#include "runtime/cpu/CpuKernels.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ferry::cpu {

namespace {

// Below this many elements of work a loop runs serially: forking the OpenMP
// team would cost more than it saves.
constexpr int64_t kParallelMin = 32768;
inline bool worth(int64_t work) { return work >= kParallelMin; }

// Fixed piece sizes of deterministic reductions (independent of threads).
constexpr int64_t kSumChunk = 8192;     // elements per partial sum
constexpr int64_t kColumnChunk = 64;    // columns per strided-sum work item
constexpr int64_t kLayerNormRows = 32;  // rows per layerNormGrad partial
constexpr int64_t kDropoutChunk = 2048; // elements per dropout work item

// Per-calling-thread scratch that keeps its capacity between calls, so hot
// kernels do not allocate.
template <class T = double> T *scratch(size_t count) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < count)
    buffer.resize(count);
  return buffer.data();
}

// exp(x) for x <= 88, within about 1.5 ulp; exactly 0 below -87.34 (where
// the result would be subnormal), NaN for NaN. Cephes' expf: round x / ln 2
// to n, reduce with a two-part ln 2, degree-6 polynomial, scale by 2^n.
[[gnu::always_inline]] inline float expApprox(float x) {
  // Clamp (NaN may become a bound here; it is returned at the end).
  const float c = std::min(std::max(x, -87.33654f), 88.0f);
  // n = round(c / ln 2): adding 1.5 * 2^23 rounds to an integer, which the
  // low mantissa bits then hold (int <-> float conversions would stop the
  // vectoriser: they count as trapping).
  const float shifted = std::fma(c, 1.44269504088896341f, 12582912.0f);
  const float n = shifted - 12582912.0f;
  int32_t shiftedBits;
  std::memcpy(&shiftedBits, &shifted, sizeof shiftedBits);
  const int32_t ni = shiftedBits - 0x4B400000; // == n
  float r = std::fma(n, -0.693359375f, c);
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p, r * r, r) + 1.0f;
  uint32_t bits = static_cast<uint32_t>(ni + 127) << 23;
  float twoToN;
  std::memcpy(&twoToN, &bits, sizeof twoToN);
  float e = p * twoToN;
  return x < -87.33654f ? 0.0f : (x == x ? e : x);
}

// Phi(x) = 0.5 * (1 + erf(x / sqrt 2)), the standard normal CDF, within
// 4e-7 relative (7 ulp) everywhere (also in the lower tail, where
// 1 + erf would cancel). Coefficients: Chebyshev fits in long double.
[[gnu::always_inline]] inline float normalCdf(float x) {
  float z = x * 0.707106781186547524f;
  float az = std::fabs(z);
  // |z| < 0.5: erf(z) = z * P(8 z^2 - 1).
  float u = std::fma(std::min(z * z, 0.25f), 8.0f, -1.0f);
  float p = 1.152119808e-06f;
  p = std::fma(p, u, -4.765271660e-05f);
  p = std::fma(p, u, 1.613071538e-03f);
  p = std::fma(p, u, -4.364205152e-02f);
  p = std::fma(p, u, 1.083075285e+00f);
  float central = std::fma(0.5f * z, p, 0.5f);
  // |z| >= 0.5: erfc(t) = exp(-t^2) * G(y) / (1 + 2t), y = (t - 2) / (t + 2),
  // G a polynomial on t in [0.5, 10] (beyond 10, exp(-t^2) is 0 in float).
  float t = std::min(std::max(az, 0.5f), 10.0f);
  // One division for both quotients: q = 1 / ((t + 2) (1 + 2t)).
  const float plus2 = t + 2.0f;
  const float twoTPlus1 = std::fma(2.0f, t, 1.0f);
  const float q = 1.0f / (plus2 * twoTPlus1);
  const float y = (t - 2.0f) * twoTPlus1 * q;
  float v = std::fma(y, 1.578947425e+00f, -5.263157934e-02f);
  float g = -4.163575340e-06f;
  g = std::fma(g, v, -3.455718615e-05f);
  g = std::fma(g, v, 3.373489017e-05f);
  g = std::fma(g, v, 5.735716550e-04f);
  g = std::fma(g, v, -6.376012461e-04f);
  g = std::fma(g, v, -8.913325146e-03f);
  g = std::fma(g, v, 3.981748968e-02f);
  g = std::fma(g, v, -6.016271561e-02f);
  g = std::fma(g, v, -6.541938335e-02f);
  g = std::fma(g, v, 1.273707747e+00f);
  // exp(-t^2) with t^2 = hi + lo split exactly: exp(-hi) * (1 - lo).
  float t2 = t * t;
  float t2lo = std::fma(t, t, -t2);
  float e = expApprox(-t2) * (1.0f - t2lo) * g * (plus2 * q);
  float half = 0.5f * e;
  float tail = z < 0.0f ? half : 1.0f - half;
  return az < 0.5f ? central : tail;
}

// The standard normal density exp(-x^2 / 2) / sqrt(2 pi).
[[gnu::always_inline]] inline float normalPdf(float x) {
  float hi = x * x;
  float lo = std::fma(x, x, -hi);
  return expApprox(-0.5f * hi) * std::fma(-0.5f, lo, 1.0f) *
         0.398942280401432678f;
}

// Philox4x32-10 exactly as random/Philox.cpp computes it, for `count`
// consecutive blocks starting at `firstBlock` (= element / 4) of one
// (sample, layer) stream, written block-major into words[4 * count]. Written
// as a flat loop over blocks so that the compiler vectorises across blocks.
void philoxBlocks(uint32_t key0, uint32_t key1, uint64_t firstBlock,
                  uint32_t sample, uint32_t layer, int64_t count,
                  uint32_t *words) {
  constexpr uint32_t kMul0 = 0xD2511F53u;
  constexpr uint32_t kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u;
  constexpr uint32_t kWeyl1 = 0xBB67AE85u;
#pragma omp simd simdlen(16)
  for (int64_t b = 0; b < count; ++b) {
    uint64_t block = firstBlock + static_cast<uint64_t>(b);
    uint32_t c0 = static_cast<uint32_t>(block);
    uint32_t c1 = static_cast<uint32_t>(block >> 32);
    uint32_t c2 = sample;
    uint32_t c3 = layer;
    uint32_t k0 = key0;
    uint32_t k1 = key1;
    for (int round = 0; round < 10; ++round) {
      uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
      uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
      uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
      uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
      c0 = n0;
      c1 = static_cast<uint32_t>(p1);
      c2 = n2;
      c3 = static_cast<uint32_t>(p0);
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    words[4 * b + 0] = c0;
    words[4 * b + 1] = c1;
    words[4 * b + 2] = c2;
    words[4 * b + 3] = c3;
  }
}

// body(begin, end) over [0, n) in blocks of 4096 elements, the blocks in
// parallel when worthwhile (for compute-heavy elementwise loops that want
// their own simd clauses).
template <class Body> void forBlocks(int64_t n, Body body) {
  constexpr int64_t kBlock = 4096;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (worth(n))
  for (int64_t b = 0; b < blocks; ++b)
    body(b * kBlock, std::min(n, (b + 1) * kBlock));
}

// Sum of x[0, n) in double, vectorised (fixed association for fixed n).
inline double sumDouble(const float *x, int64_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i)
    s += static_cast<double>(x[i]);
  return s;
}

inline double sumSquaresDouble(const float *x, int64_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) {
    double value = static_cast<double>(x[i]);
    s += value * value;
  }
  return s;
}

// Maximum that propagates NaN (as PyTorch's max does).
inline float maxNan(float acc, float value) {
  return (value > acc || value != value) ? value : acc;
}

// Row maximum for a numerically safe softmax (NaN handling unspecified).
inline float rowMax(const float *x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

// dst = 0 (dstRows x width) unless `accumulate`, then dst[rowOf(r), :] +=
// src[r, :] for r in [0, srcRows) in increasing r. Threads split the columns,
// so every element is summed in the same order whatever the thread count,
// without atomics.
template <class RowOf>
void scatterAddRows(float *dst, int64_t dstRows, const float *src,
                    int64_t srcRows, int64_t width, RowOf rowOf,
                    bool accumulate = false) {
  const int64_t dstSize = dstRows * width;
  if (dstSize + srcRows * width < kParallelMin) {
    if (!accumulate)
      std::fill(dst, dst + dstSize, 0.0f);
    for (int64_t r = 0; r < srcRows; ++r) {
      float *d = dst + rowOf(r) * width;
      const float *s = src + r * width;
#pragma omp simd
      for (int64_t c = 0; c < width; ++c)
        d[c] += s[c];
    }
    return;
  }
#pragma omp parallel
  {
    if (!accumulate) {
#pragma omp for simd schedule(static)
      for (int64_t i = 0; i < dstSize; ++i)
        dst[i] = 0.0f;
    }
    // The implicit barrier above orders the zeroing before the sums.
    const int64_t threads = omp_get_num_threads();
    const int64_t thread = omp_get_thread_num();
    // Column ranges rounded to 16 floats (a cache line) against false
    // sharing.
    const int64_t perThread = ((width + threads - 1) / threads + 15) / 16 * 16;
    const int64_t c0 = std::min(width, thread * perThread);
    const int64_t c1 = std::min(width, c0 + perThread);
    if (c0 < c1) {
      for (int64_t r = 0; r < srcRows; ++r) {
        float *d = dst + rowOf(r) * width;
        const float *s = src + r * width;
#pragma omp simd
        for (int64_t c = c0; c < c1; ++c)
          d[c] += s[c];
      }
    }
  }
}

} // namespace

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

void fill(float *out, int64_t n, float value) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = value;
}

void fillInt(int32_t *out, int64_t n, int32_t value) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = value;
}

void iota(int32_t *out, int64_t outer, int64_t size, int64_t inner) {
  const int64_t rows = outer * size;
#pragma omp parallel for schedule(static) if (worth(rows * inner))
  for (int64_t q = 0; q < rows; ++q) {
    const int32_t d = static_cast<int32_t>(q % size);
    int32_t *o = out + q * inner;
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i)
      o[i] = d;
  }
}

void attentionMask(const int32_t *mask, float *out, int64_t n, float fill) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = mask[i] != 0 ? 0.0f : fill;
}

void embedding(const float *table, const int32_t *ids, float *out, int64_t rows,
               int64_t width) {
#pragma omp parallel for schedule(static) if (worth(rows * width))
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(out + r * width, table + static_cast<int64_t>(ids[r]) * width,
                sizeof(float) * width);
}

void embeddingGrad(const int32_t *ids, const float *dy, float *dtable,
                   int64_t rows, int64_t width, int64_t vocab,
                   bool accumulate) {
  scatterAddRows(
      dtable, vocab, dy, rows, width,
      [ids](int64_t r) { return static_cast<int64_t>(ids[r]); }, accumulate);
}

void gatherPositions(const float *x, const int32_t *positions, float *out,
                     int64_t batch, int64_t seq, int64_t predictions,
                     int64_t width) {
  const int64_t rows = batch * predictions;
#pragma omp parallel for schedule(static) if (worth(rows * width))
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t source = (r / predictions) * seq + positions[r];
    std::memcpy(out + r * width, x + source * width, sizeof(float) * width);
  }
}

void gatherPositionsGrad(const int32_t *positions, const float *dy, float *dx,
                         int64_t batch, int64_t seq, int64_t predictions,
                         int64_t width) {
  scatterAddRows(
      dx, batch * seq, dy, batch * predictions, width, [=](int64_t r) {
        return (r / predictions) * seq + static_cast<int64_t>(positions[r]);
      });
}

void take(const float *x, float *out, int64_t outer, int64_t size,
          int64_t inner, int64_t index) {
#pragma omp parallel for schedule(static) if (worth(outer * inner))
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out + o * inner, x + (o * size + index) * inner,
                sizeof(float) * inner);
}

void takeGrad(const float *dy, float *dx, int64_t outer, int64_t size,
              int64_t inner, int64_t index) {
  const int64_t rows = outer * size;
#pragma omp parallel for schedule(static) if (worth(rows * inner))
  for (int64_t q = 0; q < rows; ++q) {
    float *d = dx + q * inner;
    if (q % size == index)
      std::memcpy(d, dy + (q / size) * inner, sizeof(float) * inner);
    else
      std::memset(d, 0, sizeof(float) * inner);
  }
}

void biasAdd(const float *x, const float *bias, float *out, int64_t rows,
             int64_t cols) {
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    float *o = out + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      o[c] = xr[c] + bias[c];
  }
}

void binary(Binary op, const float *a, const float *b, float *out, int64_t n) {
  switch (op) {
  case Binary::Add:
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
    for (int64_t i = 0; i < n; ++i)
      out[i] = a[i] + b[i];
    break;
  case Binary::Sub:
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
    for (int64_t i = 0; i < n; ++i)
      out[i] = a[i] - b[i];
    break;
  case Binary::Mul:
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
    for (int64_t i = 0; i < n; ++i)
      out[i] = a[i] * b[i];
    break;
  case Binary::Div:
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
    for (int64_t i = 0; i < n; ++i)
      out[i] = a[i] / b[i];
    break;
  }
}

void accumulate(float *dst, const float *src, int64_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    dst[i] += src[i];
}

void scale(const float *x, float *out, int64_t n, float factor) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = factor * x[i];
}

void gelu(const float *x, float *out, int64_t n) {
  forBlocks(n, [=](int64_t begin, int64_t end) {
#pragma omp simd simdlen(16)
    for (int64_t i = begin; i < end; ++i)
      out[i] = x[i] * normalCdf(x[i]);
  });
}

void geluGrad(const float *x, const float *dy, float *dx, int64_t n) {
  // gelu'(x) = Phi(x) + x * phi(x).
  forBlocks(n, [=](int64_t begin, int64_t end) {
#pragma omp simd simdlen(16)
    for (int64_t i = begin; i < end; ++i) {
      const float xi = x[i];
      dx[i] = dy[i] * std::fma(xi, normalPdf(xi), normalCdf(xi));
    }
  });
}

void tanhForward(const float *x, float *out, int64_t n) {
  // Only the NSP pooler uses tanh ([batch, hidden]): libm's scalar tanh.
#pragma omp parallel for schedule(static) if (worth(n))
  for (int64_t i = 0; i < n; ++i)
    out[i] = std::tanh(x[i]);
}

void tanhGrad(const float *y, const float *dy, float *dx, int64_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
  for (int64_t i = 0; i < n; ++i)
    dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

namespace {

struct RowStats {
  float mean, rstd;
};

// Mean and 1 / sqrt(biased variance + eps) of one row (two passes over the
// row, which is in cache: no cancellation in the variance).
inline RowStats rowStats(const float *x, int64_t cols, float eps) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < cols; ++c)
    sum += x[c];
  const float mean = sum / static_cast<float>(cols);
  float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
  for (int64_t c = 0; c < cols; ++c) {
    const float d = x[c] - mean;
    squares += d * d;
  }
  const float var = squares / static_cast<float>(cols);
  return {mean, 1.0f / std::sqrt(var + eps)};
}

} // namespace

void layerNorm(const float *x, const float *scale, const float *bias,
               float *out, int64_t rows, int64_t cols, float eps) {
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    float *o = out + r * cols;
    const RowStats s = rowStats(xr, cols, eps);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      o[c] = std::fma((xr[c] - s.mean) * s.rstd, scale[c], bias[c]);
  }
}

void layerNormGrad(const float *x, const float *scale, const float *dy,
                   float *dx, float *dscale, float *dbias, int64_t rows,
                   int64_t cols, float eps) {
  if (cols <= 0)
    return;
  if (rows <= 0) {
    std::fill(dscale, dscale + cols, 0.0f);
    std::fill(dbias, dbias + cols, 0.0f);
    return;
  }
  // Column sums: one double partial per block of kLayerNormRows rows,
  // combined in block order afterwards.
  const int64_t blocks = (rows + kLayerNormRows - 1) / kLayerNormRows;
  double *partials = scratch(static_cast<size_t>(blocks * 2 * cols));
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    double *ps = partials + blk * 2 * cols;
    double *pb = ps + cols;
    std::fill(ps, ps + 2 * cols, 0.0);
    const int64_t rEnd = std::min(rows, (blk + 1) * kLayerNormRows);
    for (int64_t r = blk * kLayerNormRows; r < rEnd; ++r) {
      const float *xr = x + r * cols;
      const float *g = dy + r * cols;
      float *d = dx + r * cols;
      const RowStats s = rowStats(xr, cols, eps);
      // dx = rstd * (dy*scale - mean(dy*scale) - xhat * mean(dy*scale*xhat))
      float sumG = 0.0f, sumGX = 0.0f;
#pragma omp simd reduction(+ : sumG, sumGX)
      for (int64_t c = 0; c < cols; ++c) {
        const float xhat = (xr[c] - s.mean) * s.rstd;
        const float gs = g[c] * scale[c];
        sumG += gs;
        sumGX += gs * xhat;
        ps[c] += static_cast<double>(g[c] * xhat);
        pb[c] += static_cast<double>(g[c]);
      }
      const float meanG = sumG / static_cast<float>(cols);
      const float meanGX = sumGX / static_cast<float>(cols);
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) {
        const float xhat = (xr[c] - s.mean) * s.rstd;
        d[c] = s.rstd * (g[c] * scale[c] - meanG - xhat * meanGX);
      }
    }
  }
  for (int64_t blk = 1; blk < blocks; ++blk) {
    const double *src = partials + blk * 2 * cols;
#pragma omp simd
    for (int64_t c = 0; c < 2 * cols; ++c)
      partials[c] += src[c];
  }
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) {
    dscale[c] = static_cast<float>(partials[c]);
    dbias[c] = static_cast<float>(partials[cols + c]);
  }
}

void softmax(const float *x, const float *mask, float *out, int64_t batch,
             int64_t rows, int64_t cols) {
  const int64_t total = batch * rows;
#pragma omp parallel for schedule(static) if (worth(total * cols))
  for (int64_t q = 0; q < total; ++q) {
    const float *xr = x + q * cols;
    float *o = out + q * cols;
    float m = -std::numeric_limits<float>::infinity();
    float sum = 0.0f;
    if (mask != nullptr) {
      const float *mr = mask + (q / rows) * cols;
#pragma omp simd reduction(max : m)
      for (int64_t c = 0; c < cols; ++c)
        m = std::max(m, xr[c] + mr[c]);
#pragma omp simd simdlen(16) reduction(+ : sum)
      for (int64_t c = 0; c < cols; ++c) {
        const float e = expApprox(xr[c] + mr[c] - m);
        o[c] = e;
        sum += e;
      }
    } else {
      m = rowMax(xr, cols);
#pragma omp simd simdlen(16) reduction(+ : sum)
      for (int64_t c = 0; c < cols; ++c) {
        const float e = expApprox(xr[c] - m);
        o[c] = e;
        sum += e;
      }
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      o[c] *= inv;
  }
}

void softmaxGrad(const float *y, const float *dy, float *dx, int64_t rows,
                 int64_t cols) {
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    const float *yr = y + r * cols;
    const float *g = dy + r * cols;
    float *d = dx + r * cols;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < cols; ++c)
      dot += g[c] * yr[c];
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      d[c] = yr[c] * (g[c] - dot);
  }
}

void dropout(const float *x, float *out, int64_t n, int64_t perSample,
             uint64_t seed, uint32_t purpose, uint32_t layer,
             uint64_t sampleOffset, float p) {
  if (n <= 0)
    return;
  if (p == 0.0f) {
    if (out != x) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
      for (int64_t i = 0; i < n; ++i)
        out[i] = x[i];
    }
    return;
  }
  if (perSample <= 0)
    perSample = n;
  // Key as in random::randomBits: (seed low, seed high ^ purpose).
  const uint32_t key0 = static_cast<uint32_t>(seed);
  const uint32_t key1 = static_cast<uint32_t>(seed >> 32) ^ purpose;
  const float keep = 1.0f - p;
  const int64_t samples = (n + perSample - 1) / perSample;
  const int64_t chunksPerSample =
      (perSample + kDropoutChunk - 1) / kDropoutChunk;
  const int64_t items = samples * chunksPerSample;
#pragma omp parallel for schedule(static) if (worth(n))
  for (int64_t item = 0; item < items; ++item) {
    const int64_t sampleIndex = item / chunksPerSample;
    const int64_t base = sampleIndex * perSample;
    const int64_t length = std::min(perSample, n - base);
    const int64_t j0 = (item % chunksPerSample) * kDropoutChunk;
    const int64_t j1 = std::min(length, j0 + kDropoutChunk);
    if (j0 >= j1)
      continue;
    uint32_t words[kDropoutChunk];
    // j0 is a multiple of 4: element j0 + i is word i of block j0 / 4 + i / 4.
    philoxBlocks(key0, key1, static_cast<uint64_t>(j0) / 4,
                 static_cast<uint32_t>(sampleOffset + sampleIndex), layer,
                 (j1 - j0 + 3) / 4, words);
    const float *xs = x + base + j0;
    float *os = out + base + j0;
#pragma omp simd simdlen(16)
    for (int64_t i = 0; i < j1 - j0; ++i) {
      // random::uniform: (bits >> 8) * 2^-24, kept when >= p.
      const float u = static_cast<float>(static_cast<int32_t>(words[i] >> 8)) *
                      (1.0f / 16777216.0f);
      os[i] = u >= p ? xs[i] / keep : 0.0f;
    }
  }
}

void transpose(const float *x, float *out, int32_t rank, const int64_t *dims,
               const int64_t *perm) {
  int64_t total = 1;
  for (int32_t d = 0; d < rank; ++d)
    total *= dims[d];
  if (total <= 0)
    return;
  // Simplify: drop size-1 dimensions, then merge runs of output dimensions
  // that are consecutive input dimensions. Up to 6 dimensions remain.
  int64_t newIndex[6];
  int32_t kept = 0;
  for (int32_t d = 0; d < rank; ++d)
    newIndex[d] = dims[d] == 1 ? -1 : kept++;
  int64_t outOrder[6]; // output order of the kept input dimensions
  int32_t count = 0;
  for (int32_t i = 0; i < rank; ++i)
    if (newIndex[perm[i]] >= 0)
      outOrder[count++] = newIndex[perm[i]];
  int64_t keptDims[6];
  for (int32_t d = 0, j = 0; d < rank; ++d)
    if (dims[d] != 1)
      keptDims[j++] = dims[d];
  // Groups of output positions [groupStart[g], groupStart[g + 1]).
  int32_t groupStart[7];
  int32_t groups = 0;
  for (int32_t i = 0; i < count; ++i)
    if (i == 0 || outOrder[i] != outOrder[i - 1] + 1)
      groupStart[groups++] = i;
  groupStart[groups] = count;
  if (groups <= 1) {
    // The permutation keeps memory order.
#pragma omp parallel for simd schedule(static) if (parallel : worth(total))
    for (int64_t i = 0; i < total; ++i)
      out[i] = x[i];
    return;
  }
  // Group g covers input dimensions starting at first[g]; its rank among
  // groups in input order is its input dimension in the simplified problem.
  int64_t first[6], size[6];
  for (int32_t g = 0; g < groups; ++g) {
    first[g] = outOrder[groupStart[g]];
    size[g] = 1;
    for (int32_t i = groupStart[g]; i < groupStart[g + 1]; ++i)
      size[g] *= keptDims[outOrder[i]];
  }
  // inStride[g]: stride in x of output dimension g (groups in output order).
  int64_t inStride[6];
  for (int32_t g = 0; g < groups; ++g) {
    inStride[g] = 1;
    for (int32_t h = 0; h < groups; ++h)
      if (first[h] > first[g])
        inStride[g] *= size[h];
  }
  int64_t outStride[6];
  outStride[groups - 1] = 1;
  for (int32_t g = groups - 2; g >= 0; --g)
    outStride[g] = outStride[g + 1] * size[g + 1];
  const int32_t last = groups - 1;
  if (inStride[last] == 1) {
    // Output rows of size[last] elements are contiguous in x: copy rows.
    const int64_t rowLength = size[last];
    const int64_t rows = total / rowLength;
#pragma omp parallel for schedule(static) if (worth(total))
    for (int64_t q = 0; q < rows; ++q) {
      int64_t rest = q, offset = 0;
      for (int32_t g = last - 1; g >= 0; --g) {
        offset += (rest % size[g]) * inStride[g];
        rest /= size[g];
      }
      std::memcpy(out + q * rowLength, x + offset, sizeof(float) * rowLength);
    }
    return;
  }
  // Otherwise the output's last dimension is strided in x and x's last
  // dimension (stride 1) is output dimension `inner`: transpose 32 x 32
  // tiles of the (inner, last) plane for every index of the other
  // dimensions.
  int32_t inner = 0;
  for (int32_t g = 0; g < groups; ++g)
    if (inStride[g] == 1)
      inner = g;
  constexpr int64_t kTile = 32;
  const int64_t rowsI = size[inner], colsJ = size[last];
  const int64_t tilesI = (rowsI + kTile - 1) / kTile;
  const int64_t planes = total / (rowsI * colsJ);
  const int64_t strideJ = inStride[last], outStrideI = outStride[inner];
#pragma omp parallel for schedule(static) if (worth(total))
  for (int64_t item = 0; item < planes * tilesI; ++item) {
    int64_t rest = item / tilesI, inBase = 0, outBase = 0;
    for (int32_t g = last - 1; g >= 0; --g) {
      if (g == inner)
        continue;
      const int64_t index = rest % size[g];
      rest /= size[g];
      inBase += index * inStride[g];
      outBase += index * outStride[g];
    }
    const int64_t i0 = (item % tilesI) * kTile;
    const int64_t i1 = std::min(rowsI, i0 + kTile);
    for (int64_t j0 = 0; j0 < colsJ; j0 += kTile) {
      const int64_t j1 = std::min(colsJ, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        const float *src = x + inBase + i;
        float *dst = out + outBase + i * outStrideI;
        for (int64_t j = j0; j < j1; ++j)
          dst[j] = src[j * strideJ];
      }
    }
  }
}

void reduce(Reduce kind, const float *x, float *out, int64_t outer,
            int64_t size, int64_t inner) {
  if (outer <= 0 || inner <= 0)
    return;
  if (size <= 0) {
    // Empty reductions: 0 for sums, NaN for the mean, -inf for max.
    const float value =
        kind == Reduce::Mean  ? std::numeric_limits<float>::quiet_NaN()
        : kind == Reduce::Max ? -std::numeric_limits<float>::infinity()
                              : 0.0f;
    fill(out, outer * inner, value);
    return;
  }
  const int64_t total = outer * size * inner;
  if (inner == 1) {
    // Contiguous rows: double partials of kSumChunk elements per row,
    // combined in order.
    const int64_t chunks = (size + kSumChunk - 1) / kSumChunk;
    double *partials = scratch(static_cast<size_t>(outer * chunks));
#pragma omp parallel for schedule(static) if (worth(total))
    for (int64_t item = 0; item < outer * chunks; ++item) {
      const int64_t o = item / chunks;
      const int64_t start = (item % chunks) * kSumChunk;
      const int64_t length = std::min(kSumChunk, size - start);
      const float *xs = x + o * size + start;
      if (kind == Reduce::Max) {
        float m = xs[0];
        for (int64_t i = 1; i < length; ++i)
          m = maxNan(m, xs[i]);
        partials[item] = m;
      } else if (kind == Reduce::SumSquares) {
        partials[item] = sumSquaresDouble(xs, length);
      } else {
        partials[item] = sumDouble(xs, length);
      }
    }
    for (int64_t o = 0; o < outer; ++o) {
      const double *p = partials + o * chunks;
      double acc = p[0];
      for (int64_t ch = 1; ch < chunks; ++ch) {
        if (kind == Reduce::Max) {
          const float v = static_cast<float>(p[ch]);
          acc = maxNan(static_cast<float>(acc), v);
        } else {
          acc += p[ch];
        }
      }
      if (kind == Reduce::Mean)
        acc /= static_cast<double>(size);
      out[o] = static_cast<float>(acc);
    }
    return;
  }
  // Strided: each work item sums kColumnChunk columns of one outer index
  // over all of `size` in double, rows in increasing order.
  const int64_t colChunks = (inner + kColumnChunk - 1) / kColumnChunk;
#pragma omp parallel for schedule(static) if (worth(total))
  for (int64_t item = 0; item < outer * colChunks; ++item) {
    const int64_t o = item / colChunks;
    const int64_t c0 = (item % colChunks) * kColumnChunk;
    const int64_t width = std::min(kColumnChunk, inner - c0);
    const float *xs = x + o * size * inner + c0;
    float *os = out + o * inner + c0;
    if (kind == Reduce::Max) {
      float acc[kColumnChunk];
      for (int64_t c = 0; c < width; ++c)
        acc[c] = xs[c];
      for (int64_t r = 1; r < size; ++r) {
        const float *row = xs + r * inner;
#pragma omp simd
        for (int64_t c = 0; c < width; ++c)
          acc[c] = maxNan(acc[c], row[c]);
      }
      std::memcpy(os, acc, sizeof(float) * width);
      continue;
    }
    double acc[kColumnChunk] = {};
    const bool squares = kind == Reduce::SumSquares;
    for (int64_t r = 0; r < size; ++r) {
      const float *row = xs + r * inner;
      if (squares) {
#pragma omp simd
        for (int64_t c = 0; c < width; ++c) {
          const double v = static_cast<double>(row[c]);
          acc[c] += v * v;
        }
      } else {
#pragma omp simd
        for (int64_t c = 0; c < width; ++c)
          acc[c] += static_cast<double>(row[c]);
      }
    }
    const double factor =
        kind == Reduce::Mean ? 1.0 / static_cast<double>(size) : 1.0;
    for (int64_t c = 0; c < width; ++c)
      os[c] = static_cast<float>(acc[c] * factor);
  }
}

void broadcast(const float *x, float *out, int64_t outer, int64_t size,
               int64_t inner) {
  const int64_t rows = outer * size;
#pragma omp parallel for schedule(static) if (worth(rows * inner))
  for (int64_t q = 0; q < rows; ++q)
    std::memcpy(out + q * inner, x + (q / size) * inner, sizeof(float) * inner);
}

namespace {

// Rows of logits are a vocabulary long: sum exp(row - m) in float over
// pieces of this many columns, and the pieces in double.
constexpr int64_t kExpPiece = 512;

// sum(exp(row[c] - m)) over c < classes; stores the exponentials in `e`
// when it is not null.
inline double sumExp(const float *row, int64_t classes, float m, float *e) {
  double sum = 0.0;
  for (int64_t c0 = 0; c0 < classes; c0 += kExpPiece) {
    const int64_t c1 = std::min(classes, c0 + kExpPiece);
    float piece = 0.0f;
    if (e != nullptr) {
#pragma omp simd simdlen(16) reduction(+ : piece)
      for (int64_t c = c0; c < c1; ++c) {
        const float value = expApprox(row[c] - m);
        e[c] = value;
        piece += value;
      }
    } else {
#pragma omp simd simdlen(16) reduction(+ : piece)
      for (int64_t c = c0; c < c1; ++c)
        piece += expApprox(row[c] - m);
    }
    sum += static_cast<double>(piece);
  }
  return sum;
}

} // namespace

void softmaxCrossEntropy(const float *logits, const int32_t *labels,
                         const float *weights, float *out, int64_t rows,
                         int64_t cols, int64_t classes) {
  if (rows <= 0) {
    out[0] = 0.0f;
    return;
  }
  double *losses = scratch(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) if (worth(rows * classes))
  for (int64_t r = 0; r < rows; ++r) {
    const float w = weights[r];
    if (w == 0.0f) {
      losses[r] = 0.0;
      continue;
    }
    const float *row = logits + r * cols;
    const float m = rowMax(row, classes);
    const double logSum = std::log(sumExp(row, classes, m, nullptr));
    losses[r] = static_cast<double>(w) * (static_cast<double>(m) + logSum -
                                          static_cast<double>(row[labels[r]]));
  }
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r)
    total += losses[r];
  out[0] = static_cast<float>(total);
}

void softmaxCrossEntropyGrad(const float *logits, const int32_t *labels,
                             const float *weights, const float *dloss,
                             float *dlogits, int64_t rows, int64_t cols,
                             int64_t classes) {
  const float upstream = dloss[0];
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    float *d = dlogits + r * cols;
    const float w = weights[r];
    if (w == 0.0f) {
      std::memset(d, 0, sizeof(float) * cols);
      continue;
    }
    const float *row = logits + r * cols;
    const float m = rowMax(row, classes);
    const double sum = sumExp(row, classes, m, d);
    const float factor = upstream * w;
    const float scaleBySum = static_cast<float>(factor / sum);
#pragma omp simd
    for (int64_t c = 0; c < classes; ++c)
      d[c] *= scaleBySum;
    d[labels[r]] -= factor;
    std::fill(d + classes, d + cols, 0.0f);
  }
}

void argmaxCorrect(const float *logits, const int32_t *labels,
                   const float *weights, float *out, int64_t rows, int64_t cols,
                   int64_t classes) {
  if (rows <= 0) {
    out[0] = 0.0f;
    return;
  }
  double *hits = scratch(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) if (worth(rows * classes))
  for (int64_t r = 0; r < rows; ++r) {
    const float w = weights[r];
    hits[r] = 0.0;
    if (w == 0.0f || classes <= 0)
      continue;
    const float *row = logits + r * cols;
    const float m = rowMax(row, classes);
    // The first index holding the (non-NaN) maximum or a NaN.
    int64_t best = 0;
    for (int64_t c = 0; c < classes; ++c)
      if (row[c] == m || row[c] != row[c]) {
        best = c;
        break;
      }
    if (best == labels[r])
      hits[r] = static_cast<double>(w);
  }
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r)
    total += hits[r];
  out[0] = static_cast<float>(total);
}

void globalNorm(const float *const *tensors, const int64_t *sizes,
                int64_t count, float *out) {
  // Work items: kSumChunk-element pieces of every tensor, in order.
  int64_t items = 0, elements = 0;
  for (int64_t t = 0; t < count; ++t) {
    items += (sizes[t] + kSumChunk - 1) / kSumChunk;
    elements += sizes[t];
  }
  if (items == 0) {
    out[0] = 0.0f;
    return;
  }
  double *partials = scratch(static_cast<size_t>(items));
  int64_t *where = scratch<int64_t>(static_cast<size_t>(2 * items));
  for (int64_t t = 0, item = 0; t < count; ++t)
    for (int64_t start = 0; start < sizes[t]; start += kSumChunk, ++item) {
      where[2 * item] = t;
      where[2 * item + 1] = start;
    }
#pragma omp parallel for schedule(static) if (worth(elements))
  for (int64_t item = 0; item < items; ++item) {
    const int64_t t = where[2 * item];
    const int64_t start = where[2 * item + 1];
    partials[item] = sumSquaresDouble(tensors[t] + start,
                                      std::min(kSumChunk, sizes[t] - start));
  }
  double total = 0.0;
  for (int64_t item = 0; item < items; ++item)
    total += partials[item];
  out[0] = static_cast<float>(std::sqrt(total));
}

namespace {

// The Adam direction mhat / (sqrt(vhat) + eps) (+ weight decay * w) from the
// already-updated moments.
struct AdamConstants {
  float invCorrection1, invCorrection2, epsilon, weightDecay;
};

[[gnu::always_inline]] inline float adamDirection(float m, float v, float w,
                                                  const AdamConstants &k) {
  const float u =
      (m * k.invCorrection1) / (std::sqrt(v * k.invCorrection2) + k.epsilon);
  return std::fma(k.weightDecay, w, u);
}

} // namespace

void adamUpdate(float *w, const float *g, float *m, float *v, int64_t n,
                int64_t segments, float lr, float globalNorm, float clipNorm,
                const AdamParams &params) {
  if (n <= 0 || segments <= 0)
    return;
  if (params.skipNonFinite && !std::isfinite(globalNorm))
    return; // fp16 overflow: the runtime lowers the loss scale and goes on
  // The clip factor and the loss-scale division in one factor on g.
  const float clip =
      ((clipNorm > 0.0f && globalNorm > clipNorm) ? clipNorm / globalNorm
                                                  : 1.0f) *
      params.invLossScale;
  const double t = static_cast<double>(params.step);
  const double correction1 =
      1.0 - std::pow(static_cast<double>(params.beta1), t);
  const double correction2 =
      1.0 - std::pow(static_cast<double>(params.beta2), t);
  const AdamConstants k{static_cast<float>(1.0 / correction1),
                        static_cast<float>(1.0 / correction2), params.epsilon,
                        params.applyWeightDecay ? params.weightDecay : 0.0f};
  const float b1 = params.beta1, b2 = params.beta2;
  const float c1 = 1.0f - b1, c2 = 1.0f - b2;
  const int64_t total = n * segments;

  if (!params.lamb) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(total))
    for (int64_t i = 0; i < total; ++i) {
      const float gi = clip * g[i];
      const float mi = b1 * m[i] + c1 * gi;
      const float vi = b2 * v[i] + c2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      w[i] -= lr * adamDirection(mi, vi, w[i], k);
    }
    return;
  }

  // LAMB: pass 1 updates the moments and sums ||w||^2 and ||u||^2 per
  // kSumChunk piece of each segment; pass 2 recomputes u from the stored
  // moments and applies w -= lr * r * u with the segment's trust ratio r.
  const int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  const int64_t items = segments * chunks;
  double *sumW = scratch(static_cast<size_t>(2 * items + segments));
  double *sumU = sumW + items;
  double *factor = sumU + items;
#pragma omp parallel for schedule(static) if (worth(total))
  for (int64_t item = 0; item < items; ++item) {
    const int64_t start = (item / chunks) * n + (item % chunks) * kSumChunk;
    const int64_t end = std::min((item / chunks + 1) * n, start + kSumChunk);
    double ww = 0.0, uu = 0.0;
#pragma omp simd reduction(+ : ww, uu)
    for (int64_t i = start; i < end; ++i) {
      const float gi = clip * g[i];
      const float mi = b1 * m[i] + c1 * gi;
      const float vi = b2 * v[i] + c2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      const double u = adamDirection(mi, vi, w[i], k);
      const double wi = w[i];
      ww += wi * wi;
      uu += u * u;
    }
    sumW[item] = ww;
    sumU[item] = uu;
  }
  for (int64_t s = 0; s < segments; ++s) {
    double ww = 0.0, uu = 0.0;
    for (int64_t ch = 0; ch < chunks; ++ch) {
      ww += sumW[s * chunks + ch];
      uu += sumU[s * chunks + ch];
    }
    const double ratio =
        (ww > 0.0 && uu > 0.0) ? std::sqrt(ww) / std::sqrt(uu) : 1.0;
    factor[s] = static_cast<double>(lr) * ratio;
  }
#pragma omp parallel for schedule(static) if (worth(total))
  for (int64_t item = 0; item < items; ++item) {
    const int64_t start = (item / chunks) * n + (item % chunks) * kSumChunk;
    const int64_t end = std::min((item / chunks + 1) * n, start + kSumChunk);
    const float step = static_cast<float>(factor[item / chunks]);
#pragma omp simd
    for (int64_t i = start; i < end; ++i)
      w[i] -= step * adamDirection(m[i], v[i], w[i], k);
  }
}

} // namespace ferry::cpu
