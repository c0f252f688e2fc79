// ferry's CUDA kernels (CudaKernels.h declares them all). One block per row:
// layer norm (and the residual-add fused form), softmax, dropout and the fused
// softmax-dropout, with their gradients.
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/KernelCommon.cuh"
#include "runtime/random/Philox.h"

#include <cmath>
#include <initializer_list>

namespace ferry::cuda {
namespace {

// Mean and 1 / sqrt(biased variance + eps) of one row, by the whole block
// (two passes: the mean, then the squared deviations). `xr(c)` is element c
// of the row.
template <typename Row>
__device__ void rowMeanRstd(Row xr, int64_t cols, float eps, float *shared,
                            float &mean, float &rstd) {
  float s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    s += xr(c);
  mean = blockSum(s, shared) / static_cast<float>(cols);
  float q = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float d = xr(c) - mean;
    q += d * d;
  }
  rstd = rsqrtf(blockSum(q, shared) / static_cast<float>(cols) + eps);
}

// One block per row; x and out fp32 or bf16.
__global__ void layerNormKernel(View x, const float *scale, const float *bias,
                                View out, int64_t cols, float eps) {
  __shared__ float shared[32];
  View xr = x.at(blockIdx.x * cols), orow = out.at(blockIdx.x * cols);
  float mean, rstd;
  rowMeanRstd([&](int64_t c) { return xr[c]; }, cols, eps, shared, mean, rstd);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    orow.set(c, (xr[c] - mean) * rstd * scale[c] + bias[c]);
}

__global__ void layerNormGradRows(View x, const float *scale, View dy, View dx,
                                  int64_t cols, float eps) {
  __shared__ float shared[32];
  View xr = x.at(blockIdx.x * cols), dyr = dy.at(blockIdx.x * cols),
       dxr = dx.at(blockIdx.x * cols);
  float mean, rstd;
  rowMeanRstd([&](int64_t c) { return xr[c]; }, cols, eps, shared, mean, rstd);
  float a = 0, b = 0; // sum(g), sum(g * xhat) with g = dy * scale
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float g = dyr[c] * scale[c];
    a += g;
    b += g * (xr[c] - mean) * rstd;
  }
  float sumG = blockSum(a, shared), sumGX = blockSum(b, shared);
  float invCols = 1.0f / static_cast<float>(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float xhat = (xr[c] - mean) * rstd;
    float g = dyr[c] * scale[c];
    dxr.set(c, rstd * (g - invCols * sumG - xhat * invCols * sumGX));
  }
}

// Column sums over rows, the shape of a bias gradient: a block of
// kColumnTile columns x kRowLanes lanes; lane t sums rows t, t + kRowLanes,
// ... (coalesced along the columns) in double, as the CPU sums, and the
// lanes are added in shared memory. One block per tile of columns.

// dscale = sum dy * xhat, dbias = sum dy of column c over rows [begin,
// end), by the block's kRowLanes lanes; the result is lane 0's
// (threadIdx.y == 0). Block-wide: every thread calls it.
__device__ void layerNormColumnRows(View x, View dy, const float *stats,
                                    int64_t cols, int64_t c, int64_t begin,
                                    int64_t end, double &s, double &b) {
  __shared__ double ds[kRowLanes][kColumnTile], db[kRowLanes][kColumnTile];
  s = 0, b = 0;
  if (c < cols)
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      float xhat = (x[r * cols + c] - stats[2 * r]) * stats[2 * r + 1];
      s += static_cast<double>(dy[r * cols + c]) * xhat;
      b += dy[r * cols + c];
    }
  ds[threadIdx.y][threadIdx.x] = s;
  db[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0)
    for (int lane = 1; lane < kRowLanes; ++lane) {
      s += ds[lane][threadIdx.x];
      b += db[lane][threadIdx.x];
    }
}

// All rows: one block per tile of columns.
__global__ void layerNormGradColumns(View x, View dy, float *dscale,
                                     float *dbias, int64_t rows, int64_t cols,
                                     const float *stats) {
  int64_t c = blockIdx.x * static_cast<int64_t>(kColumnTile) + threadIdx.x;
  double s, b;
  layerNormColumnRows(x, dy, stats, cols, c, 0, rows, s, b);
  if (threadIdx.y == 0 && c < cols) {
    dscale[c] = static_cast<float>(s);
    dbias[c] = static_cast<float>(b);
  }
}

