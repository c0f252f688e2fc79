// The CPU backend's bf16 storage (Bf16Staging.h).
#include "runtime/cpu/Bf16Staging.h"

#include <cstring>

namespace ferry::cpu {

void toBf16Words(const float *x, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) { // NaN: the GPU's canonical
      out[i] = 0x7fff;
      continue;
    }
    bits += 0x7fffu + ((bits >> 16) & 1u);
    out[i] = static_cast<uint16_t>(bits >> 16);
  }
}

void fromBf16Words(const uint16_t *x, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(&out[i], &bits, 4);
  }
}

void Bf16Staging::stage(const fxe::Instr &in, const kernels::Resolved &use,
                        char **buf) {
  staged_.clear();
  uint64_t mask = in.bf16_buffers();
  size_t nb = in.buffers()->size();
  staged_.reserve(nb);
  for (size_t b = 0; b < nb && b < 64; ++b) {
    if (!(mask >> b & 1))
      continue;
    int64_t elements = in.buffers()->Get(b)->bytes() / 2;
    Staged *s = nullptr;
    for (Staged &t : staged_)
      if (t.bf16 == buf[b] && t.elements == elements)
        s = &t;
    if (!s) {
      staged_.push_back(Staged{buf[b], elements, false, {}});
      s = &staged_.back();
      // Expanded whether or not the kernel reads it: a kernel that writes
      // part of the range leaves the rest as it was.
      s->values.resize(static_cast<size_t>(elements));
      fromBf16Words(reinterpret_cast<const uint16_t *>(buf[b]),
                    s->values.data(), elements);
    }
    s->written = s->written || use.buffers[b].writes;
    buf[b] = reinterpret_cast<char *>(s->values.data());
  }
}

void Bf16Staging::finish() {
  for (Staged &s : staged_) {
    if (!s.written)
      continue;
    // The arena holds the words in place (buffers are 64-byte aligned).
    toBf16Words(s.values.data(), reinterpret_cast<uint16_t *>(s.bf16),
                s.elements);
  }
  staged_.clear();
}

} // namespace ferry::cpu
