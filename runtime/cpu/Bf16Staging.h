// The CPU backend's bf16 storage (training.precision: bf16): a call whose
// bf16 mask (Instr.bf16_buffers) marks some of its buffers as bf16 runs the
// fp32 kernel on fp32 copies of them: each such buffer is expanded to fp32
// before the kernel and, where the kernel writes it, rounded back to bf16
// (to nearest even) after. So every kernel takes bf16 buffers with no code
// of its own, and computes exactly what "read bf16, compute in fp32, round
// the result" means: the reference the CUDA kernels are tested against.
#pragma once

#include "runtime/executable/ExecutableFile.h"
#include "runtime/executable/KernelTable.h"

#include <cstdint>
#include <vector>

namespace ferry::cpu {

// bf16 words (the high half of an fp32, rounded to nearest even; a NaN
// becomes 0x7fff, as the GPU's conversion gives) and back.
void toBf16Words(const float *x, uint16_t *out, int64_t n);
void fromBf16Words(const uint16_t *x, float *out, int64_t n);

class Bf16Staging {
public:
  // Points buf[b] of every bf16 buffer of `in` at an fp32 copy of its
  // values (buffers at the same address share one copy).
  void stage(const fxe::Instr &in, const kernels::Resolved &use, char **buf);
  // Rounds the copies the kernel wrote back into their bf16 buffers.
  void finish();

private:
  struct Staged {
    char *bf16;
    int64_t elements;
    bool written;
    std::vector<float> values;
  };
  std::vector<Staged> staged_;
};

} // namespace ferry::cpu