// Rows [z * chunk, (z + 1) * chunk), z = blockIdx.y: the chunk's sums go
// to partials[z * cols + c] (dscale) and partials[(chunks + z) * cols + c]
// (dbias).
__global__ void layerNormGradColumnChunks(View x, View dy, double *partials,
                                          int64_t rows, int64_t cols,
                                          int64_t chunk, const float *stats) {
  int64_t c = blockIdx.x * static_cast<int64_t>(kColumnTile) + threadIdx.x;
  int64_t z = blockIdx.y, chunks = gridDim.y;
  int64_t end = (z + 1) * chunk < rows ? (z + 1) * chunk : rows;
  double s, b;
  layerNormColumnRows(x, dy, stats, cols, c, z * chunk, end, s, b);
  if (threadIdx.y == 0 && c < cols) {
    partials[z * cols + c] = s;
    partials[(chunks + z) * cols + c] = b;
  }
}

// The chunks' sums added in chunk order.
__global__ void finishLayerNormColumns(const double *partials, float *dscale,
                                       float *dbias, int64_t cols,
                                       int64_t chunks) {
  FERRY_FOR(c, cols) {
    double s = 0, b = 0;
    for (int64_t z = 0; z < chunks; ++z) {
      s += partials[z * cols + c];
      b += partials[(chunks + z) * cols + c];
    }
    dscale[c] = static_cast<float>(s);
    dbias[c] = static_cast<float>(b);
  }
}

// Mean and rstd per row, for the column pass.
__global__ void rowStats(View x, float *stats, int64_t cols, float eps) {
  __shared__ float shared[32];
  View xr = x.at(blockIdx.x * cols);
  float mean, rstd;
  rowMeanRstd([&](int64_t c) { return xr[c]; }, cols, eps, shared, mean, rstd);
  if (threadIdx.x == 0) {
    stats[2 * blockIdx.x] = mean;
    stats[2 * blockIdx.x + 1] = rstd;
  }
}

// A softmax row's masked scores: x + mask[b], and -inf for the keys of
// another sequence than the query's (packed rows; the query is row % cols).
struct SoftmaxRow {
  View x;
  const float *mask;  // [cols] of this sample, or null
  const int32_t *ids; // [cols] of this sample, or null
  int32_t mine;
  __device__ SoftmaxRow(View scores, const float *masks,
                        const int32_t *sequenceIds, int64_t row, int64_t rows,
                        int64_t cols)
      : x(scores.at(row * cols)),
        mask(masks ? masks + (row / rows) * cols : nullptr),
        ids(sequenceIds ? sequenceIds + (row / rows) * cols : nullptr),
        mine(ids ? ids[row % cols] : 0) {}
  __device__ float operator()(int64_t c) const {
    if (ids && ids[c] != mine)
      return -INFINITY;
    return x[c] + (mask ? mask[c] : 0.0f);
  }
};

// One block per row of x viewed as [batch, rows, cols].
__global__ void softmaxKernel(View x, const float *mask, View out, int64_t rows,
                              int64_t cols, const int32_t *sequenceIds) {
  __shared__ float shared[32];
  int64_t row = blockIdx.x;
  SoftmaxRow score(x, mask, sequenceIds, row, rows, cols);
  View orow = out.at(row * cols);
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    m = fmaxf(m, score(c));
  m = blockMax(m, shared);
  float s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    s += expf(score(c) - m);
  float inv = 1.0f / blockSum(s, shared);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    orow.set(c, expf(score(c) - m) * inv);
}

__global__ void softmaxGradKernel(View y, View dy, View dx, int64_t cols) {
  __shared__ float shared[32];
  View yr = y.at(blockIdx.x * cols), dyr = dy.at(blockIdx.x * cols),
       dxr = dx.at(blockIdx.x * cols);
  float s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    s += dyr[c] * yr[c];
  float dot = blockSum(s, shared);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    dxr.set(c, yr[c] * (dyr[c] - dot));
}

