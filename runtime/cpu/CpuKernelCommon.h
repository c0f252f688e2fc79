// What the CPU kernel files (runtime/cpu/Cpu*Kernels.cpp, one op family
// each) share: when a loop is worth forking threads for, the fixed piece
// sizes that keep reductions independent of the thread count, per-thread
// scratch, and the vectorisable exp / normal-CDF approximations and row
// helpers. Everything here is inline: the kernels need it inlined into their
// simd loops. exp and erf are polynomial approximations written here (within
// a few float ulps) because glibc's vector math is only used under
// -ffast-math; scalar libm calls would dominate softmax, GELU and the loss.
#pragma once

#include <omp.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
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

// dst = 0 (dstRows x width) unless `accumulate`, then dst[rowOf(r), :] +=
// src[r, :] for r in [0, srcRows) in increasing r (rows whose rowOf is
// negative add nowhere). Threads split the columns,
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
      const int64_t row = rowOf(r);
      if (row < 0)
        continue;
      float *d = dst + row * width;
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
        const int64_t row = rowOf(r);
        if (row < 0)
          continue;
        float *d = dst + row * width;
        const float *s = src + r * width;
#pragma omp simd
        for (int64_t c = c0; c < c1; ++c)
          d[c] += s[c];
      }
    }
  }
}

// Philox4x32-10 exactly as random/Philox.cpp computes it, for `count`
// consecutive blocks starting at `firstBlock` (= element / 4) of one
// (sample, layer) stream, written block-major into words[4 * count]. Written
// as a flat loop over blocks so that the compiler vectorises across blocks.
inline void philoxBlocks(uint32_t key0, uint32_t key1, uint64_t firstBlock,
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

} // namespace

} // namespace ferry::cpu
