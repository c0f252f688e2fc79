// The ClassSplit family on CUDA (dialects/rt/kernels/ClassSplit.td): the
// losses over classes split across the tensor-parallel group. Not built on
// CUDA yet (the trainer refuses to run tensor parallelism there): each body
// refuses its call, naming the kernel, rather than computing something else.
#include "runtime/cuda/CudaKernelContext.h"

namespace ferry::cuda {

namespace {
constexpr const char *kSplitClasses =
    "computes a loss over classes split across the tensor-parallel group";
} // namespace

void run(Context &, const kernels::ClassMaxArgs &) {
  refuseTensorParallel("class_max", kSplitClasses);
}
void run(Context &, const kernels::ClassStatsArgs &) {
  refuseTensorParallel("class_stats", kSplitClasses);
}
void run(Context &, const kernels::ClassStatsGradArgs &) {
  refuseTensorParallel("class_stats_grad", kSplitClasses);
}
void run(Context &, const kernels::CrossEntropyOfStatsArgs &) {
  refuseTensorParallel("cross_entropy_of_stats", kSplitClasses);
}
void run(Context &, const kernels::CrossEntropyOfStatsGradArgs &) {
  refuseTensorParallel("cross_entropy_of_stats_grad", kSplitClasses);
}
void run(Context &, const kernels::ClassArgmaxArgs &) {
  refuseTensorParallel("class_argmax", kSplitClasses);
}
void run(Context &, const kernels::IndexCorrectArgs &) {
  refuseTensorParallel("index_correct", kSplitClasses);
}

} // namespace ferry::cuda