// The dropout of element i of a tensor with `perSample` elements per sample,
// the CPU's mask bits: kept elements scaled by 1 / (1 - p).
struct DropoutSite {
  int64_t perSample;
  uint64_t seed;
  uint32_t purpose, layer;
  StepValue sampleOffset;
  float p;
  PackedDropoutKeys keys; // packed rows: each element's own key
  // Tensor parallelism: where this rank's part starts in each sample.
  uint64_t keyOffset;
  // perSample <= 0: the whole tensor of `count` elements is one sample.
  static DropoutSite of(int64_t count, int64_t perSample, uint64_t seed,
                        uint32_t purpose, uint32_t layer,
                        StepValue sampleOffset, float p,
                        const PackedDropoutKeys &keys = {},
                        uint64_t keyOffset = 0) {
    return DropoutSite{perSample > 0 ? perSample : count,
                       seed,
                       purpose,
                       layer,
                       sampleOffset,
                       p,
                       keys,
                       keyOffset};
  }
  // Whether four elements from a multiple of 4 share one Philox block: the
  // sample's elements and this part's first key a multiple of 4.
  bool quadKeys() const { return perSample % 4 == 0 && keyOffset % 4 == 0; }
  __device__ float operator()(float x, int64_t i) const {
    if (p == 0.0f)
      return x;
    uint64_t sample = 0, element = 0;
    if (keys.packed()) {
      keys.map(i / perSample, i % perSample, sample, element);
    } else {
      sample = static_cast<uint64_t>(sampleOffset.value()) +
               static_cast<uint64_t>(i / perSample);
      element = static_cast<uint64_t>(i % perSample);
    }
    return random::dropoutKeeps(seed, purpose, layer, sample,
                                keyOffset + element, p)
               ? x / (1.0f - p)
               : 0.0f;
  }
  // Elements i..i+3, i a multiple of 4 and perSample too: words 0-3 of one
  // Philox block (random::randomBits' counter), so one call serves four.
  // Packed rows' four elements may have unrelated keys: one draw each.
  __device__ float4 quad(float4 x, int64_t i) const {
    if (keys.packed())
      return make_float4((*this)(x.x, i), (*this)(x.y, i + 1),
                         (*this)(x.z, i + 2), (*this)(x.w, i + 3));
    uint64_t sample = static_cast<uint64_t>(sampleOffset.value()) +
                      static_cast<uint64_t>(i / perSample);
    uint64_t element = keyOffset + static_cast<uint64_t>(i % perSample);
    uint32_t key[2];
    random::streamKey(seed, purpose, key);
    uint32_t counter[4] = {static_cast<uint32_t>(element / 4),
                           static_cast<uint32_t>(element >> 34),
                           static_cast<uint32_t>(sample), layer};
    random::Block bits = random::philox(counter, key);
    auto keep = [&](float v, uint32_t word) {
      // random::uniform: (bits >> 8) * 2^-24, kept when >= p.
      float u = static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
      return u >= p ? v / (1.0f - p) : 0.0f;
    };
    return make_float4(keep(x.x, bits.w[0]), keep(x.y, bits.w[1]),
                       keep(x.z, bits.w[2]), keep(x.w, bits.w[3]));
  }
};

// With `vectors` (16-byte aligned, perSample a multiple of 4): four
// elements a thread, one Philox block for the four, 128-bit loads and
// stores; the tail element by element.
__global__ void dropoutKernel(View x, View out, int64_t n, DropoutSite drop,
                              bool vectors) {
  drop.sampleOffset = drop.sampleOffset.value(); // this run's, read once
  if (vectors) {
    int64_t quads = n / 4;
    FERRY_FOR(q, quads) {
      store4(out.p, out.bf16, q, drop.quad(load4(x.p, x.bf16, q), 4 * q));
    }
    FERRY_FOR(t, n - 4 * quads) {
      int64_t i = 4 * quads + t;
      out.set(i, drop(x[i], i));
    }
    return;
  }
  FERRY_FOR(i, n) out.set(i, drop(x[i], i));
}

