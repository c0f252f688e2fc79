// The CPU backend's reductions and optimizer: reduce over a dimension, the
// global gradient norm, AdamW and LAMB updates; and the family's typed
// bodies (dialects/rt/kernels/Reduction.td).
#include "runtime/Error.h"
#include "runtime/cpu/CpuKernelContext.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/executable/KernelParams.h"

#include "runtime/cpu/CpuKernelCommon.h"

#include <vector>

namespace ferry::cpu {

void reduce(Reduce kind, const float *x, float *out, int64_t outer,
            int64_t size, int64_t inner) {
  if (outer <= 0 || inner <= 0)
    return;
  if (size <= 0) {
    // Empty reductions: 0 for sums, NaN for the mean, -inf for max.
    const float value =
        kind == Reduce::Mean  ? std::numeric_limits<float>::quiet_NaN()
        : kind == Reduce::Max ? -std::numeric_limits<float>::infinity()
                              : 0.0f;
    fill(out, outer * inner, value);
    return;
  }
  const int64_t total = outer * size * inner;
  if (inner == 1) {
    // Contiguous rows: double partials of kSumChunk elements per row,
    // combined in order.
    const int64_t chunks = (size + kSumChunk - 1) / kSumChunk;
    double *partials = scratch(static_cast<size_t>(outer * chunks));
#pragma omp parallel for schedule(static) if (worth(total))
    for (int64_t item = 0; item < outer * chunks; ++item) {
      const int64_t o = item / chunks;
      const int64_t start = (item % chunks) * kSumChunk;
      const int64_t length = std::min(kSumChunk, size - start);
      const float *xs = x + o * size + start;
      if (kind == Reduce::Max) {
        float m = xs[0];
        for (int64_t i = 1; i < length; ++i)
          m = maxNan(m, xs[i]);
        partials[item] = m;
      } else if (kind == Reduce::SumSquares) {
        partials[item] = sumSquaresDouble(xs, length);
      } else {
        partials[item] = sumDouble(xs, length);
      }
    }
    for (int64_t o = 0; o < outer; ++o) {
      const double *p = partials + o * chunks;
      double acc = p[0];
      for (int64_t ch = 1; ch < chunks; ++ch) {
        if (kind == Reduce::Max) {
          const float v = static_cast<float>(p[ch]);
          acc = maxNan(static_cast<float>(acc), v);
        } else {
          acc += p[ch];
        }
      }
      if (kind == Reduce::Mean)
        acc /= static_cast<double>(size);
      out[o] = static_cast<float>(acc);
    }
    return;
  }
  // Strided: each work item sums kColumnChunk columns of one outer index
  // over all of `size` in double, rows in increasing order.
  const int64_t colChunks = (inner + kColumnChunk - 1) / kColumnChunk;
#pragma omp parallel for schedule(static) if (worth(total))
  for (int64_t item = 0; item < outer * colChunks; ++item) {
    const int64_t o = item / colChunks;
    const int64_t c0 = (item % colChunks) * kColumnChunk;
    const int64_t width = std::min(kColumnChunk, inner - c0);
    const float *xs = x + o * size * inner + c0;
    float *os = out + o * inner + c0;
    if (kind == Reduce::Max) {
      float acc[kColumnChunk];
      for (int64_t c = 0; c < width; ++c)
        acc[c] = xs[c];
      for (int64_t r = 1; r < size; ++r) {
        const float *row = xs + r * inner;
#pragma omp simd
        for (int64_t c = 0; c < width; ++c)
          acc[c] = maxNan(acc[c], row[c]);
      }
      std::memcpy(os, acc, sizeof(float) * width);
      continue;
    }
    double acc[kColumnChunk] = {};
    const bool squares = kind == Reduce::SumSquares;
    for (int64_t r = 0; r < size; ++r) {
      const float *row = xs + r * inner;
      if (squares) {
#pragma omp simd
        for (int64_t c = 0; c < width; ++c) {
          const double v = static_cast<double>(row[c]);
          acc[c] += v * v;
        }
      } else {
#pragma omp simd
        for (int64_t c = 0; c < width; ++c)
          acc[c] += static_cast<double>(row[c]);
      }
    }
    const double factor =
        kind == Reduce::Mean ? 1.0 / static_cast<double>(size) : 1.0;
    for (int64_t c = 0; c < width; ++c)
      os[c] = static_cast<float>(acc[c] * factor);
  }
}

void globalNorm(const float *const *tensors, const int64_t *sizes,
                int64_t count, float *out) {
  // Work items: kSumChunk-element pieces of every tensor, in order.
  int64_t items = 0, elements = 0;
  for (int64_t t = 0; t < count; ++t) {
    items += (sizes[t] + kSumChunk - 1) / kSumChunk;
    elements += sizes[t];
  }
  if (items == 0) {
    out[0] = 0.0f;
    return;
  }
  double *partials = scratch(static_cast<size_t>(items));
  int64_t *where = scratch<int64_t>(static_cast<size_t>(2 * items));
  for (int64_t t = 0, item = 0; t < count; ++t)
    for (int64_t start = 0; start < sizes[t]; start += kSumChunk, ++item) {
      where[2 * item] = t;
      where[2 * item + 1] = start;
    }
#pragma omp parallel for schedule(static) if (worth(elements))
  for (int64_t item = 0; item < items; ++item) {
    const int64_t t = where[2 * item];
    const int64_t start = where[2 * item + 1];
    partials[item] = sumSquaresDouble(tensors[t] + start,
                                      std::min(kSumChunk, sizes[t] - start));
  }
  double total = 0.0;
  for (int64_t item = 0; item < items; ++item)
    total += partials[item];
  out[0] = static_cast<float>(std::sqrt(total));
}

namespace {

// The Adam direction mhat / (sqrt(vhat) + eps) (+ weight decay * w) from the
// already-updated moments.
struct AdamConstants {
  float invCorrection1, invCorrection2, epsilon, weightDecay;
};

[[gnu::always_inline]] inline float adamDirection(float m, float v, float w,
                                                  const AdamConstants &k) {
  const float u =
      (m * k.invCorrection1) / (std::sqrt(v * k.invCorrection2) + k.epsilon);
  return std::fma(k.weightDecay, w, u);
}

AdamConstants constantsOf(const AdamParams &params) {
  const double t = static_cast<double>(params.step);
  return {static_cast<float>(
              1.0 / (1.0 - std::pow(static_cast<double>(params.beta1), t))),
          static_cast<float>(
              1.0 / (1.0 - std::pow(static_cast<double>(params.beta2), t))),
          params.epsilon, params.applyWeightDecay ? params.weightDecay : 0.0f};
}

// LAMB pass 1: the moments from the (clipped, unscaled) gradient, and per
// segment s: sums[s] = sum of w^2, sums[segments + s] = sum of u^2, in
// double over kSumChunk pieces added in a fixed order.
void lambPass1(const float *w, const float *g, float *m, float *v, int64_t n,
               int64_t segments, float clip, const AdamConstants &k, float b1,
               float b2, double *sums) {
  const float c1 = 1.0f - b1, c2 = 1.0f - b2;
  const int64_t total = n * segments;
  const int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  const int64_t items = segments * chunks;
  std::vector<double> sumW(static_cast<size_t>(items)),
      sumU(static_cast<size_t>(items));
#pragma omp parallel for schedule(static) if (worth(total))
  for (int64_t item = 0; item < items; ++item) {
    const int64_t start = (item / chunks) * n + (item % chunks) * kSumChunk;
    const int64_t end = std::min((item / chunks + 1) * n, start + kSumChunk);
    double ww = 0.0, uu = 0.0;
#pragma omp simd reduction(+ : ww, uu)
    for (int64_t i = start; i < end; ++i) {
      const float gi = clip * g[i];
      const float mi = b1 * m[i] + c1 * gi;
      const float vi = b2 * v[i] + c2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      const double u = adamDirection(mi, vi, w[i], k);
      const double wi = w[i];
      ww += wi * wi;
      uu += u * u;
    }
    sumW[item] = ww;
    sumU[item] = uu;
  }
  for (int64_t seg = 0; seg < segments; ++seg) {
    double ww = 0.0, uu = 0.0;
    for (int64_t ch = 0; ch < chunks; ++ch) {
      ww += sumW[seg * chunks + ch];
      uu += sumU[seg * chunks + ch];
    }
    sums[seg] = ww;
    sums[segments + seg] = uu;
  }
}

// LAMB pass 2: w -= lr * r_s * u, r_s = ||w_s|| / ||u_s|| from `sums`.
void lambPass2(float *w, const float *m, const float *v, int64_t n,
               int64_t segments, float lr, const AdamConstants &k,
               const double *sums) {
  const int64_t total = n * segments;
  const int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  const int64_t items = segments * chunks;
  std::vector<double> factor(static_cast<size_t>(segments));
  for (int64_t seg = 0; seg < segments; ++seg) {
    const double ww = sums[seg], uu = sums[segments + seg];
    const double ratio =
        (ww > 0.0 && uu > 0.0) ? std::sqrt(ww) / std::sqrt(uu) : 1.0;
    factor[static_cast<size_t>(seg)] = static_cast<double>(lr) * ratio;
  }
#pragma omp parallel for schedule(static) if (worth(total))
  for (int64_t item = 0; item < items; ++item) {
    const int64_t start = (item / chunks) * n + (item % chunks) * kSumChunk;
    const int64_t end = std::min((item / chunks + 1) * n, start + kSumChunk);
    const float step = static_cast<float>(factor[item / chunks]);
#pragma omp simd
    for (int64_t i = start; i < end; ++i)
      w[i] -= step * adamDirection(m[i], v[i], w[i], k);
  }
}

} // namespace

void adamUpdate(float *w, const float *g, float *m, float *v, int64_t n,
                int64_t segments, float lr, float globalNorm, float clipNorm,
                const AdamParams &params) {
  if (n <= 0 || segments <= 0)
    return;
  if (params.skipNonFinite && !std::isfinite(globalNorm))
    return; // fp16 overflow: the runtime lowers the loss scale and goes on
  // The clip factor and the loss-scale division in one factor on g.
  const float clip =
      ((clipNorm > 0.0f && globalNorm > clipNorm) ? clipNorm / globalNorm
                                                  : 1.0f) *
      params.invLossScale;
  const AdamConstants k = constantsOf(params);
  const float b1 = params.beta1, b2 = params.beta2;
  const float c1 = 1.0f - b1, c2 = 1.0f - b2;
  const int64_t total = n * segments;

  if (!params.lamb) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(total))
    for (int64_t i = 0; i < total; ++i) {
      const float gi = clip * g[i];
      const float mi = b1 * m[i] + c1 * gi;
      const float vi = b2 * v[i] + c2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      w[i] -= lr * adamDirection(mi, vi, w[i], k);
    }
    return;
  }

  // LAMB: pass 1 updates the moments and sums ||w||^2 and ||u||^2 per
  // segment; pass 2 recomputes u from the stored moments and applies
  // w -= lr * r * u with the segment's trust ratio r.
  double *sums = scratch(static_cast<size_t>(2 * segments));
  lambPass1(w, g, m, v, n, segments, clip, k, b1, b2, sums);
  lambPass2(w, m, v, n, segments, lr, k, sums);
}

