// ferry's CUDA simulator: the warp matrix functions of CUDA's <mma.h>
// (nvcuda::wmma) that ferry's kernels use, the 16x16x16 shape with bf16 or
// half inputs and float accumulators, written from the CUDA C++ Programming
// Guide ("Warp Matrix Functions"). Test-only.
//
// What the guide promises, the simulator keeps:
// - every function is warp-collective: all 32 lanes of the warp reach it
//   (each call is a warp barrier here, so a lane that skips it deadlocks the
//   warp and the simulator names the line);
// - load/store pointers are 256-bit aligned and `ldm` a multiple of 16
//   bytes, else the simulator stops;
// - which matrix element a lane's `x[i]` holds is unspecified. The simulator
//   scatters the elements over lanes by a fixed pseudo-random permutation,
//   a different one for each of matrix_a, matrix_b and accumulator, and none
//   of them the GPU's: code that reads or writes `x[i]` as a particular row or
//   column computes wrong numbers here. Element-wise operations applied to
//   every element alike (scaling, fill) are layout-free and work.
// - mma_sync accumulates in float, the products of 16-bit inputs exact, in
//   increasing k (the tensor cores' order is unspecified).
#pragma once

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "cudasim/Device.h"

#include <cstdint>
#include <string>
#include <type_traits>

namespace cudasim {
[[noreturn]] void fail(const std::string &message);

namespace wmma {
// Fragment element `e` of lane `l` is element map[l * 8 + e] (row-major
// index into the 16x16 tile) for use 0 (matrix_a), 1 (matrix_b) and 2
// (accumulator).
const uint16_t *elementMap(int use);
// Each warp's exchange area for mma_sync: a warp's lanes deposit their
// fragments here between two warp barriers.
struct Exchange {
  float a[32][8], b[32][8], c[32][8];
};
Exchange &exchange(unsigned warp);

inline unsigned linearThread() {
  return threadIdx.x + threadIdx.y * blockDim.x +
         threadIdx.z * blockDim.x * blockDim.y;
}
inline float toFloat(float v) { return v; }
inline float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
inline float toFloat(__half v) { return __half2float(v); }

// Calls f(e, row, column) for each of this lane's 8 elements of a fragment
// of `use`.
template <typename F> void forLaneElements(int use, F f) {
  const uint16_t *map = elementMap(use);
  unsigned lane = linearThread() % 32;
  for (int e = 0; e < 8; ++e) {
    unsigned index = map[lane * 8 + e];
    f(e, index / 16, index % 16);
  }
}

inline void checkPointer(const void *p, unsigned ldm, size_t elementBytes,
                         const char *what, const char *file, int line) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
    fail(std::string(what) + " at " + file + ":" + std::to_string(line) +
         ": the pointer is not 256-bit aligned (the guide requires it)");
  if (ldm * elementBytes % 16 != 0)
    fail(std::string(what) + " at " + file + ":" + std::to_string(line) +
         ": ldm " + std::to_string(ldm) +
         " is not a multiple of 16 bytes (the guide requires it)");
}
} // namespace wmma
} // namespace cudasim

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use> constexpr int useIndex() {
  if constexpr (std::is_same_v<Use, matrix_a>)
    return 0;
  else if constexpr (std::is_same_v<Use, matrix_b>)
    return 1;
  else
    return 2;
}

template <typename Use, int m, int n, int k, typename T, typename Layout = void>
class fragment {
  static_assert(m == 16 && n == 16 && k == 16,
                "the simulator has the m16n16k16 shape only");

public:
  static constexpr int num_elements = 8;
  T x[num_elements];
};

template <typename Use, typename T, typename Layout, typename V>
void fill_fragment(fragment<Use, 16, 16, 16, T, Layout> &f, const V &value,
                   const char *file = __builtin_FILE(),
                   int line = __builtin_LINE()) {
  cudasim::wholeWarp(file, line);
  for (T &x : f.x)
    x = static_cast<T>(value);
}
template <typename Use, typename Layout>
void fill_fragment(fragment<Use, 16, 16, 16, __nv_bfloat16, Layout> &f,
                   float value, const char *file = __builtin_FILE(),
                   int line = __builtin_LINE()) {
  cudasim::wholeWarp(file, line);
  for (__nv_bfloat16 &x : f.x)
    x = __float2bfloat16_rn(value);
}