// softmaxKernel, then the dropout of each probability: one block per row,
// both written in the last pass.
// `quads` (cols and the sample a multiple of 4): the last pass takes four
// columns a thread, one Philox block for the four decisions.
__global__ void softmaxDropoutKernel(View x, const float *mask, View probs,
                                     View out, int64_t rows, int64_t cols,
                                     DropoutSite drop, bool quads,
                                     const int32_t *sequenceIds) {
  drop.sampleOffset = drop.sampleOffset.value(); // this run's, read once
  __shared__ float shared[32];
  int64_t row = blockIdx.x;
  SoftmaxRow score(x, mask, sequenceIds, row, rows, cols);
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    m = fmaxf(m, score(c));
  m = blockMax(m, shared);
  float s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    s += expf(score(c) - m);
  float inv = 1.0f / blockSum(s, shared);
  if (quads) {
    for (int64_t c = 4 * threadIdx.x; c < cols; c += 4 * blockDim.x) {
      int64_t i = row * cols + c;
      float4 y = make_float4(
          expf(score(c) - m) * inv, expf(score(c + 1) - m) * inv,
          expf(score(c + 2) - m) * inv, expf(score(c + 3) - m) * inv);
      float4 d = drop.p == 0.0f ? y : drop.quad(y, i);
      probs.set(i, y.x), probs.set(i + 1, y.y), probs.set(i + 2, y.z),
          probs.set(i + 3, y.w);
      out.set(i, d.x), out.set(i + 1, d.y), out.set(i + 2, d.z),
          out.set(i + 3, d.w);
    }
    return;
  }
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    int64_t i = row * cols + c;
    float y = expf(score(c) - m) * inv;
    probs.set(i, y);
    out.set(i, drop(y, i));
  }
}

// softmaxGradKernel of the dropped gradient. An fp32 dx holds the dropped
// values between the passes (each thread reads back only what it wrote); a
// bf16 dx would round them, so then the second pass draws them again (the
// same Philox words: a function of the element alone).
// `quads`: the first pass takes four columns a thread (one Philox block).
__global__ void dropoutSoftmaxGradKernel(View y, View dy, View dx, int64_t cols,
                                         DropoutSite drop, bool quads) {
  drop.sampleOffset = drop.sampleOffset.value(); // this run's, read once
  __shared__ float shared[32];
  int64_t base = blockIdx.x * cols;
  bool keep = !dx.bf16; // the dropped values kept in dx between the passes
  float s = 0;
  if (quads) {
    for (int64_t c = 4 * threadIdx.x; c < cols; c += 4 * blockDim.x) {
      int64_t i = base + c;
      float4 g = make_float4(dy[i], dy[i + 1], dy[i + 2], dy[i + 3]);
      float4 d = drop.p == 0.0f ? g : drop.quad(g, i);
      if (keep)
        dx.set(i, d.x), dx.set(i + 1, d.y), dx.set(i + 2, d.z),
            dx.set(i + 3, d.w);
      s += (d.x * y[i] + d.y * y[i + 1]) + (d.z * y[i + 2] + d.w * y[i + 3]);
    }
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float d = drop(dy[base + c], base + c);
      if (keep)
        dx.set(base + c, d);
      s += d * y[base + c];
    }
  }
  float dot = blockSum(s, shared);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    int64_t i = base + c;
    float d = keep ? dx[i] : drop(dy[i], i);
    dx.set(i, y[i] * (d - dot));
  }
}

// The end of a sublayer, one block per row: sum = dropout(input) + residual,
// and the row's layer norm of it. The norm takes each sum in fp32 as
// computed, not as stored (a bf16 sum is rounded), so each pass computes
// it again: a function of the element alone, the same bits every time.
__global__ void residualLayerNormKernel(View input, View residual,
                                        const float *scale, const float *bias,
                                        View sum, View out, int64_t cols,
                                        float eps, DropoutSite drop) {
  drop.sampleOffset = drop.sampleOffset.value(); // this run's, read once
  __shared__ float shared[32];
  int64_t base = blockIdx.x * cols;
  auto sumAt = [&](int64_t c) {
    return drop(input[base + c], base + c) + residual[base + c];
  };
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    sum.set(base + c, sumAt(c));
  float mean, rstd;
  rowMeanRstd(sumAt, cols, eps, shared, mean, rstd);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    out.set(base + c, (sumAt(c) - mean) * rstd * scale[c] + bias[c]);
}

