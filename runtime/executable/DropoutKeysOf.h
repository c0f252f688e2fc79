// Where an instruction of a dropout kernel (dialects/rt/kernels: dropout,
// softmax_dropout, dropout_softmax_grad, residual_layer_norm, attention,
// attention_grad) keeps its optional `dropout_keys` buffer and how to read
// it: the one place both backends take packed rows' keys from.
#pragma once

#include "runtime/executable/KernelTable.h"
#include "runtime/kernels/DropoutKeys.h"

#include <cstddef>
#include <cstdint>

namespace ferry {

// `I(k)`: the instruction's k-th integer, `ints` how many it has,
// `buffers` how many buffers, `i32(b)` buffer b. Unset keys (unpacked) when
// the instruction has no dropout_keys buffer.
template <typename Ints, typename I32>
PackedDropoutKeys dropoutKeysOf(kernels::Kernel kernel, Ints I, size_t ints,
                                size_t buffers, I32 i32) {
  PackedDropoutKeys k;
  auto tokens = [&](size_t buffer, int64_t seq, int64_t width) {
    k.keys = i32(buffer), k.seq = seq, k.width = width;
    k.layout = PackedDropoutKeys::Tokens;
  };
  auto attention = [&](size_t buffer, int64_t seq) {
    k.keys = i32(buffer), k.seq = seq;
    k.layout = PackedDropoutKeys::Attention;
  };
  using kernels::Kernel;
  switch (kernel) {
  case Kernel::Dropout: // [x, out, keys]; ints [..., key_layout, key_seq]
    if (buffers > 2 && ints > 7 && I(7) > 0) {
      if (I(6) == PackedDropoutKeys::Attention)
        attention(2, I(7));
      else
        tokens(2, I(7), I(1) / I(7));
    }
    break;
  case Kernel::SoftmaxDropout: // [x, mask, probs, out, ids, keys]
    if (buffers > 5)
      attention(5, I(2));
    break;
  case Kernel::DropoutSoftmaxGrad: // [y, dy, dx, keys]
    if (buffers > 3)
      attention(3, I(1));
    break;
  case Kernel::ResidualLayerNorm: // [input, residual, scale, bias, sum, out,
                                  //  keys]; a row per token
    if (buffers > 6 && I(1) > 0)
      tokens(6, I(3) / I(1), I(1));
    break;
  case Kernel::Attention: // [q, k, v, mask, out, lse, ids, keys]
    if (buffers > 7)
      attention(7, I(2));
    break;
  case Kernel::AttentionGrad: // [..., workspace, ids, keys]
    if (buffers > 12)
      attention(12, I(2));
    break;
  default:
    break;
  }
  return k;
}

} // namespace ferry
