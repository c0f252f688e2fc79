// The CUDA backend's kernels, fp32: the same operations, argument order and
// semantics as the CPU backend's (runtime/cpu/CpuKernels.h, which documents
// each), on device pointers, launched on `stream`. GEMMs go through cuBLAS;
// the rest are ferry's own kernels. Dropout draws the same Philox bits as
// the CPU backend (runtime/random/Philox.h is compiled for both), so masks
// are identical across backends. No kernel sums with float atomics: every
// reduction adds in a fixed order, so a run gives the same bits every time
// (the scatter-add gradients the CPU's bits exactly; the rest equal the
// CPU's to rounding).
//
// Checked against the CPU kernels on random inputs by test/unit/
// CudaKernelsTest.cpp (ctest label gpu; skipped without a device).
#pragma once

#include "runtime/kernels/AttentionShape.h"
#include "runtime/kernels/StepValue.h"

#include <cstddef>
#include <cstdint>

typedef struct CUstream_st *cudaStream_t;
typedef struct cublasContext *cublasHandle_t;

namespace ferry::cuda {

// A cuBLAS handle and the device workspace it must use. cublasSetStream
// resets a handle's workspace to cuBLAS's default pool (NVIDIA's cuBLAS
// documentation, cublasSetStream), which allocates, also inside a CUDA-graph
// capture; so every GEMM sets the stream and then this workspace again.
struct Cublas {
  cublasHandle_t handle = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

// Launch or cuBLAS failures throw std::runtime_error naming the kernel and
// the CUDA error. Kernels are launched through runtime/cuda/Launch.h, which
// checks each launch's own return value (never a stale error of an earlier
// call), and every runtime call's result is checked where it is made.

// x rounded (to nearest even) to bf16, or to fp16 with `fp16`, into `out`
// (2 bytes per element).
// out = the fp32 values of n bf16 words.
void expandBf16(cudaStream_t stream, const void *x, float *out, int64_t n);
void roundToHalf(cudaStream_t stream, const float *x, void *out, int64_t n,
                 bool fp16);

// Strided-batched GEMM through cuBLAS (cublasGemmStridedBatchedEx) with A
// and B of `inputType` (0 fp32, 1 bf16, 2 fp16), fp32 accumulation, and C
// fp32 (or bf16 with bf16 inputs, `bf16Out`): the fallback where cuBLASLt
// (LtGemm.h) has no algorithm.
void gemmEx(const Cublas &cublas, cudaStream_t stream, int64_t batch, int64_t m,
            int64_t n, int64_t k, bool transA, bool transB, float alpha,
            const void *a, int64_t strideA, const void *b, int64_t strideB,
            float beta, float *c, int64_t strideC, int inputType,
            bool bf16Out = false);

void gemm(const Cublas &cublas, cudaStream_t stream, int64_t batch, int64_t m,
          int64_t n, int64_t k, bool transA, bool transB, float alpha,
          const float *a, int64_t strideA, const float *b, int64_t strideB,
          float beta, float *c, int64_t strideC);

// gemm with A and B rounded to bf16 (into `workspace`: extentA + extentB
// bf16 values) and fp32 accumulation through cublasGemmStridedBatchedEx
// (training.precision: bf16).
void gemmBf16(const Cublas &cublas, cudaStream_t stream, int64_t batch,
              int64_t m, int64_t n, int64_t k, bool transA, bool transB,
              float alpha, const float *a, int64_t strideA, const float *b,
              int64_t strideB, float beta, float *c, int64_t strideC,
              void *workspace, bool fp16 = false);

// Which index inputs were out of range since the last call (bits: 1
// embedding ids, 2 masked-LM positions, 4 labels), then cleared. Kernels
// skip such accesses instead of reading or writing outside their buffers;
// the caller reports them (synchronises the device).
unsigned takeIndexErrors();

void fill(cudaStream_t s, float *out, int64_t n, float value);
void fillInt(cudaStream_t s, int32_t *out, int64_t n, int32_t value);
void iota(cudaStream_t s, int32_t *out, int64_t outer, int64_t size,
          int64_t inner);
void attentionMask(cudaStream_t s, const int32_t *mask, float *out, int64_t n,
                   float fill);
// A vocabulary-parallel part (tensor parallelism): the table holds rows
// [firstId, firstId + vocab) of one of `wholeRows` (every rank's); the
// other ranks' ids look up zeros and add nothing. An id outside the whole
// table is recorded (takeIndexErrors).
void embedding(cudaStream_t s, const float *table, const int32_t *ids,
               float *out, int64_t rows, int64_t width, int64_t vocab,
               int64_t firstId = 0, int64_t wholeRows = -1);
// `workspace` holds 3 * rows + 256 * ceil(rows / 256) int32s (its kernel
// record).
void embeddingGrad(cudaStream_t s, const int32_t *ids, const float *dy,
                   float *dtable, int64_t rows, int64_t width, int64_t vocab,
                   bool accumulate, int32_t *workspace, int64_t firstId = 0,
                   int64_t wholeRows = -1);
// RadixSort.cu: the rows [0, n) ordered by keys[row] in [0, maxKey], stable;
// `workspace` holds sortRowsWorkspace(n) int32s and the result lies in it.
int64_t sortRowsWorkspace(int64_t n);
const int32_t *sortRowsByKey(cudaStream_t s, const int32_t *keys, int64_t n,
                             int32_t maxKey, int32_t *workspace);
void gatherPositions(cudaStream_t s, const float *x, const int32_t *positions,
                     float *out, int64_t batch, int64_t seq,
                     int64_t predictions, int64_t width, uint64_t bf16 = 0);
void gatherPositionsGrad(cudaStream_t s, const int32_t *positions,
                         const float *dy, float *dx, int64_t batch, int64_t seq,
                         int64_t predictions, int64_t width);
void take(cudaStream_t s, const float *x, float *out, int64_t outer,
          int64_t size, int64_t inner, int64_t index, uint64_t bf16 = 0);
void takeGrad(cudaStream_t s, const float *dy, float *dx, int64_t outer,
              int64_t size, int64_t inner, int64_t index);
// The element-wise maps take their tensors as fp32 or bf16 (`bf16`: bits of
// MapBits, for the result and the first and second inputs in the order
// each declares them; the kernel records' RtBf16 storage).
enum MapBits : unsigned { kMapOut = 1, kMapA = 2, kMapB = 4 };
void biasAdd(cudaStream_t s, const float *x, const float *bias, float *out,
             int64_t rows, int64_t cols, unsigned bf16 = 0);
// op: 0 add, 1 sub, 2 mul, 3 div (cpu::Binary).
void binary(cudaStream_t s, int32_t op, const float *a, const float *b,
            float *out, int64_t n, unsigned bf16 = 0);
// dst += src: a is dst, b is src.
void accumulate(cudaStream_t s, float *dst, const float *src, int64_t n,
                unsigned bf16 = 0);
void scale(cudaStream_t s, const float *x, float *out, int64_t n, float factor,
           unsigned bf16 = 0);
void gelu(cudaStream_t s, const float *x, float *out, int64_t n,
          unsigned bf16 = 0);
void geluGrad(cudaStream_t s, const float *x, const float *dy, float *dx,
              int64_t n, unsigned bf16 = 0);
void tanhForward(cudaStream_t s, const float *x, float *out, int64_t n,
                 unsigned bf16 = 0);
void tanhGrad(cudaStream_t s, const float *y, const float *dy, float *dx,
              int64_t n, unsigned bf16 = 0);
// `bf16` on the kernels below: the call's bf16 mask (Instr.bf16_buffers),
// bit b for the kernel's buffer b in kernel-record order (FERRY_BF16).
void layerNorm(cudaStream_t s, const float *x, const float *scale,
               const float *bias, float *out, int64_t rows, int64_t cols,
               float eps, uint64_t bf16 = 0);
// dscale and dbias are overwritten (as on the CPU). `stats` (2 * rows
// floats on the device) holds each row's mean and reciprocal deviation for
// the column pass. With the backend's scratch, dscale and dbias split the
// rows across more blocks and add the chunks in order (reduce's column
// split).
void layerNormGrad(cudaStream_t s, const float *x, const float *scale,
                   const float *dy, float *dx, float *dscale, float *dbias,
                   int64_t rows, int64_t cols, float eps, float *stats,
                   double *scratch = nullptr, uint64_t bf16 = 0);
// sequenceIds: packed rows, as cpu::softmax's.
void softmax(cudaStream_t s, const float *x, const float *mask, float *out,
             int64_t batch, int64_t rows, int64_t cols, uint64_t bf16 = 0,
             const int32_t *sequenceIds = nullptr);
void softmaxGrad(cudaStream_t s, const float *y, const float *dy, float *dx,
                 int64_t rows, int64_t cols, uint64_t bf16 = 0);
// keys (every dropout below): packed rows' per-element keys (DropoutKeys.h);
// keyOffset (tensor parallelism): where this rank's part starts in each
// sample (Collectives::tensorKeyOffset), as cpu::dropout's.
void dropout(cudaStream_t s, const float *x, float *out, int64_t n,
             int64_t perSample, uint64_t seed, uint32_t purpose, uint32_t layer,
             StepValue sampleOffset, float p, uint64_t bf16 = 0,
             const PackedDropoutKeys &keys = {}, uint64_t keyOffset = 0);
// softmax then dropout of the probabilities (probs and out), and the
// softmax's gradient of dropout(dy): the fused attention kernels
// (ferry-fuse-softmax-dropout), with dropout's masks.
void softmaxDropout(cudaStream_t s, const float *x, const float *mask,
                    float *probs, float *out, int64_t batch, int64_t rows,
                    int64_t cols, int64_t perSample, uint64_t seed,
                    uint32_t purpose, uint32_t layer, StepValue sampleOffset,
                    float p, uint64_t bf16 = 0,
                    const int32_t *sequenceIds = nullptr,
                    const PackedDropoutKeys &keys = {}, uint64_t keyOffset = 0);
// sum = dropout(input) + residual (p 0: no dropout), out = layer_norm(sum):
// the end of a sublayer (ferry-fuse-residual-norm).
void residualLayerNorm(cudaStream_t s, const float *input,
                       const float *residual, const float *scale,
                       const float *bias, float *sum, float *out, int64_t rows,
                       int64_t cols, float eps, int64_t perSample,
                       uint64_t seed, uint32_t purpose, uint32_t layer,
                       StepValue sampleOffset, float p, uint64_t bf16 = 0,
                       const PackedDropoutKeys &keys = {});
void dropoutSoftmaxGrad(cudaStream_t s, const float *y, const float *dy,
                        float *dx, int64_t rows, int64_t cols,
                        int64_t perSample, uint64_t seed, uint32_t purpose,
                        uint32_t layer, StepValue sampleOffset, float p,
                        uint64_t bf16 = 0, const PackedDropoutKeys &keys = {},
                        uint64_t keyOffset = 0);
void transpose(cudaStream_t s, const float *x, float *out, int32_t rank,
               const int64_t *dims, const int64_t *perm, uint64_t bf16 = 0);
// kind: 0 sum, 1 mean, 2 max, 3 sum of squares (cpu::Reduce).
// With the backend's scratch, few columns over many rows (a bias gradient)
// split their rows across more blocks and add the chunks in order.
void reduce(cudaStream_t s, int32_t kind, const float *x, float *out,
            int64_t outer, int64_t size, int64_t inner,
            double *scratch = nullptr);
void broadcast(cudaStream_t s, const float *x, float *out, int64_t outer,
               int64_t size, int64_t inner);
void softmaxCrossEntropy(cudaStream_t s, const float *logits,
                         const int32_t *labels, const float *weights,
                         float *out, int64_t rows, int64_t cols,
                         int64_t classes, double *rowLosses);
void softmaxCrossEntropyGrad(cudaStream_t s, const float *logits,
                             const int32_t *labels, const float *weights,
                             const float *dloss, float *dlogits, int64_t rows,
                             int64_t cols, int64_t classes);
// rowLosses / rowCounts: `rows` doubles, summed in a fixed order.
void argmaxCorrect(cudaStream_t s, const float *logits, const int32_t *labels,
                   const float *weights, float *out, int64_t rows, int64_t cols,
                   int64_t classes, double *rowCounts);
// The losses over classes split across the tensor-parallel group
// (cpu::classMax and the rest, CpuKernels.h): `real` of each row's `cols`
// columns are real classes, the first of them class `first` of the whole
// row; a label outside [0, classes) is recorded (takeIndexErrors).
void classMax(cudaStream_t s, const float *logits, float *out, int64_t rows,
              int64_t cols, int64_t real);
void classStats(cudaStream_t s, const float *logits, const int32_t *labels,
                const float *rowMax, float *out, int64_t rows, int64_t cols,
                int64_t real, int64_t first, int64_t classes);
void classStatsGrad(cudaStream_t s, const float *logits, const int32_t *labels,
                    const float *rowMax, const float *dstats, float *dlogits,
                    int64_t rows, int64_t cols, int64_t real, int64_t first,
                    int64_t classes);
void crossEntropyOfStats(cudaStream_t s, const float *stats,
                         const float *rowMax, const float *weights, float *out,
                         int64_t rows);
void crossEntropyOfStatsGrad(cudaStream_t s, const float *stats,
                             const float *weights, const float *dloss,
                             float *dstats, int64_t rows);
void classArgmax(cudaStream_t s, const float *logits, const float *rowMax,
                 float *out, int64_t rows, int64_t cols, int64_t real,
                 int64_t first);
void indexCorrect(cudaStream_t s, const float *negatedIndex,
                  const int32_t *labels, const float *weights, float *out,
                  int64_t rows, int64_t classes);
// AttentionKernels.cu: cpu::attention and cpu::attentionGrad on the device;
// `rowDots` holds batch * heads * seq floats (the planned workspace).
void attention(cudaStream_t s, const float *q, const float *k, const float *v,
               const float *mask, float *out, float *lse,
               const AttentionShape &shape, uint64_t bf16 = 0);
void attentionGrad(cudaStream_t s, const float *q, const float *k,
                   const float *v, const float *mask, const float *out,
                   const float *lse, const float *dout, float *dq, float *dk,
                   float *dv, float *rowDots, const AttentionShape &shape,
                   uint64_t bf16 = 0);

// The backend's scratch (kScratchDoubles doubles on the device) holds the
// per-block partial sums that the reductions below add in a fixed order.
constexpr int64_t kScratchDoubles = 1 << 16;
// out[0] = sqrt(sum of squares of every tensor), in double.
void globalNorm(cudaStream_t s, const float *const *tensors,
                const int64_t *sizes, int64_t count, float *out,
                double *scratch);

struct AdamParams {
  float beta1, beta2, epsilon, weightDecay;
  bool applyWeightDecay, lamb;
  int64_t step; // t, counting updates from 1
  // fp16 loss scaling (device scalar, null: none): the gradient is divided
  // by it, and a non-finite norm skips the update.
  const float *lossScale = nullptr;
  // 1 / (1 - beta1^t) and 1 / (1 - beta2^t) on the device (null: from
  // `step` on the host): the backend's per-run values (StepTable.h).
  const float *corrections = nullptr;
};
// cpu::adamUpdate with the learning rate and global norm read from device
// scalars; LAMB's norms use the scratch (at most 16383 segments).
void adamUpdate(cudaStream_t s, float *w, const float *g, float *m, float *v,
                int64_t n, int64_t segments, const float *lr,
                const float *globalNorm, float clipNorm,
                const AdamParams &params, double *scratch);
// adamUpdate's LAMB halves for shards (cpu::lambMoments, cpu::lambApply):
// `sums` holds 2 * segments floats on the device, all-reduced in between.
void lambMoments(cudaStream_t s, const float *w, const float *g, float *m,
                 float *v, int64_t n, int64_t segments, const float *globalNorm,
                 float clipNorm, const AdamParams &params, float *sums,
                 double *scratch);
void lambApply(cudaStream_t s, float *w, const float *m, const float *v,
               int64_t n, int64_t segments, const float *lr,
               const float *globalNorm, const AdamParams &params,
               const float *sums, double *scratch);

} // namespace ferry::cuda
