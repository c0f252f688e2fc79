// ferry's CUDA simulator: the 16-bit float types and the conversions ferry
// uses, bit for bit as the device rounds them (cvt.rn.bf16.f32 and
// cvt.rn.f16.f32: round to nearest, ties to even; NaN to the canonical
// 0x7fff; fp16 overflow to infinity, subnormals kept). Checked against
// NVIDIA's own host implementations in cuda_bf16.hpp / cuda_fp16.hpp by
// test/cudasim/SimulatorTest.cpp.
#pragma once

#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
  uint16_t __x;
};
struct __half {
  uint16_t __x;
};
typedef __nv_bfloat16 nv_bfloat16;
typedef __half half;

namespace cudasim {
inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// Round `kept` (the truncated result) up when the dropped bits are more
// than half, or exactly half with an odd result.
inline uint32_t roundNearestEven(uint32_t kept, uint32_t remainder,
                                 uint32_t half) {
  return (remainder > half || (remainder == half && (kept & 1u))) ? kept + 1
                                                                  : kept;
}
} // namespace cudasim

inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t x = cudasim::bitsOf(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return {0x7fff};
  return {static_cast<uint16_t>(
      cudasim::roundNearestEven(x >> 16, x & 0xffffu, 0x8000u))};
}
inline float __bfloat162float(__nv_bfloat16 h) {
  return cudasim::floatOf(static_cast<uint32_t>(h.__x) << 16);
}

inline __half __float2half_rn(float f) {
  uint32_t x = cudasim::bitsOf(f);
  uint32_t u = x & 0x7fffffffu, sign = (x >> 16) & 0x8000u;
  if (u >= 0x7f800000u) // infinity keeps its sign; NaN is canonical
    return {
        static_cast<uint16_t>(u == 0x7f800000u ? (sign | 0x7c00u) : 0x7fffu)};
  if (u > 0x477fefffu) // rounds past the largest finite half: infinity
    return {static_cast<uint16_t>(sign | 0x7c00u)};
  if (u >= 0x38800000u) // a normal half: 13 mantissa bits dropped
    return {static_cast<uint16_t>(
        sign | cudasim::roundNearestEven((u - 0x38000000u) >> 13, u & 0x1fffu,
                                         0x1000u))};
  if (u < 0x33000001u) // at most half the smallest subnormal: zero
    return {static_cast<uint16_t>(sign)};
  // A subnormal half: the mantissa with its implicit bit, shifted.
  uint32_t shift = 0x7eu - (u >> 23);
  uint32_t mantissa = (u & 0x7fffffu) | 0x800000u;
  uint32_t kept = mantissa >> shift;
  uint32_t remainder = mantissa & ((1u << shift) - 1);
  return {static_cast<uint16_t>(
      sign | cudasim::roundNearestEven(kept, remainder, 1u << (shift - 1)))};
}
inline float __half2float(__half h) {
  uint32_t sign = (h.__x & 0x8000u) << 16, exponent = (h.__x >> 10) & 0x1fu,
           mantissa = h.__x & 0x3ffu;
  if (exponent == 0x1f) // infinity or NaN
    return cudasim::floatOf(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) { // zero or subnormal: mantissa * 2^-24, exact in float
    float v = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return cudasim::floatOf(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}