// Vectorised rows (cols a multiple of 4, every operand aligned to four of
// its elements): each thread takes four consecutive columns at a time, one
// 128-bit access per fp32 operand (64 bits per bf16 one) and one Philox
// block for the four dropout decisions, and keeps the row's values in
// registers for the norm, so each input is read once. Rows of up to
// kRowQuads * 4 * kThreads columns (4,096: BERT-large's 1,024 is one quad a
// thread); longer rows take the kernels above.
constexpr int kRowQuads = 4;

// Mean and rstd of a row whose values this thread holds in v[k] for quads
// k * blockDim.x + threadIdx.x < quads; then out = the norm, stored.
__device__ void normaliseQuads(const float4 *v, int64_t quads, int64_t q0,
                               const float *scale, const float *bias, View out,
                               int64_t cols, float eps, float *shared) {
  float s = 0;
  for (int k = 0; k < kRowQuads; ++k) {
    int64_t c4 = k * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (c4 < quads)
      s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
  float mean = blockSum(s, shared) / static_cast<float>(cols);
  float q = 0;
  for (int k = 0; k < kRowQuads; ++k) {
    int64_t c4 = k * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (c4 < quads) {
      float a = v[k].x - mean, b = v[k].y - mean, c = v[k].z - mean,
            d = v[k].w - mean;
      q += (a * a + b * b) + (c * c + d * d);
    }
  }
  float rstd = rsqrtf(blockSum(q, shared) / static_cast<float>(cols) + eps);
  for (int k = 0; k < kRowQuads; ++k) {
    int64_t c4 = k * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (c4 >= quads)
      continue;
    int64_t c = 4 * c4;
    float4 r;
    r.x = (v[k].x - mean) * rstd * scale[c] + bias[c];
    r.y = (v[k].y - mean) * rstd * scale[c + 1] + bias[c + 1];
    r.z = (v[k].z - mean) * rstd * scale[c + 2] + bias[c + 2];
    r.w = (v[k].w - mean) * rstd * scale[c + 3] + bias[c + 3];
    store4(out.p, out.bf16, q0 + c4, r);
  }
}

__global__ void layerNormQuads(View x, const float *scale, const float *bias,
                               View out, int64_t cols, float eps) {
  __shared__ float shared[32];
  int64_t quads = cols / 4, q0 = blockIdx.x * quads;
  float4 v[kRowQuads];
  for (int k = 0; k < kRowQuads; ++k) {
    int64_t c4 = k * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (c4 < quads)
      v[k] = load4(x.p, x.bf16, q0 + c4);
  }
  normaliseQuads(v, quads, q0, scale, bias, out, cols, eps, shared);
}

__global__ void residualLayerNormQuads(View input, View residual,
                                       const float *scale, const float *bias,
                                       View sum, View out, int64_t cols,
                                       float eps, DropoutSite drop) {
  drop.sampleOffset = drop.sampleOffset.value(); // this run's, read once
  __shared__ float shared[32];
  int64_t quads = cols / 4, q0 = blockIdx.x * quads;
  float4 v[kRowQuads];
  for (int k = 0; k < kRowQuads; ++k) {
    int64_t c4 = k * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (c4 >= quads)
      continue;
    float4 x = load4(input.p, input.bf16, q0 + c4);
    float4 r = load4(residual.p, residual.bf16, q0 + c4);
    float4 d = drop.p == 0.0f ? x : drop.quad(x, 4 * (q0 + c4));
    v[k] = make_float4(d.x + r.x, d.y + r.y, d.z + r.z, d.w + r.w);
    store4(sum.p, sum.bf16, q0 + c4, v[k]);
  }
  normaliseQuads(v, quads, q0, scale, bias, out, cols, eps, shared);
}

// Whether a row kernel may take the vectorised form.
bool quadRows(int64_t cols, std::initializer_list<View> views) {
  if (cols % 4 != 0 || cols > kRowQuads * 4 * kThreads)
    return false;
  for (const View &v : views)
    if (!alignedQuad(v.p, v.bf16))
      return false;
  return true;
}

} // namespace

