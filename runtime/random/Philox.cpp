// Box-Muller normals for initialisation (host only); the Philox block and the
// uniform stream dropout uses are inline in Philox.h, shared with the CUDA
// kernels. See Philox.h for the key and counter layout.
#include "runtime/random/Philox.h"

#include <cmath>
#include <utility>

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

std::vector<uint32_t> shuffled(uint32_t n, uint64_t seed, uint32_t purpose,
                               uint64_t sample) {
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i)
    order[i] = i;
  for (uint32_t i = n > 0 ? n - 1 : 0; i > 0; --i) {
    uint32_t j = static_cast<uint32_t>(randomBits(seed, purpose, 0, sample, i) %
                                       (static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

} // namespace ferry::random