// matrix_a (16 x k) or matrix_b (k x 16) from memory in the fragment's
// layout: row_major reads element (r, c) at p[r * ldm + c], col_major at
// p[c * ldm + r].
template <typename Use, typename T, typename Layout>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout> &f, const T *p,
                      unsigned ldm, const char *file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  static_assert(!std::is_same_v<Use, accumulator>,
                "an accumulator's load names its memory layout");
  cudasim::wmma::checkPointer(p, ldm, sizeof(T), "wmma::load_matrix_sync", file,
                              line);
  cudasim::wholeWarp(file, line);
  cudasim::wmma::forLaneElements(
      useIndex<Use>(), [&](int e, unsigned r, unsigned c) {
        f.x[e] =
            std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[c * ldm + r];
      });
}

template <typename T>
void load_matrix_sync(fragment<accumulator, 16, 16, 16, T> &f, const T *p,
                      unsigned ldm, layout_t layout,
                      const char *file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  cudasim::wmma::checkPointer(p, ldm, sizeof(T), "wmma::load_matrix_sync", file,
                              line);
  cudasim::wholeWarp(file, line);
  cudasim::wmma::forLaneElements(2, [&](int e, unsigned r, unsigned c) {
    f.x[e] = layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
  });
}

template <typename T>
void store_matrix_sync(T *p, const fragment<accumulator, 16, 16, 16, T> &f,
                       unsigned ldm, layout_t layout,
                       const char *file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  cudasim::wmma::checkPointer(p, ldm, sizeof(T), "wmma::store_matrix_sync",
                              file, line);
  cudasim::wholeWarp(file, line);
  cudasim::wmma::forLaneElements(2, [&](int e, unsigned r, unsigned c) {
    (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[e];
  });
}

// d = a * b + c over the warp (d may be c).
template <typename TA, typename LA, typename TB, typename LB>
void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
              const fragment<matrix_a, 16, 16, 16, TA, LA> &a,
              const fragment<matrix_b, 16, 16, 16, TB, LB> &b,
              const fragment<accumulator, 16, 16, 16, float> &c,
              const char *file = __builtin_FILE(),
              int line = __builtin_LINE()) {
  static_assert(std::is_same_v<TA, TB>, "a and b hold the same type");
  unsigned thread = cudasim::wmma::linearThread(), lane = thread % 32;
  cudasim::wmma::Exchange &x = cudasim::wmma::exchange(thread / 32);
  for (int e = 0; e < 8; ++e) {
    x.a[lane][e] = cudasim::wmma::toFloat(a.x[e]);
    x.b[lane][e] = cudasim::wmma::toFloat(b.x[e]);
    x.c[lane][e] = c.x[e];
  }
  cudasim::wholeWarp(file, line); // every lane's fragments are there
  float A[256], B[256], C[256];
  const uint16_t *mapA = cudasim::wmma::elementMap(0),
                 *mapB = cudasim::wmma::elementMap(1),
                 *mapC = cudasim::wmma::elementMap(2);
  for (int i = 0; i < 256; ++i) {
    A[mapA[i]] = x.a[i / 8][i % 8];
    B[mapB[i]] = x.b[i / 8][i % 8];
    C[mapC[i]] = x.c[i / 8][i % 8];
  }
  float out[8];
  for (int e = 0; e < 8; ++e) {
    unsigned index = mapC[lane * 8 + e], r = index / 16, col = index % 16;
    float sum = C[index];
    for (int kk = 0; kk < 16; ++kk)
      sum += A[r * 16 + kk] * B[kk * 16 + col];
    out[e] = sum;
  }
  cudasim::wholeWarp(file, line); // read before the next call writes
  for (int e = 0; e < 8; ++e)
    d.x[e] = out[e];
}

} // namespace nvcuda::wmma