void layerNorm(cudaStream_t s, const float *x, const float *scale,
               const float *bias, float *out, int64_t rows, int64_t cols,
               float eps, uint64_t bf16) {
  if (rows <= 0 || cols <= 0)
    return;
  View vx = viewOf(x, bf16, 0), vo = viewOf(out, bf16, 3);
  if (quadRows(cols, {vx, vo}))
    launchRows(s, "layer_norm (quads)", rows, layerNormQuads, vx, scale, bias,
               vo, cols, eps);
  else
    launchRows(s, "layer_norm", rows, layerNormKernel, vx, scale, bias, vo,
               cols, eps);
}

void layerNormGrad(cudaStream_t s, const float *x, const float *scale,
                   const float *dy, float *dx, float *dscale, float *dbias,
                   int64_t rows, int64_t cols, float eps, float *stats,
                   double *scratch, uint64_t bf16) {
  View vx = viewOf(x, bf16, 0), vdy = viewOf(dy, bf16, 2);
  if (cols <= 0) // nothing to write (a grid of 0 column tiles is invalid)
    return;
  if (rows <= 0) { // no rows: zero parameter gradients, as the CPU
    fill(s, dscale, cols, 0.0f);
    fill(s, dbias, cols, 0.0f);
    return;
  }
  launchRows(s, "layer_norm_grad", rows, layerNormGradRows, vx, scale, vdy,
             viewOf(dx, bf16, 3), cols, eps);
  // The rows' statistics for the column pass, in the planned workspace.
  launchRows(s, "layer_norm_grad (row statistics)", rows, rowStats, vx, stats,
             cols, eps);
  int64_t tiles = (cols + kColumnTile - 1) / kColumnTile;
  int64_t chunks =
      scratch ? rowSplits(tiles, rows, 2 * cols, kScratchDoubles) : 1;
  if (chunks > 1) { // the rows split across more blocks, added in order
    int64_t chunk = (rows + chunks - 1) / chunks;
    chunks = (rows + chunk - 1) / chunk;
    launch("layer_norm_grad (column chunks)", layerNormGradColumnChunks,
           dim3(gridDimension(tiles, kMaxGridX, "layer_norm_grad"),
                static_cast<unsigned>(chunks)),
           dim3(kColumnTile, kRowLanes), 0, s, vx, vdy, scratch, rows, cols,
           chunk, static_cast<const float *>(stats));
    launchOver(s, "layer_norm_grad (chunks added)", cols,
               finishLayerNormColumns, static_cast<const double *>(scratch),
               dscale, dbias, cols, chunks);
  } else {
    launch("layer_norm_grad (columns)", layerNormGradColumns,
           dim3(gridDimension(tiles, kMaxGridX, "layer_norm_grad")),
           dim3(kColumnTile, kRowLanes), 0, s, vx, vdy, dscale, dbias, rows,
           cols, static_cast<const float *>(stats));
  }
}

void softmax(cudaStream_t s, const float *x, const float *mask, float *out,
             int64_t batch, int64_t rows, int64_t cols, uint64_t bf16,
             const int32_t *sequenceIds) {
  if (batch * rows <= 0 || cols <= 0)
    return;
  launchRows(s, "softmax", batch * rows, softmaxKernel, viewOf(x, bf16, 0),
             mask, viewOf(out, bf16, 2), rows, cols, sequenceIds);
}

void softmaxGrad(cudaStream_t s, const float *y, const float *dy, float *dx,
                 int64_t rows, int64_t cols, uint64_t bf16) {
  if (rows <= 0 || cols <= 0)
    return;
  launchRows(s, "softmax_grad", rows, softmaxGradKernel, viewOf(y, bf16, 0),
             viewOf(dy, bf16, 1), viewOf(dx, bf16, 2), cols);
}