void lambMoments(const float *w, const float *g, float *m, float *v, int64_t n,
                 int64_t segments, float globalNorm, float clipNorm,
                 const AdamParams &params, float *sums) {
  std::fill(sums, sums + 2 * segments, 0.0f);
  if (n <= 0 || segments <= 0)
    return;
  if (params.skipNonFinite && !std::isfinite(globalNorm))
    return;
  const float clip =
      ((clipNorm > 0.0f && globalNorm > clipNorm) ? clipNorm / globalNorm
                                                  : 1.0f) *
      params.invLossScale;
  double *partial = scratch(static_cast<size_t>(2 * segments));
  lambPass1(w, g, m, v, n, segments, clip, constantsOf(params), params.beta1,
            params.beta2, partial);
  for (int64_t i = 0; i < 2 * segments; ++i)
    sums[i] = static_cast<float>(partial[i]);
}

void lambApply(float *w, const float *m, const float *v, int64_t n,
               int64_t segments, float lr, float globalNorm,
               const AdamParams &params, const float *sums) {
  if (n <= 0 || segments <= 0)
    return;
  if (params.skipNonFinite && !std::isfinite(globalNorm))
    return;
  double *summed = scratch(static_cast<size_t>(2 * segments));
  for (int64_t i = 0; i < 2 * segments; ++i)
    summed[i] = sums[i];
  lambPass2(w, m, v, n, segments, lr, constantsOf(params), summed);
}

