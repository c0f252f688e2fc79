// ferry's CUDA kernels (CudaKernels.h declares them all). Fused attention,
// FlashAttention-style: out = dropout(softmax(scale q kᵀ + mask)) v without
// the [seq, seq] probabilities in global memory.
//
// - Forward: a block takes 32 query rows of one (sample, head), two warps of
//   16 rows, and walks the keys 32 at a time: scores into shared memory, a
//   running maximum and sum per row, the tile's probabilities (dropped out
//   with ferry's Philox stream, the same elements graph.dropout drops) times
//   the values added to an fp32 output tile rescaled by the new maximum. It
//   writes out / sum and each row's logsumexp.
// - Backward: D_i = dout_i . out_i first; then one kernel per 32-key tile
//   (dk, dv: summed over the query tiles in order) and one per 32-query tile
//   (dq: summed over the key tiles in order). Each recomputes the
//   probabilities from the saved logsumexp. Two kernels instead of
//   FlashAttention-2's atomic dq: the sums stay deterministic.
//
// The tile products are warp-wide 16-row products in shared memory
// (warpProduct): with bf16 inputs (training.precision: bf16) on tensor cores
// through WMMA, whose fragment layout is unspecified (only whole-fragment
// loads, stores and products are used: the simulator scatters fragment
// elements to catch code that assumes a layout); with fp32 inputs by the
// CUDA cores, lanes over output elements, so the fp32 path is exact to
// fp32 rounding against the unfused kernels.
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/KernelCommon.cuh"
#include "runtime/random/Philox.h"

#include <cuda_bf16.h>
#include <mma.h>

#include <type_traits>

