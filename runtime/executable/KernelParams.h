// What both backends derive from a kernel's typed arguments (KernelArgs.h)
// beyond reading its fields: packed rows' dropout keys (where a dropout
// kernel's optional `dropout_keys` lies and how to read it) and the fused
// attention's shape. The one place the CPU and CUDA bodies take them from.
#pragma once

#include "runtime/Error.h"
#include "runtime/executable/KernelArgs.h"
#include "runtime/kernels/AttentionShape.h"
#include "runtime/kernels/DropoutKeys.h"

#include <vector>

namespace ferry::kernels {

namespace detail {
inline PackedDropoutKeys tokenKeys(const int32_t *keys, int64_t seq,
                                   int64_t width) {
  PackedDropoutKeys k;
  k.keys = keys, k.seq = seq, k.width = width;
  k.layout = PackedDropoutKeys::Tokens;
  return k;
}
inline PackedDropoutKeys attentionKeys(const int32_t *keys, int64_t seq) {
  PackedDropoutKeys k;
  k.keys = keys, k.seq = seq;
  k.layout = PackedDropoutKeys::Attention;
  return k;
}
} // namespace detail

// Unset keys (unpacked rows) when the call has no dropout_keys buffer.
inline PackedDropoutKeys dropoutKeysOf(const DropoutArgs &a) {
  if (!a.dropout_keys || a.key_seq <= 0)
    return {};
  if (a.key_layout == PackedDropoutKeys::Attention)
    return detail::attentionKeys(a.dropout_keys.data, a.key_seq);
  return detail::tokenKeys(a.dropout_keys.data, a.key_seq,
                           a.per_sample / a.key_seq);
}
inline PackedDropoutKeys dropoutKeysOf(const SoftmaxDropoutArgs &a) {
  return a.dropout_keys ? detail::attentionKeys(a.dropout_keys.data, a.cols)
                        : PackedDropoutKeys{};
}
inline PackedDropoutKeys dropoutKeysOf(const DropoutSoftmaxGradArgs &a) {
  return a.dropout_keys ? detail::attentionKeys(a.dropout_keys.data, a.cols)
                        : PackedDropoutKeys{};
}
// A row per token.
inline PackedDropoutKeys dropoutKeysOf(const ResidualLayerNormArgs &a) {
  if (!a.dropout_keys || a.cols <= 0)
    return {};
  return detail::tokenKeys(a.dropout_keys.data, a.per_sample / a.cols, a.cols);
}

// The attention kernels' shape, their packed rows' sequence ids and keys
// included. The sample offset is this run's value (a constant); a backend
// that reads it on the device replaces it.
template <class Args> AttentionShape attentionShapeOf(const Args &a) {
  AttentionShape s;
  s.batch = a.batch, s.heads = a.heads, s.seq = a.seq, s.headDim = a.head_dim;
  s.seed = static_cast<uint64_t>(a.seed);
  s.purpose = static_cast<uint32_t>(a.purpose);
  s.layer = static_cast<uint32_t>(a.layer);
  s.sampleOffset = a.sample_offset.value;
  s.precision = static_cast<int>(a.precision);
  s.sequenceMajor = a.sequence_major != 0;
  s.scale = static_cast<float>(a.scale);
  s.p = static_cast<float>(a.p);
  s.sequenceIds = a.sequence_ids.data;
  if (a.dropout_keys)
    s.dropoutKeys = detail::attentionKeys(a.dropout_keys.data, a.seq);
  return s;
}

// global_norm's tensors as the kernels take them, one count each (a
// mismatch is a damaged executable).
inline std::vector<const float *> tensorsOf(const GlobalNormArgs &a) {
  if (a.counts.size != a.tensors.size)
    throw RuntimeError("global_norm: one count per tensor expected; "
                       "the executable is damaged: recompile it");
  std::vector<const float *> tensors(a.tensors.size);
  for (size_t t = 0; t < tensors.size(); ++t)
    tensors[t] = a.tensors[t];
  return tensors;
}

} // namespace ferry::kernels
