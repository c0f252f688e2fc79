// The Row family on CUDA (dialects/rt/kernels/Row.td), as
// run(Context &, const XArgs &): host code launching RowKernels.cu's grids.
// The dropouts' sample offset changes every step: the kernels read it on
// the device (CallSteps::stepValue), so a captured graph replays each run's;
// a tensor-parallel rank's key offset is fixed for the run.
#include "runtime/backend/Collectives.h"
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/executable/KernelParams.h"

namespace ferry::cuda {
namespace {

// Tensor parallelism: where this rank's part of each sample starts.
template <class Args>
uint64_t keyOffsetOf(const Context &cx, const Args &a, const char *kernel) {
  return cx.collectives->tensorKeyOffset(a.tensor_key_stride,
                                         kernels::dropoutKeysOf(a), kernel);
}

} // namespace

void run(Context &cx, const kernels::LayerNormArgs &a) {
  layerNorm(cx.stream, a.x.data, a.scale.data, a.bias.data, a.out.data, a.rows,
            a.cols, static_cast<float>(a.eps),
            bf16Bits({a.x.bf16, a.scale.bf16, a.bias.bf16, a.out.bf16}));
}

void run(Context &cx, const kernels::LayerNormGradArgs &a) {
  layerNormGrad(cx.stream, a.x.data, a.scale.data, a.dy.data, a.dx.data,
                a.dscale.data, a.dbias.data, a.rows, a.cols,
                static_cast<float>(a.eps),
                needWorkspace(a.workspace, "layer_norm_grad"), cx.scratch,
                bf16Bits({a.x.bf16, a.scale.bf16, a.dy.bf16, a.dx.bf16}));
}

void run(Context &cx, const kernels::SoftmaxArgs &a) {
  softmax(cx.stream, a.x.data, a.mask.data, a.out.data, a.batch, a.rows, a.cols,
          bf16Bits({a.x.bf16, a.mask.bf16, a.out.bf16}), a.sequence_ids.data);
}

void run(Context &cx, const kernels::SoftmaxGradArgs &a) {
  softmaxGrad(cx.stream, a.y.data, a.dy.data, a.dx.data, a.rows, a.cols,
              bf16Bits({a.y.bf16, a.dy.bf16, a.dx.bf16}));
}

void run(Context &cx, const kernels::DropoutArgs &a) {
  dropout(cx.stream, a.x.data, a.out.data, a.count, a.per_sample,
          static_cast<uint64_t>(a.seed), static_cast<uint32_t>(a.purpose),
          static_cast<uint32_t>(a.layer), cx.steps->stepValue(a.sample_offset),
          static_cast<float>(a.p), bf16Bits({a.x.bf16, a.out.bf16}),
          kernels::dropoutKeysOf(a), keyOffsetOf(cx, a, "dropout"));
}

void run(Context &cx, const kernels::SoftmaxDropoutArgs &a) {
  softmaxDropout(
      cx.stream, a.x.data, a.mask.data, a.probs.data, a.out.data, a.batch,
      a.rows, a.cols, a.per_sample, static_cast<uint64_t>(a.seed),
      static_cast<uint32_t>(a.purpose), static_cast<uint32_t>(a.layer),
      cx.steps->stepValue(a.sample_offset), static_cast<float>(a.p),
      bf16Bits({a.x.bf16, a.mask.bf16, a.probs.bf16, a.out.bf16}),
      a.sequence_ids.data, kernels::dropoutKeysOf(a),
      keyOffsetOf(cx, a, "softmax_dropout"));
}

void run(Context &cx, const kernels::DropoutSoftmaxGradArgs &a) {
  dropoutSoftmaxGrad(
      cx.stream, a.y.data, a.dy.data, a.dx.data, a.rows, a.cols, a.per_sample,
      static_cast<uint64_t>(a.seed), static_cast<uint32_t>(a.purpose),
      static_cast<uint32_t>(a.layer), cx.steps->stepValue(a.sample_offset),
      static_cast<float>(a.p), bf16Bits({a.y.bf16, a.dy.bf16, a.dx.bf16}),
      kernels::dropoutKeysOf(a), keyOffsetOf(cx, a, "dropout_softmax_grad"));
}

void run(Context &cx, const kernels::ResidualLayerNormArgs &a) {
  residualLayerNorm(
      cx.stream, a.input.data, a.residual.data, a.scale.data, a.bias.data,
      a.sum.data, a.out.data, a.rows, a.cols, static_cast<float>(a.eps),
      a.per_sample, static_cast<uint64_t>(a.seed),
      static_cast<uint32_t>(a.purpose), static_cast<uint32_t>(a.layer),
      cx.steps->stepValue(a.sample_offset), static_cast<float>(a.p),
      bf16Bits({a.input.bf16, a.residual.bf16, a.scale.bf16, a.bias.bf16,
                a.sum.bf16, a.out.bf16}),
      kernels::dropoutKeysOf(a));
}

} // namespace ferry::cuda
