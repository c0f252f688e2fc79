// The ClassSplit family on CUDA (dialects/rt/kernels/ClassSplit.td), as
// run(Context &, const XArgs &): the losses over classes split across the
// tensor-parallel group, launching IndexedKernels.cu's grids. This rank's
// first class is its tensor rank x tensor_class_stride.
#include "runtime/backend/Collectives.h"
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/CudaKernels.h"

#include <algorithm>

namespace ferry::cuda {
namespace {

// The global class of this rank's first column, and how many of its
// columns are real classes of the whole row (cpu's classPartOf).
struct ClassPart {
  int64_t first, real;
};
template <class Args> ClassPart classPartOf(const Context &cx, const Args &a) {
  const int64_t first = a.tensor_class_stride * cx.collectives->tensorRank();
  return {first, std::clamp<int64_t>(a.classes - first, 0, a.cols)};
}

} // namespace

void run(Context &cx, const kernels::ClassMaxArgs &a) {
  classMax(cx.stream, a.logits.data, a.out.data, a.rows, a.cols,
           classPartOf(cx, a).real);
}
void run(Context &cx, const kernels::ClassStatsArgs &a) {
  ClassPart p = classPartOf(cx, a);
  classStats(cx.stream, a.logits.data, a.labels.data, a.row_max.data,
             a.out.data, a.rows, a.cols, p.real, p.first, a.classes);
}
void run(Context &cx, const kernels::ClassStatsGradArgs &a) {
  ClassPart p = classPartOf(cx, a);
  classStatsGrad(cx.stream, a.logits.data, a.labels.data, a.row_max.data,
                 a.dstats.data, a.dlogits.data, a.rows, a.cols, p.real, p.first,
                 a.classes);
}
void run(Context &cx, const kernels::CrossEntropyOfStatsArgs &a) {
  crossEntropyOfStats(cx.stream, a.stats.data, a.row_max.data, a.weights.data,
                      a.out.data, a.rows);
}
void run(Context &cx, const kernels::CrossEntropyOfStatsGradArgs &a) {
  crossEntropyOfStatsGrad(cx.stream, a.stats.data, a.weights.data, a.dloss.data,
                          a.dstats.data, a.rows);
}
void run(Context &cx, const kernels::ClassArgmaxArgs &a) {
  ClassPart p = classPartOf(cx, a);
  classArgmax(cx.stream, a.logits.data, a.row_max.data, a.out.data, a.rows,
              a.cols, p.real, p.first);
}
void run(Context &cx, const kernels::IndexCorrectArgs &a) {
  indexCorrect(cx.stream, a.negated_index.data, a.labels.data, a.weights.data,
               a.out.data, a.rows, a.classes);
}

} // namespace ferry::cuda
