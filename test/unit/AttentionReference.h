// The fused attention's double-precision reference for the kernel tests
// (CpuAttentionTest.cpp, CudaAttentionTest.cpp): the probabilities as a
// whole [seq, seq] matrix per (sample, head), graph.dropout's mask from the
// same Philox key, and the textbook backward (dS = P ∘ (dP - rowsum(dP ∘ P))).
#pragma once

#include "runtime/kernels/AttentionShape.h"
#include "runtime/random/Philox.h"

#include <cmath>
#include <vector>

namespace ferry::test {

// A test shape: sizes, the padded keys at each sample's end, the dropout.
struct AttentionCase {
  int64_t batch, heads, seq, dim, padded;
  float p;
};

struct AttentionReference {
  std::vector<double> out, lse, dq, dk, dv;
};

inline AttentionReference
attentionReference(const std::vector<float> &q, const std::vector<float> &k,
                   const std::vector<float> &v, const std::vector<float> &mask,
                   const std::vector<float> &dout, const AttentionShape &a) {
  const int64_t S = a.seq, D = a.headDim, slice = S * D;
  AttentionReference r;
  size_t n = static_cast<size_t>(a.batch * a.heads * slice);
  r.out.assign(n, 0.0), r.dq.assign(n, 0.0), r.dk.assign(n, 0.0),
      r.dv.assign(n, 0.0);
  r.lse.assign(static_cast<size_t>(a.batch * a.heads * S), 0.0);
  std::vector<double> P(S * S), keep(S * S), dP(S * S);
  for (int64_t bh = 0; bh < a.batch * a.heads; ++bh) {
    int64_t b = bh / a.heads, h = bh % a.heads, base = bh * slice;
    for (int64_t i = 0; i < S; ++i) {
      double high = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t c = 0; c < D; ++c)
          s += double(q[base + i * D + c]) * k[base + j * D + c];
        P[i * S + j] = a.sameSequence(b, i, j) ? s * a.scale + mask[b * S + j]
                                               : -INFINITY; // packed rows
        high = std::max(high, P[i * S + j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < S; ++j)
        sum += std::exp(P[i * S + j] - high);
      r.lse[bh * S + i] = high + std::log(sum);
      for (int64_t j = 0; j < S; ++j) {
        P[i * S + j] = std::exp(P[i * S + j] - high) / sum;
        bool kept = a.p == 0.0f ||
                    random::dropoutKeeps(
                        a.seed, a.purpose, a.layer,
                        static_cast<uint64_t>(a.sampleOffset.value() + b),
                        (h * S + i) * S + j, a.p);
        keep[i * S + j] = kept ? 1.0 / (1.0 - a.p) : 0.0;
        for (int64_t c = 0; c < D; ++c)
          r.out[base + i * D + c] +=
              P[i * S + j] * keep[i * S + j] * v[base + j * D + c];
      }
    }
    for (int64_t i = 0; i < S; ++i) {
      double rowSum = 0;
      for (int64_t j = 0; j < S; ++j) {
        double dPd = 0;
        for (int64_t c = 0; c < D; ++c)
          dPd += double(dout[base + i * D + c]) * v[base + j * D + c];
        dP[i * S + j] = dPd * keep[i * S + j];
        rowSum += dP[i * S + j] * P[i * S + j];
        for (int64_t c = 0; c < D; ++c)
          r.dv[base + j * D + c] +=
              P[i * S + j] * keep[i * S + j] * dout[base + i * D + c];
      }
      for (int64_t j = 0; j < S; ++j) {
        double ds = a.scale * P[i * S + j] * (dP[i * S + j] - rowSum);
        for (int64_t c = 0; c < D; ++c) {
          r.dq[base + i * D + c] += ds * k[base + j * D + c];
          r.dk[base + j * D + c] += ds * q[base + i * D + c];
        }
      }
    }
  }
  return r;
}

// ||got - want|| / ||want||.
inline double relativeError(const std::vector<float> &got,
                            const std::vector<double> &want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = (i < got.size() ? double(got[i]) : 0.0) - want[i];
    diff += std::isnan(d) ? INFINITY : d * d;
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / norm);
}

// [batch, heads, seq, dim] <-> [batch, seq, heads, dim]: the sequence-major
// layout's copy of a head-major tensor (toSequenceMajor) or back.
inline std::vector<float> swapHeads(const std::vector<float> &x,
                                    const AttentionShape &a,
                                    bool toSequenceMajor) {
  std::vector<float> out(x.size());
  int64_t B = a.batch, H = a.heads, S = a.seq, D = a.headDim;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < D; ++d) {
          int64_t headMajor = ((b * H + h) * S + s) * D + d;
          int64_t seqMajor = ((b * S + s) * H + h) * D + d;
          if (toSequenceMajor)
            out[seqMajor] = x[headMajor];
          else
            out[headMajor] = x[seqMajor];
        }
  return out;
}

// Packed rows: sample b's tokens in sequences 1, 2, 3 of about a quarter,
// a third and the rest of the row before its last `padded` tokens (with b
// more), which are sequence 0 (padding: the mask takes them out).
inline std::vector<int32_t> packedSequenceIds(int64_t batch, int64_t seq,
                                              int64_t padded) {
  std::vector<int32_t> ids(static_cast<size_t>(batch * seq), 0);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t real = std::max<int64_t>(seq - padded - b, 3);
    int64_t first = std::max<int64_t>(real / 4, 1),
            second = std::max<int64_t>(real / 3, 1);
    for (int64_t j = 0; j < real; ++j)
      ids[b * seq + j] = j < first ? 1 : j < first + second ? 2 : 3;
  }
  return ids;
}

// Zeroes the rows of padding tokens (sequence 0) in both tensors, head-
// major [batch, heads, seq, width] (width headDim, or 1 for lse).
inline void dropPadding(const std::vector<int32_t> &ids,
                        const AttentionShape &a, std::vector<float> &got,
                        std::vector<double> &want, int64_t width = -1) {
  if (width < 0)
    width = a.headDim;
  for (int64_t bh = 0; bh < a.batch * a.heads; ++bh)
    for (int64_t s = 0; s < a.seq; ++s)
      if (ids[(bh / a.heads) * a.seq + s] == 0)
        for (int64_t c = 0; c < width; ++c) {
          got[(bh * a.seq + s) * width + c] = 0.0f;
          want[(bh * a.seq + s) * width + c] = 0.0;
        }
}

// A padding mask: the last `padded` keys of each sample get `fill`.
inline std::vector<float> paddingMask(int64_t batch, int64_t seq,
                                      int64_t padded, float fill = -10000.0f) {
  std::vector<float> m(static_cast<size_t>(batch * seq), 0.0f);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = seq - padded - b; j < seq; ++j)
      if (j >= 0)
        m[b * seq + j] = fill;
  return m;
}

} // namespace ferry::test