namespace ferry::cuda {
namespace {

constexpr int kStep = 16;     // WMMA's m = n = k, and the backward's step
constexpr int kMaxDim = 64;   // head_dim, padded to a multiple of 16
constexpr int kWarpRows = 16; // rows a warp owns
constexpr int kWarps = 2;
constexpr int kThreadsPerBlock = 32 * kWarps;
constexpr int kBlockRows = kWarps * kWarpRows; // queries or keys per block
constexpr int kKeyTile = 32;                   // the forward's keys per step

template <typename T> __device__ T fromFloat(float x);
template <> __device__ float fromFloat<float>(float x) { return x; }
template <> __device__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// C[16][N] (+)= A[16][K] B, every array in shared memory, row-major with the
// given leading dimensions (elements). B is [K][N], or with TransB stored
// transposed as [N][K]. N and K are multiples of 16. Warp-collective.
template <typename T, bool TransB>
__device__ void warpProduct(const T *A, int lda, const T *B, int ldb, float *C,
                            int ldc, int N, int K, bool accumulate) {
  __syncwarp(); // the lanes' writes of A, B and C are visible
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    using namespace nvcuda;
    using Layout = std::conditional_t<TransB, wmma::col_major, wmma::row_major>;
    for (int n0 = 0; n0 < N; n0 += 16) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      if (accumulate)
        wmma::load_matrix_sync(acc, C + n0, ldc, wmma::mem_row_major);
      else
        wmma::fill_fragment(acc, 0.0f);
      for (int k0 = 0; k0 < K; k0 += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16,
                       wmma::row_major>
            a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, Layout> b;
        wmma::load_matrix_sync(a, A + k0, lda);
        wmma::load_matrix_sync(
            b, TransB ? B + n0 * ldb + k0 : B + k0 * ldb + n0, ldb);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(C + n0, acc, ldc, wmma::mem_row_major);
    }
  } else {
    for (int e = threadIdx.x % 32; e < 16 * N; e += 32) {
      int r = e / N, c = e % N;
      float s = 0.0f;
      for (int kk = 0; kk < K; ++kk)
        s += A[r * lda + kk] * (TransB ? B[c * ldb + kk] : B[kk * ldb + c]);
      C[r * ldc + c] = accumulate ? C[r * ldc + c] + s : s;
    }
  }
  __syncwarp(); // C is visible to every lane
}

// rows x dp of one head's [seq, dim] rows from row `first` (`head` points
// at its row 0; rows a.rowStride() apart), rounded to T, rows past seq and
// columns past dim zero. Block-wide.
template <typename T>
__device__ void loadTile(T *tile, View head, int64_t first, int rows,
                         const AttentionShape &a, int dp) {
  int64_t stride = a.rowStride();
  for (int e = threadIdx.x; e < rows * dp; e += blockDim.x) {
    int r = e / dp, c = e % dp;
    int64_t row = first + r;
    tile[r * kMaxDim + c] = fromFloat<T>(
        row < a.seq && c < a.headDim ? head[row * stride + c] : 0.0f);
  }
}

// graph.dropout's decision for probability (query i, key j) of sample b,
// head h: the factor the probability is multiplied by (0 or 1 / (1 - p)).
__device__ float kept(const AttentionShape &a, int64_t b, int64_t h, int64_t i,
                      int64_t j) {
  if (a.p == 0.0f)
    return 1.0f;
  uint64_t sample = static_cast<uint64_t>(a.sampleOffset.value() + b);
  uint64_t element = static_cast<uint64_t>((h * a.seq + i) * a.seq + j);
  if (a.dropoutKeys.packed()) // packed rows: the unpacked sample's key
    a.dropoutKeys.map(b, static_cast<int64_t>(element), sample, element);
  // Tensor parallelism: this rank's heads start at keyOffset of the sample.
  return random::dropoutKeeps(a.seed, a.purpose, a.layer, sample,
                              a.keyOffset + element, a.p)
             ? 1.0f / (1.0f - a.p)
             : 0.0f;
}

// kept() for keys j0 .. j0 + 3 of query i (j0 a multiple of 4), keys past
// the sequence or queries past it 0. With seq (and a tensor-parallel
// rank's key offset) a multiple of 4 the four are
// the words of one Philox block (random::randomBits' counter is element /
// 4, its word element % 4), so one block serves four; otherwise (and for
// packed rows' keys) one each.
__device__ void keptQuad(const AttentionShape &a, int64_t b, int64_t h,
                         int64_t i, int64_t j0, float out[4]) {
  if (i >= a.seq) {
    out[0] = out[1] = out[2] = out[3] = 0.0f;
    return;
  }
  uint64_t e =
      a.keyOffset + static_cast<uint64_t>((h * a.seq + i) * a.seq + j0);
  if (a.p == 0.0f || a.seq % 4 != 0 || a.keyOffset % 4 != 0 ||
      j0 + 3 >= a.seq || a.dropoutKeys.packed()) {
    for (int w = 0; w < 4; ++w)
      out[w] = j0 + w < a.seq ? kept(a, b, h, i, j0 + w) : 0.0f;
    return;
  }
  uint32_t key[2];
  random::streamKey(a.seed, a.purpose, key);
  uint32_t counter[4] = {
      static_cast<uint32_t>(e / 4), static_cast<uint32_t>(e >> 34),
      static_cast<uint32_t>(a.sampleOffset.value() + b), a.layer};
  random::Block bits = random::philox(counter, key);
  for (int w = 0; w < 4; ++w) {
    // random::uniform: (bits >> 8) * 2^-24, kept when >= p.
    float u = static_cast<float>(bits.w[w] >> 8) * (1.0f / 16777216.0f);
    out[w] = u >= a.p ? 1.0f / (1.0f - a.p) : 0.0f;
  }
}

// Shared memory of the forward: grid (batch * heads, query tiles of 32).
template <typename T> struct ForwardShared {
  T q[kBlockRows * kMaxDim];
  T k[kKeyTile * kMaxDim];
  T v[kKeyTile * kMaxDim];
  float scores[kWarps][kWarpRows * kKeyTile];
  T probs[kWarps][kWarpRows * kKeyTile];
  float out[kWarps][kWarpRows * kMaxDim];
  float mask[kKeyTile];
};

template <typename T>
__global__ void attentionForward(View q, View k, View v, const float *mask,
                                 View out, float *lse, AttentionShape a,
                                 int dp) {
  a.sampleOffset = a.sampleOffset.value(); // this run's, read once
  __shared__ __align__(32) ForwardShared<T> sh;
  const int64_t bh = blockIdx.x, b = bh / a.heads, h = bh % a.heads;
  const int64_t S = a.seq, D = a.headDim, q0 = blockIdx.y * kBlockRows;
  const int64_t slice = a.headBase(b, h), stride = a.rowStride();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = lane / 2, half = lane % 2; // a lane pair per row
  const int64_t qi = q0 + warp * kWarpRows + r;
  float *o = sh.out[warp] + r * kMaxDim;
  loadTile(sh.q, q.at(slice), q0, kBlockRows, a, dp);
  for (int c = half; c < dp; c += 2)
    o[c] = 0.0f;
  float high = -INFINITY, sum = 0.0f;
  for (int64_t k0 = 0; k0 < S; k0 += kKeyTile) {
    // Packed rows: a tile of keys no query of the block shares a sequence
    // with adds nothing (its probabilities are all 0), so it is skipped,
    // by every thread alike.
    if (!a.rangesMeet(b, q0, kBlockRows, k0, kKeyTile))
      continue;
    __syncthreads(); // the last step's reads of k and v are done
    loadTile(sh.k, k.at(slice), k0, kKeyTile, a, dp);
    loadTile(sh.v, v.at(slice), k0, kKeyTile, a, dp);
    for (int j = threadIdx.x; j < kKeyTile; j += blockDim.x)
      sh.mask[j] = k0 + j < S ? mask[b * S + k0 + j] : -INFINITY;
    __syncthreads();
    warpProduct<T, true>(sh.q + warp * kWarpRows * kMaxDim, kMaxDim, sh.k,
                         kMaxDim, sh.scores[warp], kKeyTile, kKeyTile, dp,
                         false);
    float s[kKeyTile / 2], tileHigh = -INFINITY;
    for (int jj = 0; jj < kKeyTile / 2; ++jj) {
      int j = half * (kKeyTile / 2) + jj;
      s[jj] = sh.scores[warp][r * kKeyTile + j] * a.scale + sh.mask[j];
      // Packed rows: another sequence's key is out, as a padded one.
      if (a.sequenceIds && qi < S && k0 + j < S &&
          !a.sameSequence(b, qi, k0 + j))
        s[jj] = -INFINITY;
      tileHigh = fmaxf(tileHigh, s[jj]);
    }
    tileHigh = fmaxf(tileHigh, __shfl_xor_sync(0xffffffffu, tileHigh, 1));
    float newHigh = fmaxf(high, tileHigh);
    // While every key so far is masked with -inf the maximum is -inf too:
    // subtract 0 then (exp(-inf) = 0, not exp(NaN)), as the whole-row
    // maximum of the CPU kernel would once an unmasked key comes.
    float base = newHigh == -INFINITY ? 0.0f : newHigh;
    float rescale = expf(high - base); // 0 on the first step
    float tileSum = 0.0f;
    float drop[4];
    for (int jj = 0; jj < kKeyTile / 2; ++jj) {
      int j = half * (kKeyTile / 2) + jj;
      if (jj % 4 == 0)
        keptQuad(a, b, h, qi, k0 + j, drop);
      float e = expf(s[jj] - base);
      tileSum += e;
      sh.probs[warp][r * kKeyTile + j] = fromFloat<T>(e * drop[jj % 4]);
    }
    tileSum += __shfl_xor_sync(0xffffffffu, tileSum, 1);
    sum = sum * rescale + tileSum;
    high = newHigh;
    for (int c = half; c < dp; c += 2)
      o[c] *= rescale;
    warpProduct<T, false>(sh.probs[warp], kKeyTile, sh.v, kMaxDim, sh.out[warp],
                          kMaxDim, dp, kKeyTile, true);
  }
  if (qi < S) {
    for (int c = half; c < D; c += 2)
      out.set(slice + qi * stride + c, o[c] / sum);
    if (half == 0)
      lse[bh * S + qi] = high + logf(sum);
  }
}

// rowDots[bh * seq + i] = dout_i . out_i of head bh (the softmax's row sum
// of the backward).
__global__ void attentionRowDots(View out, View dout, float *rowDots,
                                 AttentionShape a) {
  FERRY_FOR(row, a.batch * a.heads * a.seq) {
    int64_t bh = row / a.seq, i = row % a.seq;
    int64_t at = a.headBase(bh / a.heads, bh % a.heads) + i * a.rowStride();
    float s = 0.0f;
    for (int64_t c = 0; c < a.headDim; ++c)
      s += dout[at + c] * out[at + c];
    rowDots[row] = s;
  }
}

// kept(a, b, h, qi, kj) for the dk/dv kernel, whose lane pairs hold
// consecutive keys (row r of the warp's 16, `half` the lane in the pair):
// with seq a multiple of 4, the first lane pair of each four keys draws the
// Philox block of the four (keptQuad) and shares its words by warp
// shuffles, a quarter of the draws. Warp-collective: every lane calls it.
__device__ float keptAcrossLanes(const AttentionShape &a, int64_t b, int64_t h,
                                 int64_t qi, int64_t kj, int r, int half) {
  if (a.p == 0.0f)
    return 1.0f;
  if (a.seq % 4 != 0)
    return qi < a.seq && kj < a.seq ? kept(a, b, h, qi, kj) : 0.0f;
  float w[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (r % 4 == 0) // keys kj .. kj + 3 (kj a multiple of 4: tiles are 16)
    keptQuad(a, b, h, qi, kj, w);
  int leader = (r - r % 4) * 2 + half;
  float d[4];
  for (int i = 0; i < 4; ++i)
    d[i] = __shfl_sync(0xffffffffu, w[i], leader);
  return d[r % 4];
}

// Shared memory of the dk, dv kernel: grid (batch * heads, key tiles of 32).
// probs(w) and dscores(w) are warp w's rounded tiles.
template <typename T> struct KeyGradShared {
  T q[kStep * kMaxDim], dout[kStep * kMaxDim];
  T k[kBlockRows * kMaxDim], v[kBlockRows * kMaxDim];
  float scores[kWarps][kStep * kStep], dprobs[kWarps][kStep * kStep];
  T probsTile[kWarps][kStep * kStep], dscoresTile[kWarps][kStep * kStep];
  float dk[kBlockRows * kMaxDim], dv[kBlockRows * kMaxDim];
  float lse[kStep], rowDots[kStep], mask[kBlockRows];
  __device__ T *probs(int w) { return probsTile[w]; }
  __device__ T *dscores(int w) { return dscoresTile[w]; }
};
// fp32: the rounded tiles are the float tiles themselves, each element
// rewritten by the lane that read it (44 KiB of the 48 KiB a block may
// declare statically).
template <> struct KeyGradShared<float> {
  float q[kStep * kMaxDim], dout[kStep * kMaxDim];
  float k[kBlockRows * kMaxDim], v[kBlockRows * kMaxDim];
  float scores[kWarps][kStep * kStep], dprobs[kWarps][kStep * kStep];
  float dk[kBlockRows * kMaxDim], dv[kBlockRows * kMaxDim];
  float lse[kStep], rowDots[kStep], mask[kBlockRows];
  __device__ float *probs(int w) { return scores[w]; }
  __device__ float *dscores(int w) { return dprobs[w]; }
};

template <typename T>
__global__ void attentionKeyGrad(View q, View k, View v, const float *mask,
                                 const float *lse, View dout,
                                 const float *rowDots, View dk, View dv,
                                 AttentionShape a, int dp) {
  a.sampleOffset = a.sampleOffset.value(); // this run's, read once
  __shared__ __align__(32) KeyGradShared<T> sh;
  const int64_t bh = blockIdx.x, b = bh / a.heads, h = bh % a.heads;
  const int64_t S = a.seq, D = a.headDim, k0 = blockIdx.y * kBlockRows;
  const int64_t slice = a.headBase(b, h), stride = a.rowStride();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = lane / 2, half = lane % 2;
  const int64_t kj = k0 + warp * kWarpRows + r; // this lane pair's key
  loadTile(sh.k, k.at(slice), k0, kBlockRows, a, dp);
  loadTile(sh.v, v.at(slice), k0, kBlockRows, a, dp);
  for (int e = threadIdx.x; e < kBlockRows * kMaxDim; e += blockDim.x)
    sh.dk[e] = sh.dv[e] = 0.0f;
  for (int j = threadIdx.x; j < kBlockRows; j += blockDim.x)
    sh.mask[j] = k0 + j < S ? mask[b * S + k0 + j] : 0.0f;
  for (int64_t q0 = 0; q0 < S; q0 += kStep) {
    if (!a.rangesMeet(b, k0, kBlockRows, q0, kStep))
      continue;      // packed rows: no query here sees these keys
    __syncthreads(); // the last step's reads of q and dout are done
    loadTile(sh.q, q.at(slice), q0, kStep, a, dp);
    loadTile(sh.dout, dout.at(slice), q0, kStep, a, dp);
    for (int i = threadIdx.x; i < kStep; i += blockDim.x) {
      sh.lse[i] = q0 + i < S ? lse[bh * S + q0 + i] : 0.0f;
      sh.rowDots[i] = q0 + i < S ? rowDots[bh * S + q0 + i] : 0.0f;
    }
    __syncthreads();
    const T *myK = sh.k + warp * kWarpRows * kMaxDim;
    const T *myV = sh.v + warp * kWarpRows * kMaxDim;
    // scoresᵀ = k qᵀ and (dout vᵀ)ᵀ = v doutᵀ: keys are rows.
    warpProduct<T, true>(myK, kMaxDim, sh.q, kMaxDim, sh.scores[warp], kStep,
                         kStep, dp, false);
    warpProduct<T, true>(myV, kMaxDim, sh.dout, kMaxDim, sh.dprobs[warp], kStep,
                         kStep, dp, false);
    for (int cc = 0; cc < kStep / 2; ++cc) {
      int c = half * (kStep / 2) + cc, e = r * kStep + c;
      int64_t qi = q0 + c;
      float drop = keptAcrossLanes(a, b, h, qi, kj, r, half);
      float pd = 0.0f, ds = 0.0f;
      if (qi < S && kj < S && a.sameSequence(b, qi, kj)) {
        float p = expf(sh.scores[warp][e] * a.scale +
                       sh.mask[warp * kWarpRows + r] - sh.lse[c]);
        pd = p * drop;
        ds = a.scale * p * (sh.dprobs[warp][e] * drop - sh.rowDots[c]);
      }
      sh.probs(warp)[e] = fromFloat<T>(pd);
      sh.dscores(warp)[e] = fromFloat<T>(ds);
    }
    // dv += pdᵀ dout, dk += dsᵀ q (this warp's 16 keys).
    warpProduct<T, false>(sh.probs(warp), kStep, sh.dout, kMaxDim,
                          sh.dv + warp * kWarpRows * kMaxDim, kMaxDim, dp,
                          kStep, true);
    warpProduct<T, false>(sh.dscores(warp), kStep, sh.q, kMaxDim,
                          sh.dk + warp * kWarpRows * kMaxDim, kMaxDim, dp,
                          kStep, true);
  }
  if (kj < S)
    for (int c = half; c < D; c += 2) {
      int e = (warp * kWarpRows + r) * kMaxDim + c;
      dk.set(slice + kj * stride + c, sh.dk[e]);
      dv.set(slice + kj * stride + c, sh.dv[e]);
    }
}

// Shared memory of the dq kernel: grid (batch * heads, query tiles of 32).
template <typename T> struct QueryGradShared {
  T q[kBlockRows * kMaxDim], dout[kBlockRows * kMaxDim];
  T k[kStep * kMaxDim], v[kStep * kMaxDim];
  float scores[kWarps][kStep * kStep], dprobs[kWarps][kStep * kStep];
  T dscoresTile[kWarps][kStep * kStep];
  float dq[kBlockRows * kMaxDim];
  float mask[kStep];
  __device__ T *dscores(int w) { return dscoresTile[w]; }
};
template <> struct QueryGradShared<float> {
  float q[kBlockRows * kMaxDim], dout[kBlockRows * kMaxDim];
  float k[kStep * kMaxDim], v[kStep * kMaxDim];
  float scores[kWarps][kStep * kStep], dprobs[kWarps][kStep * kStep];
  float dq[kBlockRows * kMaxDim];
  float mask[kStep];
  __device__ float *dscores(int w) { return scores[w]; }
};

template <typename T>
__global__ void attentionQueryGrad(View q, View k, View v, const float *mask,
                                   const float *lse, View dout,
                                   const float *rowDots, View dq,
                                   AttentionShape a, int dp) {
  a.sampleOffset = a.sampleOffset.value(); // this run's, read once
  __shared__ __align__(32) QueryGradShared<T> sh;
  const int64_t bh = blockIdx.x, b = bh / a.heads, h = bh % a.heads;
  const int64_t S = a.seq, D = a.headDim, q0 = blockIdx.y * kBlockRows;
  const int64_t slice = a.headBase(b, h), stride = a.rowStride();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r = lane / 2, half = lane % 2;
  const int64_t qi = q0 + warp * kWarpRows + r;
  const float rowLse = qi < S ? lse[bh * S + qi] : 0.0f;
  const float rowDot = qi < S ? rowDots[bh * S + qi] : 0.0f;
  loadTile(sh.q, q.at(slice), q0, kBlockRows, a, dp);
  loadTile(sh.dout, dout.at(slice), q0, kBlockRows, a, dp);
  for (int e = threadIdx.x; e < kBlockRows * kMaxDim; e += blockDim.x)
    sh.dq[e] = 0.0f;
  for (int64_t k0 = 0; k0 < S; k0 += kStep) {
    if (!a.rangesMeet(b, q0, kBlockRows, k0, kStep))
      continue; // packed rows: these keys are no query's here
    __syncthreads();
    loadTile(sh.k, k.at(slice), k0, kStep, a, dp);
    loadTile(sh.v, v.at(slice), k0, kStep, a, dp);
    for (int j = threadIdx.x; j < kStep; j += blockDim.x)
      sh.mask[j] = k0 + j < S ? mask[b * S + k0 + j] : 0.0f;
    __syncthreads();
    warpProduct<T, true>(sh.q + warp * kWarpRows * kMaxDim, kMaxDim, sh.k,
                         kMaxDim, sh.scores[warp], kStep, kStep, dp, false);
    warpProduct<T, true>(sh.dout + warp * kWarpRows * kMaxDim, kMaxDim, sh.v,
                         kMaxDim, sh.dprobs[warp], kStep, kStep, dp, false);
    float drop[4];
    for (int cc = 0; cc < kStep / 2; ++cc) {
      int c = half * (kStep / 2) + cc, e = r * kStep + c;
      int64_t kj = k0 + c;
      if (cc % 4 == 0)
        keptQuad(a, b, h, qi, kj, drop);
      float ds = 0.0f;
      if (qi < S && kj < S && a.sameSequence(b, qi, kj)) {
        float p = expf(sh.scores[warp][e] * a.scale + sh.mask[c] - rowLse);
        ds = a.scale * p * (sh.dprobs[warp][e] * drop[cc % 4] - rowDot);
      }
      sh.dscores(warp)[e] = fromFloat<T>(ds);
    }
    // dq += ds k (this warp's 16 queries).
    warpProduct<T, false>(sh.dscores(warp), kStep, sh.k, kMaxDim,
                          sh.dq + warp * kWarpRows * kMaxDim, kMaxDim, dp,
                          kStep, true);
  }
  if (qi < S)
    for (int c = half; c < D; c += 2)
      dq.set(slice + qi * stride + c,
             sh.dq[(warp * kWarpRows + r) * kMaxDim + c]);
}

int paddedDim(const AttentionShape &a) {
  if (a.headDim < 1 || a.headDim > kMaxDim)
    throw std::runtime_error("attention: head_dim " +
                             std::to_string(a.headDim) + " is outside [1, 64]");
  return static_cast<int>((a.headDim + 15) / 16 * 16);
}

dim3 tiles(const AttentionShape &a, const char *what) {
  return dim3(
      gridDimension(a.batch * a.heads, kMaxGridX, what),
      gridDimension((a.seq + kBlockRows - 1) / kBlockRows, kMaxGridYZ, what));
}

} // namespace

void attention(cudaStream_t s, const float *q, const float *k, const float *v,
               const float *mask, float *out, float *lse,
               const AttentionShape &a, uint64_t bf16) {
  if (a.batch * a.heads * a.seq <= 0)
    return;
  int dp = paddedDim(a);
  View vq = viewOf(q, bf16, 0), vk = viewOf(k, bf16, 1),
       vv = viewOf(v, bf16, 2), vo = viewOf(out, bf16, 4);
  if (a.precision == 1)
    launch("attention (bf16)", attentionForward<__nv_bfloat16>,
           tiles(a, "attention"), dim3(kThreadsPerBlock), 0, s, vq, vk, vv,
           mask, vo, lse, a, dp);
  else
    launch("attention", attentionForward<float>, tiles(a, "attention"),
           dim3(kThreadsPerBlock), 0, s, vq, vk, vv, mask, vo, lse, a, dp);
}

void attentionGrad(cudaStream_t s, const float *q, const float *k,
                   const float *v, const float *mask, const float *out,
                   const float *lse, const float *dout, float *dq, float *dk,
                   float *dv, float *rowDots, const AttentionShape &a,
                   uint64_t bf16) {
  int64_t rows = a.batch * a.heads * a.seq;
  if (rows <= 0)
    return;
  int dp = paddedDim(a);
  // kernel-record order: [q, k, v, mask, out, lse, dout, dq, dk, dv, rows].
  View vq = viewOf(q, bf16, 0), vk = viewOf(k, bf16, 1),
       vv = viewOf(v, bf16, 2), vo = viewOf(out, bf16, 4),
       vdo = viewOf(dout, bf16, 6), vdq = viewOf(dq, bf16, 7),
       vdk = viewOf(dk, bf16, 8), vdv = viewOf(dv, bf16, 9);
  launchOver(s, "attention_grad (row dots)", rows, attentionRowDots, vo, vdo,
             rowDots, a);
  const float *dots = rowDots;
  dim3 grid = tiles(a, "attention_grad");
  if (a.precision == 1) {
    launch("attention_grad (dk, dv; bf16)", attentionKeyGrad<__nv_bfloat16>,
           grid, dim3(kThreadsPerBlock), 0, s, vq, vk, vv, mask, lse, vdo, dots,
           vdk, vdv, a, dp);
    launch("attention_grad (dq; bf16)", attentionQueryGrad<__nv_bfloat16>, grid,
           dim3(kThreadsPerBlock), 0, s, vq, vk, vv, mask, lse, vdo, dots, vdq,
           a, dp);
  } else {
    launch("attention_grad (dk, dv)", attentionKeyGrad<float>, grid,
           dim3(kThreadsPerBlock), 0, s, vq, vk, vv, mask, lse, vdo, dots, vdk,
           vdv, a, dp);
    launch("attention_grad (dq)", attentionQueryGrad<float>, grid,
           dim3(kThreadsPerBlock), 0, s, vq, vk, vv, mask, lse, vdo, dots, vdq,
           a, dp);
  }
}

} // namespace ferry::cuda
