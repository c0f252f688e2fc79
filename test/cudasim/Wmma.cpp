// ferry's CUDA simulator: the state behind include/mma.h, the element maps
// of the three fragment kinds and each warp's exchange area. Test-only.
#include "mma.h"

#include <array>

namespace cudasim::wmma {

namespace {
// A fixed pseudo-random permutation of the 256 elements of a tile (a
// Fisher-Yates shuffle driven by an LCG with the given start), so a lane's
// x[i] is no particular row or column.
std::array<uint16_t, 256> permutation(uint32_t state) {
  std::array<uint16_t, 256> p;
  for (int i = 0; i < 256; ++i)
    p[i] = static_cast<uint16_t>(i);
  for (int i = 255; i > 0; --i) {
    state = state * 1664525u + 1013904223u;
    int j = static_cast<int>((state >> 8) % static_cast<uint32_t>(i + 1));
    std::swap(p[i], p[j]);
  }
  return p;
}
} // namespace

const uint16_t *elementMap(int use) {
  static const std::array<uint16_t, 256> maps[3] = {
      permutation(0x9e3779b9u), permutation(0x85ebca6bu),
      permutation(0xc2b2ae35u)};
  return maps[use].data();
}

Exchange &exchange(unsigned warp) {
  // Blocks run one after another on an OS thread: one set per OS thread.
  static thread_local Exchange warps[32];
  if (warp >= 32)
    fail("warp " + std::to_string(warp) + " is past a block's 32 warps");
  return warps[warp];
}

} // namespace cudasim::wmma
