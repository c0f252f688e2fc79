// The Attention family on CUDA (dialects/rt/kernels/Attention.td), as
// run(Context &, const XArgs &): host code launching AttentionKernels.cu's
// grids. The sample offset changes every step: the kernels read it on the
// device (CallSteps::stepValue), so a captured graph replays each run's.
#include "runtime/backend/Collectives.h"
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/executable/KernelParams.h"

namespace ferry::cuda {
namespace {

// The call's shape, this run's sample offset and (tensor parallelism) where
// this rank's heads start in each sample's probabilities.
template <class Args>
AttentionShape shapeOf(Context &cx, const Args &a, const char *kernel) {
  AttentionShape shape = kernels::attentionShapeOf(a);
  shape.sampleOffset = cx.steps->stepValue(a.sample_offset);
  shape.keyOffset = cx.collectives->tensorKeyOffset(a.tensor_key_stride,
                                                    shape.dropoutKeys, kernel);
  return shape;
}

} // namespace

void run(Context &cx, const kernels::AttentionArgs &a) {
  AttentionShape shape = shapeOf(cx, a, "attention");
  attention(cx.stream, a.q.data, a.k.data, a.v.data, a.mask.data, a.out.data,
            a.lse.data, shape,
            bf16Bits({a.q.bf16, a.k.bf16, a.v.bf16, a.mask.bf16, a.out.bf16,
                      a.lse.bf16}));
}

void run(Context &cx, const kernels::AttentionGradArgs &a) {
  AttentionShape shape = shapeOf(cx, a, "attention_grad");
  attentionGrad(
      cx.stream, a.q.data, a.k.data, a.v.data, a.mask.data, a.out.data,
      a.lse.data, a.dout.data, a.dq.data, a.dk.data, a.dv.data,
      a.workspace.data, shape,
      bf16Bits({a.q.bf16, a.k.bf16, a.v.bf16, a.mask.bf16, a.out.bf16,
                a.lse.bf16, a.dout.bf16, a.dq.bf16, a.dk.bf16, a.dv.bf16}));
}

} // namespace ferry::cuda