// The family's typed bodies.
void run(Context &, const kernels::ReduceArgs &a) {
  reduce(static_cast<Reduce>(a.kind), a.x.data, a.out.data, a.outer, a.size,
         a.inner);
}

void run(Context &, const kernels::GlobalNormArgs &a) {
  const std::vector<const float *> tensors = kernels::tensorsOf(a);
  globalNorm(tensors.data(), a.counts.data,
             static_cast<int64_t>(tensors.size()), a.out.data);
}

void run(Context &, const kernels::LearningRateArgs &a) {
  a.out.data[0] =
      learningRate(static_cast<int32_t>(a.kind), a.lr, a.warmup_steps,
                   a.start_warmup_step, a.power, a.total_steps, a.step.value);
}

namespace {

// One parameter set for the whole update and LAMB's two halves; `step`
// counts the updates applied before this one.
template <class Args> AdamParams adamParams(const Args &a, bool lamb) {
  AdamParams params;
  params.beta1 = static_cast<float>(a.beta1);
  params.beta2 = static_cast<float>(a.beta2);
  params.epsilon = static_cast<float>(a.epsilon);
  params.weightDecay = static_cast<float>(a.weight_decay);
  params.applyWeightDecay = a.weight_decay != 0.0;
  params.lamb = lamb;
  params.step = a.step.value + 1; // t counts updates from 1
  if (a.loss_scale) {
    params.invLossScale = 1.0f / a.loss_scale.data[0];
    params.skipNonFinite = true;
  }
  return params;
}

} // namespace

void run(Context &, const kernels::OptimizerUpdateArgs &a) {
  adamUpdate(a.w.data, a.g.data, a.m.data, a.v.data, a.count, a.segments,
             a.lr.data[0], a.norm.data[0], static_cast<float>(a.clip_norm),
             adamParams(a, a.lamb != 0));
}

void run(Context &, const kernels::LambMomentsArgs &a) {
  lambMoments(a.w.data, a.g.data, a.m.data, a.v.data, a.count, a.segments,
              a.norm.data[0], static_cast<float>(a.clip_norm),
              adamParams(a, true), a.sums.data);
}

void run(Context &, const kernels::LambApplyArgs &a) {
  lambApply(a.w.data, a.m.data, a.v.data, a.count, a.segments, a.lr.data[0],
            a.norm.data[0], adamParams(a, true), a.sums.data);
}

} // namespace ferry::cpu