void dropout(cudaStream_t s, const float *x, float *out, int64_t n,
             int64_t perSample, uint64_t seed, uint32_t purpose, uint32_t layer,
             StepValue sampleOffset, float p, uint64_t bf16,
             const PackedDropoutKeys &keys, uint64_t keyOffset) {
  if (n <= 0)
    return;
  View vx = viewOf(x, bf16, 0), vo = viewOf(out, bf16, 1);
  if (p == 0.0f && vx.bf16 == vo.bf16) { // the same bytes
    if (out != x)
      checkCall(memcpyAsync(out, x, static_cast<size_t>(n) * (vx.bf16 ? 2 : 4),
                            cudaMemcpyDeviceToDevice, s),
                "dropout (copy)");
    return;
  }
  DropoutSite site = DropoutSite::of(n, perSample, seed, purpose, layer,
                                     sampleOffset, p, keys, keyOffset);
  bool vectors =
      site.quadKeys() && alignedQuad(x, vx.bf16) && alignedQuad(out, vo.bf16);
  launch("dropout", dropoutKernel, dim3(blocksFor(vectors ? (n + 3) / 4 : n)),
         dim3(kThreads), 0, s, vx, vo, n, site, vectors);
}

void softmaxDropout(cudaStream_t s, const float *x, const float *mask,
                    float *probs, float *out, int64_t batch, int64_t rows,
                    int64_t cols, int64_t perSample, uint64_t seed,
                    uint32_t purpose, uint32_t layer, StepValue sampleOffset,
                    float p, uint64_t bf16, const int32_t *sequenceIds,
                    const PackedDropoutKeys &keys, uint64_t keyOffset) {
  if (batch * rows <= 0 || cols <= 0)
    return;
  DropoutSite drop =
      DropoutSite::of(batch * rows * cols, perSample, seed, purpose, layer,
                      sampleOffset, p, keys, keyOffset);
  launchRows(s, "softmax_dropout", batch * rows, softmaxDropoutKernel,
             viewOf(x, bf16, 0), mask, viewOf(probs, bf16, 2),
             viewOf(out, bf16, 3), rows, cols, drop,
             cols % 4 == 0 && drop.quadKeys(), sequenceIds);
}

void residualLayerNorm(cudaStream_t s, const float *input,
                       const float *residual, const float *scale,
                       const float *bias, float *sum, float *out, int64_t rows,
                       int64_t cols, float eps, int64_t perSample,
                       uint64_t seed, uint32_t purpose, uint32_t layer,
                       StepValue sampleOffset, float p, uint64_t bf16,
                       const PackedDropoutKeys &keys) {
  if (rows <= 0 || cols <= 0)
    return;
  DropoutSite drop = DropoutSite::of(rows * cols, perSample, seed, purpose,
                                     layer, sampleOffset, p, keys);
  View vi = viewOf(input, bf16, 0), vr = viewOf(residual, bf16, 1),
       vs = viewOf(sum, bf16, 4), vo = viewOf(out, bf16, 5);
  // The quads' dropout takes one Philox block for four elements of one
  // sample: a sample's elements a multiple of 4.
  if (quadRows(cols, {vi, vr, vs, vo}) && drop.quadKeys())
    launchRows(s, "residual_layer_norm (quads)", rows, residualLayerNormQuads,
               vi, vr, scale, bias, vs, vo, cols, eps, drop);
  else
    launchRows(s, "residual_layer_norm", rows, residualLayerNormKernel, vi, vr,
               scale, bias, vs, vo, cols, eps, drop);
}

void dropoutSoftmaxGrad(cudaStream_t s, const float *y, const float *dy,
                        float *dx, int64_t rows, int64_t cols,
                        int64_t perSample, uint64_t seed, uint32_t purpose,
                        uint32_t layer, StepValue sampleOffset, float p,
                        uint64_t bf16, const PackedDropoutKeys &keys,
                        uint64_t keyOffset) {
  if (rows <= 0 || cols <= 0)
    return;
  DropoutSite drop = DropoutSite::of(rows * cols, perSample, seed, purpose,
                                     layer, sampleOffset, p, keys, keyOffset);
  launchRows(s, "dropout_softmax_grad", rows, dropoutSoftmaxGradKernel,
             viewOf(y, bf16, 0), viewOf(dy, bf16, 1), viewOf(dx, bf16, 2), cols,
             drop, cols % 4 == 0 && drop.quadKeys());
}

} // namespace ferry::cuda
