// Philox4x32-10 block function and the keyed streams built on it (uniform
// bits, uniform floats, Box-Muller normals) that dropout and initialisation
// use; see Philox.h for the key and counter layout.
#include "runtime/random/Philox.h"

#include <cmath>

namespace ferry::random {

namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;
constexpr int kRounds = 10;

inline void mulHiLo(uint32_t a, uint32_t b, uint32_t &hi, uint32_t &lo) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

// Key for every stream: (seed low, seed high ^ purpose).
inline void streamKey(uint64_t seed, uint32_t purpose, uint32_t key[2]) {
  key[0] = static_cast<uint32_t>(seed);
  key[1] = static_cast<uint32_t>(seed >> 32) ^ purpose;
}

} // namespace

Block philox(uint32_t counter[4], uint32_t key[2]) {
  uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulHiLo(kMul0, c0, hi0, lo0);
    mulHiLo(kMul1, c2, hi1, lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0;
    uint32_t n1 = lo1;
    uint32_t n2 = hi0 ^ c3 ^ k1;
    uint32_t n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
  }
  return Block{{c0, c1, c2, c3}};
}

uint32_t randomBits(uint64_t seed, uint32_t purpose, uint32_t layer,
                    uint64_t sample, uint64_t element) {
  uint32_t key[2];
  streamKey(seed, purpose, key);
  uint32_t counter[4] = {static_cast<uint32_t>(element / 4),
                         static_cast<uint32_t>(element >> 34),
                         static_cast<uint32_t>(sample), layer};
  return philox(counter, key).w[element % 4];
}

float uniform(uint64_t seed, uint32_t purpose, uint32_t layer, uint64_t sample,
              uint64_t element) {
  uint32_t bits = randomBits(seed, purpose, layer, sample, element);
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

float normal(uint64_t seed, uint32_t purpose, uint32_t layer,
             uint64_t element) {
  uint32_t key[2];
  streamKey(seed, purpose, key);
  uint32_t counter[4] = {static_cast<uint32_t>(element / 2),
                         static_cast<uint32_t>(element >> 33), 0xffffffffu,
                         layer};
  Block block = philox(counter, key);
  constexpr double kTwoPow24 = 16777216.0;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  double u1 = (static_cast<double>(block.w[0] >> 8) + 1.0) / kTwoPow24;
  double u2 = static_cast<double>(block.w[1] >> 8) / kTwoPow24;
  double r = std::sqrt(-2.0 * std::log(u1));
  double angle = kTwoPi * u2;
  double value = (element % 2 == 0) ? r * std::cos(angle) : r * std::sin(angle);
  return static_cast<float>(value);
}

} // namespace ferry::random
