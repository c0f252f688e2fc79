// The Indexed family on CUDA (dialects/rt/kernels/Indexed.td), as
// run(Context &, const XArgs &): host code launching IndexedKernels.cu's grids.
// Indices from the data are not checked here: the kernels skip a bad one and
// record it (takeIndexErrors), and the backend reports it when the program
// ends.
#include "runtime/backend/Collectives.h"
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/CudaKernels.h"

namespace ferry::cuda {

// A vocabulary-parallel table (tensor_row_stride: its rows) is this rank's
// rows of the whole one, which spans every rank's.
void run(Context &cx, const kernels::EmbeddingArgs &a) {
  const int64_t stride = a.tensor_row_stride;
  embedding(cx.stream, a.table.data, a.ids.data, a.out.data, a.rows, a.width,
            a.vocab, stride * cx.collectives->tensorRank(),
            stride != 0 ? stride * cx.collectives->tensorSize() : a.vocab);
}

void run(Context &cx, const kernels::EmbeddingGradArgs &a) {
  const int64_t stride = a.tensor_row_stride;
  embeddingGrad(cx.stream, a.ids.data, a.dy.data, a.dtable.data, a.rows,
                a.width, a.vocab, a.accumulate != 0,
                needWorkspace(a.workspace, "embedding_grad"),
                stride * cx.collectives->tensorRank(),
                stride != 0 ? stride * cx.collectives->tensorSize() : a.vocab);
}

void run(Context &cx, const kernels::GatherPositionsArgs &a) {
  gatherPositions(cx.stream, a.x.data, a.positions.data, a.out.data, a.batch,
                  a.seq, a.predictions, a.width,
                  bf16Bits({a.x.bf16, a.positions.bf16, a.out.bf16}));
}

void run(Context &cx, const kernels::GatherPositionsGradArgs &a) {
  gatherPositionsGrad(cx.stream, a.positions.data, a.dy.data, a.dx.data,
                      a.batch, a.seq, a.predictions, a.width);
}

void run(Context &cx, const kernels::SoftmaxCrossEntropyArgs &a) {
  softmaxCrossEntropy(cx.stream, a.logits.data, a.labels.data, a.weights.data,
                      a.out.data, a.rows, a.cols, a.classes,
                      reinterpret_cast<double *>(
                          needWorkspace(a.workspace, "softmax_cross_entropy")));
}

void run(Context &cx, const kernels::SoftmaxCrossEntropyGradArgs &a) {
  softmaxCrossEntropyGrad(cx.stream, a.logits.data, a.labels.data,
                          a.weights.data, a.dloss.data, a.dlogits.data, a.rows,
                          a.cols, a.classes);
}

void run(Context &cx, const kernels::ArgmaxCorrectArgs &a) {
  argmaxCorrect(
      cx.stream, a.logits.data, a.labels.data, a.weights.data, a.out.data,
      a.rows, a.cols, a.classes,
      reinterpret_cast<double *>(needWorkspace(a.workspace, "argmax_correct")));
}

} // namespace ferry::cuda
