// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11), keyed
// by (seed, purpose, layer, sample, element) and never by call order, so that
// dropout masks and initial weights are the same whatever the micro-batch
// size, execution mode, replica count or backend (ARCHITECTURE.md,
// "Randomness"). Header-only: the compiler hashes purpose strings with the
// same function the runtime uses. Hand-written because no Debian package
// offers a keyed counter-based generator with a stable, documented stream.
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry::random {

// FNV-1a (32-bit) of a purpose string ("attention.probs", a parameter name).
constexpr uint32_t purposeHash(std::string_view text) {
  uint32_t h = 2166136261u;
  for (char c : text) {
    h ^= static_cast<uint8_t>(c);
    h *= 16777619u;
  }
  return h;
}

// One Philox4x32-10 block: 4 random 32-bit words for a 128-bit counter under
// a 64-bit key.
struct Block {
  uint32_t w[4];
};
Block philox(uint32_t counter[4], uint32_t key[2]);

// The stream ferry uses everywhere. The key is (seed low, seed high ^
// purpose); the counter is (element / 4, element >> 34, sample, layer) and
// word element % 4 of the block is element's draw. Sample-major callers
// therefore draw each block once per 4 consecutive elements.
uint32_t randomBits(uint64_t seed, uint32_t purpose, uint32_t layer,
                    uint64_t sample, uint64_t element);

// Uniform in [0, 1) with 24 random bits: (bits >> 8) * 2^-24.
float uniform(uint64_t seed, uint32_t purpose, uint32_t layer, uint64_t sample,
              uint64_t element);

// Standard normal for one element: Box-Muller on words 0 and 1 of the block
// for counter (element / 2, element >> 33, 0xffffffff, layer); even elements
// take the cosine branch, odd ones the sine branch of the same pair.
float normal(uint64_t seed, uint32_t purpose, uint32_t layer, uint64_t element);

// Dropout keeps an element when uniform(...) >= p.
inline bool dropoutKeeps(uint64_t seed, uint32_t purpose, uint32_t layer,
                         uint64_t sample, uint64_t element, float p) {
  return uniform(seed, purpose, layer, sample, element) >= p;
}

} // namespace ferry::random
