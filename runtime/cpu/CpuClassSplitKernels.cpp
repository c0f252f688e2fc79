// The CPU backend's kernels of the softmax cross-entropy and argmax metric
// over classes split across the tensor-parallel group (the vocabulary-
// parallel MLM head), and the ClassSplit family's typed bodies
// (dialects/rt/kernels/ClassSplit.td). Each sums and rounds as the whole
// row's kernels in CpuIndexedKernels.cpp do (exponentials in pieces of
// kExpPiece columns, losses in double, rows in order), so a split run
// equals one process to float rounding of the partial sums.
#include "runtime/Error.h"
#include "runtime/cpu/CpuKernelContext.h"
#include "runtime/cpu/CpuKernels.h"

#include "runtime/cpu/CpuKernelCommon.h"

#include <cmath>
#include <limits>

namespace ferry::cpu {

void classMax(const float *logits, float *out, int64_t rows, int64_t cols,
              int64_t real) {
#pragma omp parallel for schedule(static) if (worth(rows * real))
  for (int64_t r = 0; r < rows; ++r)
    out[r] = rowMax(logits + r * cols, real); // -inf where real is 0
}

void classStats(const float *logits, const int32_t *labels, const float *rowMax,
                float *out, int64_t rows, int64_t cols, int64_t real,
                int64_t firstClass) {
#pragma omp parallel for schedule(static) if (worth(rows * real))
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = logits + r * cols;
    const int64_t label = static_cast<int64_t>(labels[r]) - firstClass;
    out[2 * r] = static_cast<float>(sumExp(row, real, rowMax[r], nullptr));
    out[2 * r + 1] = label >= 0 && label < real ? row[label] : 0.0f;
  }
}

void classStatsGrad(const float *logits, const int32_t *labels,
                    const float *rowMax, const float *dstats, float *dlogits,
                    int64_t rows, int64_t cols, int64_t real,
                    int64_t firstClass) {
#pragma omp parallel for schedule(static) if (worth(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    float *d = dlogits + r * cols;
    const float bySum = dstats[2 * r], byTarget = dstats[2 * r + 1];
    if (bySum == 0.0f && byTarget == 0.0f) { // a row of weight 0
      std::memset(d, 0, sizeof(float) * cols);
      continue;
    }
    sumExp(logits + r * cols, real, rowMax[r], d); // d = exp(logit - max)
#pragma omp simd
    for (int64_t c = 0; c < real; ++c)
      d[c] *= bySum;
    const int64_t label = static_cast<int64_t>(labels[r]) - firstClass;
    if (label >= 0 && label < real)
      d[label] += byTarget;
    std::fill(d + real, d + cols, 0.0f);
  }
}

void crossEntropyOfStats(const float *stats, const float *rowMax,
                         const float *weights, float *out, int64_t rows) {
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float w = weights[r];
    if (w == 0.0f)
      continue;
    total +=
        static_cast<double>(w) * (static_cast<double>(rowMax[r]) +
                                  std::log(static_cast<double>(stats[2 * r])) -
                                  static_cast<double>(stats[2 * r + 1]));
  }
  out[0] = static_cast<float>(total);
}

void crossEntropyOfStatsGrad(const float *stats, const float *weights,
                             const float *dloss, float *dstats, int64_t rows) {
  const float upstream = dloss[0];
  for (int64_t r = 0; r < rows; ++r) {
    const float factor = upstream * weights[r];
    if (factor == 0.0f) {
      dstats[2 * r] = dstats[2 * r + 1] = 0.0f;
      continue;
    }
    // As softmaxCrossEntropyGrad's factor / sum (the sum a float here).
    dstats[2 * r] = static_cast<float>(static_cast<double>(factor) /
                                       static_cast<double>(stats[2 * r]));
    dstats[2 * r + 1] = -factor;
  }
}

void classArgmax(const float *logits, const float *rowMax, float *out,
                 int64_t rows, int64_t cols, int64_t real, int64_t firstClass) {
#pragma omp parallel for schedule(static) if (worth(rows * real))
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = logits + r * cols;
    const float m = rowMax[r];
    out[r] = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < real; ++c)
      if (row[c] == m || row[c] != row[c]) { // argmaxCorrect's choice
        out[r] = -static_cast<float>(firstClass + c);
        break;
      }
  }
}

void indexCorrect(const float *negatedIndex, const int32_t *labels,
                  const float *weights, float *out, int64_t rows) {
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r)
    if (-negatedIndex[r] == static_cast<float>(labels[r]))
      total += static_cast<double>(weights[r]);
  out[0] = static_cast<float>(total);
}

namespace {

// The global class of this rank's first column, and how many of its
// columns are real classes of the whole row.
struct ClassPart {
  int64_t first, real;
};
template <class Args> ClassPart classPartOf(const Context &cx, const Args &a) {
  const int64_t first = a.tensor_class_stride * tensorRank(cx);
  return {first, std::clamp<int64_t>(a.classes - first, 0, a.cols)};
}

} // namespace

void run(Context &cx, const kernels::ClassMaxArgs &a) {
  classMax(a.logits.data, a.out.data, a.rows, a.cols, classPartOf(cx, a).real);
}
void run(Context &cx, const kernels::ClassStatsArgs &a) {
  checkIndices("label", a.labels.data, a.rows, a.classes);
  ClassPart p = classPartOf(cx, a);
  classStats(a.logits.data, a.labels.data, a.row_max.data, a.out.data, a.rows,
             a.cols, p.real, p.first);
}
void run(Context &cx, const kernels::ClassStatsGradArgs &a) {
  checkIndices("label", a.labels.data, a.rows, a.classes);
  ClassPart p = classPartOf(cx, a);
  classStatsGrad(a.logits.data, a.labels.data, a.row_max.data, a.dstats.data,
                 a.dlogits.data, a.rows, a.cols, p.real, p.first);
}
void run(Context &, const kernels::CrossEntropyOfStatsArgs &a) {
  crossEntropyOfStats(a.stats.data, a.row_max.data, a.weights.data, a.out.data,
                      a.rows);
}
void run(Context &, const kernels::CrossEntropyOfStatsGradArgs &a) {
  crossEntropyOfStatsGrad(a.stats.data, a.weights.data, a.dloss.data,
                          a.dstats.data, a.rows);
}
void run(Context &cx, const kernels::ClassArgmaxArgs &a) {
  ClassPart p = classPartOf(cx, a);
  classArgmax(a.logits.data, a.row_max.data, a.out.data, a.rows, a.cols, p.real,
              p.first);
}
void run(Context &, const kernels::IndexCorrectArgs &a) {
  checkIndices("label", a.labels.data, a.rows, a.classes);
  indexCorrect(a.negated_index.data, a.labels.data, a.weights.data, a.out.data,
               a.rows);
}

} // namespace ferry::cpu
