// Box-Muller normals for initialisation (host only); the Philox block and the
// uniform stream dropout uses are inline in Philox.h, shared with the CUDA
// kernels. See Philox.h for the key and counter layout.
#include "runtime/random/Philox.h"

#include <cmath>

namespace ferry::random {

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
