// The CPU backend's row kernels: layer norm and its gradient, softmax and
// its gradient, and dropout (the Philox bits every backend draws); and the
// family's typed bodies (dialects/rt/kernels/Row.td).
#include "runtime/Error.h"
#include "runtime/backend/Collectives.h"
#include "runtime/cpu/CpuKernelContext.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/executable/KernelParams.h"

#include "runtime/cpu/CpuKernelCommon.h"
#include "runtime/random/Philox.h"

namespace ferry::cpu {

namespace {

struct RowStats {
  float mean, rstd;
};

// Mean and 1 / sqrt(biased variance + eps) of one row (two passes over the
// row, which is in cache: no cancellation in the variance).
inline RowStats rowStats(const float *x, int64_t cols, float eps) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < cols; ++c)
    sum += x[c];
  const float mean = sum / static_cast<float>(cols);
  float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
  for (int64_t c = 0; c < cols; ++c) {
    const float d = x[c] - mean;
    squares += d * d;
  }
  const float var = squares / static_cast<float>(cols);
  return {mean, 1.0f / std::sqrt(var + eps)};
}

} // namespace

void layerNorm(const float *x, const float *scale, const float *bias,
               float *out, int64_t rows, int64_t cols, float eps) {
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    float *o = out + r * cols;
    const RowStats s = rowStats(xr, cols, eps);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      o[c] = std::fma((xr[c] - s.mean) * s.rstd, scale[c], bias[c]);
  }
}

void layerNormGrad(const float *x, const float *scale, const float *dy,
                   float *dx, float *dscale, float *dbias, int64_t rows,
                   int64_t cols, float eps) {
  if (cols <= 0)
    return;
  if (rows <= 0) {
    std::fill(dscale, dscale + cols, 0.0f);
    std::fill(dbias, dbias + cols, 0.0f);
    return;
  }
  // Column sums: one double partial per block of kLayerNormRows rows,
  // combined in block order afterwards.
  const int64_t blocks = (rows + kLayerNormRows - 1) / kLayerNormRows;
  double *partials = scratch(static_cast<size_t>(blocks * 2 * cols));
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    double *ps = partials + blk * 2 * cols;
    double *pb = ps + cols;
    std::fill(ps, ps + 2 * cols, 0.0);
    const int64_t rEnd = std::min(rows, (blk + 1) * kLayerNormRows);
    for (int64_t r = blk * kLayerNormRows; r < rEnd; ++r) {
      const float *xr = x + r * cols;
      const float *g = dy + r * cols;
      float *d = dx + r * cols;
      const RowStats s = rowStats(xr, cols, eps);
      // dx = rstd * (dy*scale - mean(dy*scale) - xhat * mean(dy*scale*xhat))
      float sumG = 0.0f, sumGX = 0.0f;
#pragma omp simd reduction(+ : sumG, sumGX)
      for (int64_t c = 0; c < cols; ++c) {
        const float xhat = (xr[c] - s.mean) * s.rstd;
        const float gs = g[c] * scale[c];
        sumG += gs;
        sumGX += gs * xhat;
        ps[c] += static_cast<double>(g[c] * xhat);
        pb[c] += static_cast<double>(g[c]);
      }
      const float meanG = sumG / static_cast<float>(cols);
      const float meanGX = sumGX / static_cast<float>(cols);
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) {
        const float xhat = (xr[c] - s.mean) * s.rstd;
        d[c] = s.rstd * (g[c] * scale[c] - meanG - xhat * meanGX);
      }
    }
  }
  for (int64_t blk = 1; blk < blocks; ++blk) {
    const double *src = partials + blk * 2 * cols;
#pragma omp simd
    for (int64_t c = 0; c < 2 * cols; ++c)
      partials[c] += src[c];
  }
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) {
    dscale[c] = static_cast<float>(partials[c]);
    dbias[c] = static_cast<float>(partials[cols + c]);
  }
}

