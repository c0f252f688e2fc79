// The parameters of the fused attention kernels (`attention`,
// `attention_grad` in runtime/executable/Kernels.def), as both backends'
// kernels take them: sizes, the dropout's key and the products' precision.
#pragma once

#include <cstdint>

namespace ferry {

struct AttentionShape {
  int64_t batch = 0, heads = 0, seq = 0, headDim = 0;
  // The probabilities' dropout: graph.dropout's key over [batch, heads, seq,
  // seq] (element (h * seq + i) * seq + j of sample sampleOffset + b).
  uint64_t seed = 0;
  uint32_t purpose = 0, layer = 0;
  uint64_t sampleOffset = 0;
  float p = 0.0f;
  float scale = 1.0f; // of q kᵀ
  int precision = 0;  // the products' inputs: 0 fp32, 1 bf16
};

// From an instruction's parameters in Kernels.def order: I(k) the k-th
// integer ([batch, heads, seq, head_dim, seed, purpose, layer,
// sample_offset, precision]), F(k) the k-th float ([scale, p]).
template <typename Ints, typename Floats>
AttentionShape attentionShape(Ints I, Floats F) {
  AttentionShape a;
  a.batch = I(0), a.heads = I(1), a.seq = I(2), a.headDim = I(3);
  a.seed = static_cast<uint64_t>(I(4));
  a.purpose = static_cast<uint32_t>(I(5));
  a.layer = static_cast<uint32_t>(I(6));
  a.sampleOffset = static_cast<uint64_t>(I(7));
  a.precision = static_cast<int>(I(8));
  a.scale = static_cast<float>(F(0));
  a.p = static_cast<float>(F(1));
  return a;
}

} // namespace ferry
