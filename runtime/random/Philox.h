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
#include <vector>

// The stream is shared by the CPU backend and the CUDA kernels (dropout
// masks must be the same bits on both), so its functions compile for both.
#ifdef __CUDACC__
#define FERRY_HOST_DEVICE __host__ __device__
#else
#define FERRY_HOST_DEVICE
#endif

namespace ferry::random {

// FNV-1a (32-bit) of a purpose string ("attention.probs", a parameter name).
// (Host only: the compiler and the runtime hash names; kernels get the hash.)
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
FERRY_HOST_DEVICE inline Block philox(const uint32_t counter[4],
                                      const uint32_t key[2]) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
    uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = static_cast<uint32_t>(p1);
    uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
  }
  return Block{{c0, c1, c2, c3}};
}

// Key for every stream: (seed low, seed high ^ purpose).
FERRY_HOST_DEVICE inline void streamKey(uint64_t seed, uint32_t purpose,
                                        uint32_t key[2]) {
  key[0] = static_cast<uint32_t>(seed);
  key[1] = static_cast<uint32_t>(seed >> 32) ^ purpose;
}

// The stream ferry uses everywhere. The key is (seed low, seed high ^
// purpose); the counter is (element / 4, element >> 34, sample, layer) and
// word element % 4 of the block is element's draw. Sample-major callers
// therefore draw each block once per 4 consecutive elements.
FERRY_HOST_DEVICE inline uint32_t randomBits(uint64_t seed, uint32_t purpose,
                                             uint32_t layer, uint64_t sample,
                                             uint64_t element) {
  uint32_t key[2];
  streamKey(seed, purpose, key);
  uint32_t counter[4] = {static_cast<uint32_t>(element / 4),
                         static_cast<uint32_t>(element >> 34),
                         static_cast<uint32_t>(sample), layer};
  return philox(counter, key).w[element % 4];
}

// Uniform in [0, 1) with 24 random bits: (bits >> 8) * 2^-24.
FERRY_HOST_DEVICE inline float uniform(uint64_t seed, uint32_t purpose,
                                       uint32_t layer, uint64_t sample,
                                       uint64_t element) {
  uint32_t bits = randomBits(seed, purpose, layer, sample, element);
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// Standard normal for one element: Box-Muller on words 0 and 1 of the block
// for counter (element / 2, element >> 33, 0xffffffff, layer); even elements
// take the cosine branch, odd ones the sine branch of the same pair.
float normal(uint64_t seed, uint32_t purpose, uint32_t layer, uint64_t element);

// 0 .. n-1 in the order of a Fisher-Yates shuffle keyed by (seed, purpose,
// sample): for i = n-1 down to 1, swap i with
// randomBits(seed, purpose, 0, sample, i) % (i + 1). The data loader's
// per-epoch order (sample = the epoch) and ferry squad train's.
std::vector<uint32_t> shuffled(uint32_t n, uint64_t seed, uint32_t purpose,
                               uint64_t sample);

// Dropout keeps an element when uniform(...) >= p.
FERRY_HOST_DEVICE inline bool dropoutKeeps(uint64_t seed, uint32_t purpose,
                                           uint32_t layer, uint64_t sample,
                                           uint64_t element, float p) {
  return uniform(seed, purpose, layer, sample, element) >= p;
}

} // namespace ferry::random