void softmax(const float *x, const float *mask, float *out, int64_t batch,
             int64_t rows, int64_t cols, const int32_t *sequenceIds) {
  const int64_t total = batch * rows;
#pragma omp parallel for schedule(static) if (worth(total * cols))
  for (int64_t q = 0; q < total; ++q) {
    const float *xr = x + q * cols;
    float *o = out + q * cols;
    float m = -std::numeric_limits<float>::infinity();
    float sum = 0.0f;
    if (sequenceIds != nullptr) { // packed rows: the query's sequence only
      const int64_t b = q / rows;
      const float *mr = mask ? mask + b * cols : nullptr;
      const int32_t *ids = sequenceIds + b * cols;
      const int32_t mine = ids[q % cols];
      for (int64_t c = 0; c < cols; ++c)
        if (ids[c] == mine)
          m = std::max(m, xr[c] + (mr ? mr[c] : 0.0f));
      for (int64_t c = 0; c < cols; ++c) {
        const float e =
            ids[c] == mine ? expApprox(xr[c] + (mr ? mr[c] : 0.0f) - m) : 0.0f;
        o[c] = e;
        sum += e;
      }
    } else if (mask != nullptr) {
      const float *mr = mask + (q / rows) * cols;
#pragma omp simd reduction(max : m)
      for (int64_t c = 0; c < cols; ++c)
        m = std::max(m, xr[c] + mr[c]);
#pragma omp simd simdlen(16) reduction(+ : sum)
      for (int64_t c = 0; c < cols; ++c) {
        const float e = expApprox(xr[c] + mr[c] - m);
        o[c] = e;
        sum += e;
      }
    } else {
      m = rowMax(xr, cols);
#pragma omp simd simdlen(16) reduction(+ : sum)
      for (int64_t c = 0; c < cols; ++c) {
        const float e = expApprox(xr[c] - m);
        o[c] = e;
        sum += e;
      }
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      o[c] *= inv;
  }
}

void softmaxGrad(const float *y, const float *dy, float *dx, int64_t rows,
                 int64_t cols) {
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    const float *yr = y + r * cols;
    const float *g = dy + r * cols;
    float *d = dx + r * cols;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t c = 0; c < cols; ++c)
      dot += g[c] * yr[c];
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c)
      d[c] = yr[c] * (g[c] - dot);
  }
}

void dropout(const float *x, float *out, int64_t n, int64_t perSample,
             uint64_t seed, uint32_t purpose, uint32_t layer,
             uint64_t sampleOffset, float p, const PackedDropoutKeys &keys,
             uint64_t keyOffset) {
  if (n <= 0)
    return;
  if (p == 0.0f) {
    if (out != x) {
#pragma omp parallel for simd schedule(static) if (parallel : worth(n))
      for (int64_t i = 0; i < n; ++i)
        out[i] = x[i];
    }
    return;
  }
  if (perSample <= 0)
    perSample = n;
  if (keys.packed()) { // each element's own key: one draw each
    const float keep = 1.0f - p;
#pragma omp parallel for schedule(static) if (worth(n))
    for (int64_t i = 0; i < n; ++i) {
      uint64_t sample = 0, element = 0;
      keys.map(i / perSample, i % perSample, sample, element);
      out[i] = random::dropoutKeeps(seed, purpose, layer, sample,
                                    keyOffset + element, p)
                   ? x[i] / keep
                   : 0.0f;
    }
    return;
  }
  if (keyOffset % 4 != 0) { // a part of the sample that starts mid-block
    const float keep = 1.0f - p;
#pragma omp parallel for schedule(static) if (worth(n))
    for (int64_t i = 0; i < n; ++i)
      out[i] = random::dropoutKeeps(seed, purpose, layer,
                                    sampleOffset + i / perSample,
                                    keyOffset + i % perSample, p)
                   ? x[i] / keep
                   : 0.0f;
    return;
  }
  // Key as in random::randomBits: (seed low, seed high ^ purpose).
  const uint32_t key0 = static_cast<uint32_t>(seed);
  const uint32_t key1 = static_cast<uint32_t>(seed >> 32) ^ purpose;
  const float keep = 1.0f - p;
  const int64_t samples = (n + perSample - 1) / perSample;
  const int64_t chunksPerSample =
      (perSample + kDropoutChunk - 1) / kDropoutChunk;
  const int64_t items = samples * chunksPerSample;
#pragma omp parallel for schedule(static) if (worth(n))
  for (int64_t item = 0; item < items; ++item) {
    const int64_t sampleIndex = item / chunksPerSample;
    const int64_t base = sampleIndex * perSample;
    const int64_t length = std::min(perSample, n - base);
    const int64_t j0 = (item % chunksPerSample) * kDropoutChunk;
    const int64_t j1 = std::min(length, j0 + kDropoutChunk);
    if (j0 >= j1)
      continue;
    uint32_t words[kDropoutChunk];
    // j0 is a multiple of 4: element j0 + i is word i of block j0 / 4 + i / 4.
    philoxBlocks(key0, key1, (keyOffset + static_cast<uint64_t>(j0)) / 4,
                 static_cast<uint32_t>(sampleOffset + sampleIndex), layer,
                 (j1 - j0 + 3) / 4, words);
    const float *xs = x + base + j0;
    float *os = out + base + j0;
#pragma omp simd simdlen(16)
    for (int64_t i = 0; i < j1 - j0; ++i) {
      // random::uniform: (bits >> 8) * 2^-24, kept when >= p.
      const float u = static_cast<float>(static_cast<int32_t>(words[i] >> 8)) *
                      (1.0f / 16777216.0f);
      os[i] = u >= p ? xs[i] / keep : 0.0f;
    }
  }
}

