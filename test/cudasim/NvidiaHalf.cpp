// NVIDIA's own host implementations of the bf16 and fp16 conversions
// (cuda_bf16.hpp, cuda_fp16.hpp: the same rounding as the device's cvt
// instructions), built against the real CUDA headers: the reference the
// simulator's conversions are checked against, bit for bit.
#include "NvidiaHalf.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

namespace nvidia {
uint16_t float2bfloat16(float f) {
  __nv_bfloat16 h = __float2bfloat16_rn(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}
uint16_t float2half(float f) {
  __half h = __float2half_rn(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}
} // namespace nvidia
