// The Reduction family on CUDA (dialects/rt/kernels/Reduction.td), as
// run(Context &, const XArgs &): host code launching ReductionKernels.cu's
// grids. The learning rate and Adam's bias corrections are the step table's
// per-run scalars (StepTable.h), so a captured graph replays each run's.
#include "runtime/Error.h"
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/Launch.h"
#include "runtime/executable/KernelParams.h"

#include <fmt/format.h>

#include <vector>

namespace ferry::cuda {

void run(Context &cx, const kernels::ReduceArgs &a) {
  reduce(cx.stream, static_cast<int32_t>(a.kind), a.x.data, a.out.data, a.outer,
         a.size, a.inner, cx.scratch);
}

void run(Context &cx, const kernels::GlobalNormArgs &a) {
  const std::vector<const float *> tensors = kernels::tensorsOf(a);
  globalNorm(cx.stream, tensors.data(), a.counts.data,
             static_cast<int64_t>(tensors.size()), a.out.data, cx.scratch);
}

void run(Context &cx, const kernels::LearningRateArgs &a) {
  // A scalar of the step, computed on the host for each run.
  checkCuda(memcpyAsync(a.out.data, cx.steps->stepScalars(), 4,
                        cudaMemcpyDeviceToDevice, cx.stream),
            "learning rate");
}

namespace {

// One parameter set for the whole update and LAMB's two halves. The bias
// corrections of this run's step come from the step table (`step` is then
// unused).
template <class Args>
AdamParams adamParams(Context &cx, const char *kernel, const Args &a,
                      bool lamb) {
  if (4 * a.segments > kScratchDoubles)
    throw RuntimeError(fmt::format("{} with {} segments, more than the {} the "
                                   "CUDA optimizer kernels take",
                                   kernel, a.segments, kScratchDoubles / 4));
  return AdamParams{static_cast<float>(a.beta1),
                    static_cast<float>(a.beta2),
                    static_cast<float>(a.epsilon),
                    static_cast<float>(a.weight_decay),
                    a.weight_decay != 0.0,
                    lamb,
                    1,
                    a.loss_scale.data,
                    cx.steps->stepScalars()};
}

} // namespace

void run(Context &cx, const kernels::OptimizerUpdateArgs &a) {
  adamUpdate(cx.stream, a.w.data, a.g.data, a.m.data, a.v.data, a.count,
             a.segments, a.lr.data, a.norm.data,
             static_cast<float>(a.clip_norm),
             adamParams(cx, "optimizer_update", a, a.lamb != 0), cx.scratch);
}

void run(Context &cx, const kernels::LambMomentsArgs &a) {
  lambMoments(cx.stream, a.w.data, a.g.data, a.m.data, a.v.data, a.count,
              a.segments, a.norm.data, static_cast<float>(a.clip_norm),
              adamParams(cx, "lamb_moments", a, true), a.sums.data, cx.scratch);
}

void run(Context &cx, const kernels::LambApplyArgs &a) {
  lambApply(cx.stream, a.w.data, a.m.data, a.v.data, a.count, a.segments,
            a.lr.data, a.norm.data, adamParams(cx, "lamb_apply", a, true),
            a.sums.data, cx.scratch);
}

} // namespace ferry::cuda