// The family's typed bodies. The fused forms compute what the kernels they
// replace compute.
void run(Context &, const kernels::LayerNormArgs &a) {
  layerNorm(a.x.data, a.scale.data, a.bias.data, a.out.data, a.rows, a.cols,
            static_cast<float>(a.eps));
}

void run(Context &, const kernels::LayerNormGradArgs &a) {
  layerNormGrad(a.x.data, a.scale.data, a.dy.data, a.dx.data, a.dscale.data,
                a.dbias.data, a.rows, a.cols, static_cast<float>(a.eps));
}

void run(Context &, const kernels::SoftmaxArgs &a) {
  softmax(a.x.data, a.mask.data, a.out.data, a.batch, a.rows, a.cols,
          a.sequence_ids.data);
}

void run(Context &, const kernels::SoftmaxGradArgs &a) {
  softmaxGrad(a.y.data, a.dy.data, a.dx.data, a.rows, a.cols);
}

namespace {

// A dropout kernel's (or a fused kernel's) dropout of x into out, with its
// key and packed rows' keys from its arguments; `keyOffset` (tensor
// parallelism) where this rank's part starts in each sample.
template <class Args>
void dropoutOf(const Args &a, const float *x, float *out,
               uint64_t keyOffset = 0) {
  dropout(x, out, a.count, a.per_sample, static_cast<uint64_t>(a.seed),
          static_cast<uint32_t>(a.purpose), static_cast<uint32_t>(a.layer),
          static_cast<uint64_t>(a.sample_offset.value), static_cast<float>(a.p),
          kernels::dropoutKeysOf(a), keyOffset);
}

template <class Args>
uint64_t keyOffsetOf(const Context &cx, const Args &a, const char *kernel) {
  return cx.collectives->tensorKeyOffset(a.tensor_key_stride,
                                         kernels::dropoutKeysOf(a), kernel);
}

} // namespace

int64_t tensorRank(const Context &cx) { return cx.collectives->tensorRank(); }
int64_t tensorSize(const Context &cx) { return cx.collectives->tensorSize(); }

void run(Context &cx, const kernels::DropoutArgs &a) {
  dropoutOf(a, a.x.data, a.out.data, keyOffsetOf(cx, a, "dropout"));
}

void run(Context &cx, const kernels::SoftmaxDropoutArgs &a) {
  softmax(a.x.data, a.mask.data, a.probs.data, a.batch, a.rows, a.cols,
          a.sequence_ids.data);
  dropoutOf(a, a.probs.data, a.out.data, keyOffsetOf(cx, a, "softmax_dropout"));
}

void run(Context &cx, const kernels::DropoutSoftmaxGradArgs &a) {
  // dropout(dy) into dx, then the softmax's gradient in place.
  dropoutOf(a, a.dy.data, a.dx.data,
            keyOffsetOf(cx, a, "dropout_softmax_grad"));
  softmaxGrad(a.y.data, a.dx.data, a.dx.data, a.rows, a.cols);
}

void run(Context &, const kernels::ResidualLayerNormArgs &a) {
  // dropout into sum, add the residual, normalise.
  dropoutOf(a, a.input.data, a.sum.data);
  binary(Binary::Add, a.sum.data, a.residual.data, a.sum.data, a.count);
  layerNorm(a.sum.data, a.scale.data, a.bias.data, a.out.data, a.rows, a.cols,
            static_cast<float>(a.eps));
}

} // namespace ferry::cpu
