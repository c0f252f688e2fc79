// NVIDIA's host conversions to bf16 and fp16 (see NvidiaHalf.cpp).
#pragma once
#include <cstdint>
namespace nvidia {
uint16_t float2bfloat16(float f);
uint16_t float2half(float f);
} // namespace nvidia
