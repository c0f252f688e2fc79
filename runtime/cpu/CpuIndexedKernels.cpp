// The CPU backend's kernels that follow indices from the data: embedding
// lookups and their gradients, masked-position gathers, and the losses over
// labels; and the family's typed bodies (dialects/rt/kernels/Indexed.td),
// which check the indices they follow before the kernels run.
#include "runtime/Error.h"
#include "runtime/cpu/CpuKernelContext.h"
#include "runtime/cpu/CpuKernels.h"

#include "runtime/cpu/CpuKernelCommon.h"

#include <fmt/format.h>

namespace ferry::cpu {

void embedding(const float *table, const int32_t *ids, float *out, int64_t rows,
               int64_t width, int64_t firstId, int64_t tableRows) {
#pragma omp parallel for schedule(static) if (worth(rows * width))
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = static_cast<int64_t>(ids[r]) - firstId;
    if (tableRows >= 0 && (row < 0 || row >= tableRows))
      std::memset(out + r * width, 0, sizeof(float) * width);
    else
      std::memcpy(out + r * width, table + row * width, sizeof(float) * width);
  }
}

void embeddingGrad(const int32_t *ids, const float *dy, float *dtable,
                   int64_t rows, int64_t width, int64_t vocab, bool accumulate,
                   int64_t firstId) {
  scatterAddRows(
      dtable, vocab, dy, rows, width,
      [=](int64_t r) {
        const int64_t row = static_cast<int64_t>(ids[r]) - firstId;
        return row >= 0 && row < vocab ? row : int64_t{-1};
      },
      accumulate);
}

void gatherPositions(const float *x, const int32_t *positions, float *out,
                     int64_t batch, int64_t seq, int64_t predictions,
                     int64_t width) {
  const int64_t rows = batch * predictions;
#pragma omp parallel for schedule(static) if (worth(rows * width))
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t source = (r / predictions) * seq + positions[r];
    std::memcpy(out + r * width, x + source * width, sizeof(float) * width);
  }
}

void gatherPositionsGrad(const int32_t *positions, const float *dy, float *dx,
                         int64_t batch, int64_t seq, int64_t predictions,
                         int64_t width) {
  scatterAddRows(
      dx, batch * seq, dy, batch * predictions, width, [=](int64_t r) {
        return (r / predictions) * seq + static_cast<int64_t>(positions[r]);
      });
}

void softmaxCrossEntropy(const float *logits, const int32_t *labels,
                         const float *weights, float *out, int64_t rows,
                         int64_t cols, int64_t classes) {
  if (rows <= 0) {
    out[0] = 0.0f;
    return;
  }
  double *losses = scratch(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) if (worth(rows * classes))
  for (int64_t r = 0; r < rows; ++r) {
    const float w = weights[r];
    if (w == 0.0f) {
      losses[r] = 0.0;
      continue;
    }
    const float *row = logits + r * cols;
    const float m = rowMax(row, classes);
    const double logSum = std::log(sumExp(row, classes, m, nullptr));
    losses[r] = static_cast<double>(w) * (static_cast<double>(m) + logSum -
                                          static_cast<double>(row[labels[r]]));
  }
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r)
    total += losses[r];
  out[0] = static_cast<float>(total);
}

void softmaxCrossEntropyGrad(const float *logits, const int32_t *labels,
                             const float *weights, const float *dloss,
                             float *dlogits, int64_t rows, int64_t cols,
                             int64_t classes) {
  const float upstream = dloss[0];
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    float *d = dlogits + r * cols;
    const float w = weights[r];
    if (w == 0.0f) {
      std::memset(d, 0, sizeof(float) * cols);
      continue;
    }
    const float *row = logits + r * cols;
    const float m = rowMax(row, classes);
    const double sum = sumExp(row, classes, m, d);
    const float factor = upstream * w;
    const float scaleBySum = static_cast<float>(factor / sum);
#pragma omp simd
    for (int64_t c = 0; c < classes; ++c)
      d[c] *= scaleBySum;
    d[labels[r]] -= factor;
    std::fill(d + classes, d + cols, 0.0f);
  }
}

