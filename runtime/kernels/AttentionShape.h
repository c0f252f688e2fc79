// The parameters of the fused attention kernels (`attention`,
// `attention_grad` in dialects/rt/kernels/*.td), as both backends'
// kernels take them: sizes, the dropout's key and the products' precision.
#pragma once

#include "runtime/kernels/DropoutKeys.h"
#include "runtime/kernels/StepValue.h"

#include <cstdint>

// The index helpers run in the CUDA kernels too.
#ifdef __CUDACC__
#define FERRY_ATTENTION_HOST_DEVICE __host__ __device__
#else
#define FERRY_ATTENTION_HOST_DEVICE
#endif

namespace ferry {

struct AttentionShape {
  int64_t batch = 0, heads = 0, seq = 0, headDim = 0;
  // The probabilities' dropout: graph.dropout's key over [batch, heads, seq,
  // seq] (element (h * seq + i) * seq + j of sample sampleOffset + b).
  uint64_t seed = 0;
  uint32_t purpose = 0, layer = 0;
  StepValue sampleOffset; // the first sample's global index
  // Tensor parallelism: the heads are this rank's part of the sample's, and
  // element e of the sample is element keyOffset + e of the whole one.
  uint64_t keyOffset = 0;
  float p = 0.0f;
  float scale = 1.0f; // of q kᵀ
  int precision = 0;  // the products' inputs: 0 fp32, 1 bf16
  // q, k, v, out (and their gradients) are [batch, seq, heads, headDim]
  // instead of [batch, heads, seq, headDim]; lse is [batch, heads, seq].
  bool sequenceMajor = false;
  // Packed rows (several sequences a row): each token's sequence, [batch,
  // seq], in the memory the kernel runs in; a query sees only the keys of
  // its own sequence. Null: one sequence a row.
  const int32_t *sequenceIds = nullptr;
  // Packed rows' dropout keys (layout Attention): the probabilities' masks
  // of the unpacked samples. Unset: keyed by sampleOffset + b.
  PackedDropoutKeys dropoutKeys;

  // Whether query i of sample b sees key j (packed rows: the same
  // sequence).
  FERRY_ATTENTION_HOST_DEVICE bool sameSequence(int64_t b, int64_t i,
                                                int64_t j) const {
    return !sequenceIds || sequenceIds[b * seq + i] == sequenceIds[b * seq + j];
  }

  // Packed rows: whether any token of [i0, i0 + ni) shares a sequence with
  // any token of [j0, j0 + nj) (both clipped to the row) in sample b, so
  // that a tile of queries and keys where none does can be skipped: every
  // probability there is 0. A row's sequence ids run 1, 2, ... in contiguous
  // blocks and then padding 0, so the non-zero ids of a range are all ids
  // between its least and its greatest. Always true for unpacked rows.
  FERRY_ATTENTION_HOST_DEVICE bool rangesMeet(int64_t b, int64_t i0, int64_t ni,
                                              int64_t j0, int64_t nj) const {
    if (!sequenceIds)
      return true;
    struct Span {
      int32_t low = 2147483647, high = 0;
      bool padding = false;
    };
    auto span = [&](int64_t first, int64_t n) {
      Span s;
      for (int64_t t = first; t < first + n && t < seq; ++t) {
        int32_t id = sequenceIds[b * seq + t];
        if (id == 0) {
          s.padding = true;
        } else {
          s.low = id < s.low ? id : s.low;
          s.high = id > s.high ? id : s.high;
        }
      }
      return s;
    };
    Span a = span(i0, ni), c = span(j0, nj);
    return (a.padding && c.padding) || (a.low <= c.high && c.low <= a.high);
  }

  // Where row `s` of head (b, h) starts, and the elements between rows.
  FERRY_ATTENTION_HOST_DEVICE int64_t rowStride() const {
    return sequenceMajor ? heads * headDim : headDim;
  }
  FERRY_ATTENTION_HOST_DEVICE int64_t headBase(int64_t b, int64_t h) const {
    return sequenceMajor ? b * seq * heads * headDim + h * headDim
                         : (b * heads + h) * seq * headDim;
  }
};

} // namespace ferry