void argmaxCorrect(const float *logits, const int32_t *labels,
                   const float *weights, float *out, int64_t rows, int64_t cols,
                   int64_t classes) {
  if (rows <= 0) {
    out[0] = 0.0f;
    return;
  }
  double *hits = scratch(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) if (worth(rows * classes))
  for (int64_t r = 0; r < rows; ++r) {
    const float w = weights[r];
    hits[r] = 0.0;
    if (w == 0.0f || classes <= 0)
      continue;
    const float *row = logits + r * cols;
    const float m = rowMax(row, classes);
    // The first index holding the (non-NaN) maximum or a NaN.
    int64_t best = 0;
    for (int64_t c = 0; c < classes; ++c)
      if (row[c] == m || row[c] != row[c]) {
        best = c;
        break;
      }
    if (best == labels[r])
      hits[r] = static_cast<double>(w);
  }
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r)
    total += hits[r];
  out[0] = static_cast<float>(total);
}

// The family's typed bodies. Indices from the data are checked first: a
// bad one is an error naming it, never a read outside a buffer.
void checkIndices(const char *what, const int32_t *values, int64_t count,
                  int64_t limit) {
  for (int64_t i = 0; i < count; ++i)
    if (values[i] < 0 || values[i] >= limit)
      throw RuntimeError(fmt::format(
          "{} {} at slot {} is outside [0, {}); the input data does not match "
          "the model (sequence length, vocabulary or classes)",
          what, values[i], i, limit));
}

void run(Context &cx, const kernels::EmbeddingArgs &a) {
  // A vocabulary-parallel table is this rank's rows of the whole one, which
  // spans every rank's.
  const int64_t whole =
      a.tensor_row_stride != 0 ? a.tensor_row_stride * tensorSize(cx) : a.vocab;
  for (int64_t r = 0; r < a.rows; ++r)
    if (a.ids.data[r] < 0 || a.ids.data[r] >= whole)
      throw RuntimeError(fmt::format(
          "embedding id {} at row {} is outside the table's {} rows; the "
          "input data does not match the model's vocabulary",
          a.ids.data[r], r, whole));
  if (a.tensor_row_stride == 0)
    embedding(a.table.data, a.ids.data, a.out.data, a.rows, a.width);
  else
    embedding(a.table.data, a.ids.data, a.out.data, a.rows, a.width,
              a.tensor_row_stride * tensorRank(cx), a.vocab);
}
void run(Context &cx, const kernels::EmbeddingGradArgs &a) {
  embeddingGrad(a.ids.data, a.dy.data, a.dtable.data, a.rows, a.width, a.vocab,
                a.accumulate != 0, a.tensor_row_stride * tensorRank(cx));
}
void run(Context &, const kernels::GatherPositionsArgs &a) {
  checkIndices("masked_lm_positions", a.positions.data, a.batch * a.predictions,
               a.seq);
  gatherPositions(a.x.data, a.positions.data, a.out.data, a.batch, a.seq,
                  a.predictions, a.width);
}
void run(Context &, const kernels::GatherPositionsGradArgs &a) {
  checkIndices("masked_lm_positions", a.positions.data, a.batch * a.predictions,
               a.seq);
  gatherPositionsGrad(a.positions.data, a.dy.data, a.dx.data, a.batch, a.seq,
                      a.predictions, a.width);
}
void run(Context &, const kernels::SoftmaxCrossEntropyArgs &a) {
  checkIndices("label", a.labels.data, a.rows, a.classes);
  softmaxCrossEntropy(a.logits.data, a.labels.data, a.weights.data, a.out.data,
                      a.rows, a.cols, a.classes);
}
void run(Context &, const kernels::SoftmaxCrossEntropyGradArgs &a) {
  checkIndices("label", a.labels.data, a.rows, a.classes);
  softmaxCrossEntropyGrad(a.logits.data, a.labels.data, a.weights.data,
                          a.dloss.data, a.dlogits.data, a.rows, a.cols,
                          a.classes);
}
void run(Context &, const kernels::ArgmaxCorrectArgs &a) {
  checkIndices("label", a.labels.data, a.rows, a.classes);
  argmaxCorrect(a.logits.data, a.labels.data, a.weights.data, a.out.data,
                a.rows, a.cols, a.classes);
}

} // namespace ferry::cpu
