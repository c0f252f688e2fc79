// GPU tests (ctest label `gpu`, and their simulated twins `cuda-sim`) of the
// CUDA kernels' tensor-parallel calls against the CPU backend's, on fresh
// random inputs: a dropout of a part of each sample (its keys offset by the
// part's first element, a multiple of 4 and not), the fused softmax-dropout
// and its gradient likewise, a vocabulary-parallel embedding and its
// gradient (another rank's ids look up zeros and add nothing), and the
// losses over split classes. Masks bit for bit; values within relative
// 1e-5 (the device's expf and the block sums' order differ by rounding).
#include "CudaKernelsTestUtil.h"

#include <cmath>

namespace {

// The fixture of CudaKernelsTestUtil.h under this file's own name.
class CudaTensorParallelKernels : public CudaKernels {};

// The keys of one rank's part: its elements `offset` onwards of each whole
// sample.
TEST_F(CudaTensorParallelKernels, DropoutOfAPartEqualsTheCpu) {
  const int64_t samples = 3, part = 64 * 12;
  for (uint64_t offset : {uint64_t{0}, uint64_t{768}, uint64_t{6}}) {
    const int64_t n = samples * part;
    auto x = random(n);
    std::vector<float> want(n);
    cpu::dropout(x.data(), want.data(), n, part, 42, 0x77u, 1, 4, 0.1f, {},
                 offset);
    float *out = device(std::vector<float>(n));
    cuda::dropout(stream, device(x), out, n, part, 42, 0x77u, 1, 4, 0.1f, 0, {},
                  offset);
    auto got = host(out, n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i] == 0.0f, want[i] == 0.0f)
          << "offset " << offset << ": mask differs at " << i;
    expectClose(got, want, 1e-7, "dropout of a part");

    // The attention probabilities of this rank's heads: softmax then
    // dropout, and the gradient.
    const int64_t batch = samples, rows = 12, cols = 64;
    auto scores = random(n), dy = random(n);
    std::vector<float> mask(batch * cols, 0.0f);
    std::vector<float> probs(n), dropped(n), dyDropped(n), dx(n);
    cpu::softmax(scores.data(), mask.data(), probs.data(), batch, rows, cols);
    cpu::dropout(probs.data(), dropped.data(), n, part, 42, 0x99u, 2, 8, 0.1f,
                 {}, offset);
    float *dProbs = device(std::vector<float>(n));
    float *dOut = device(std::vector<float>(n));
    cuda::softmaxDropout(stream, device(scores), device(mask), dProbs, dOut,
                         batch, rows, cols, part, 42, 0x99u, 2, 8, 0.1f, 0,
                         nullptr, {}, offset);
    auto fused = host(dOut, n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(fused[i] == 0.0f, dropped[i] == 0.0f)
          << "offset " << offset << ": fused mask differs at " << i;
    expectClose(fused, dropped, 1e-5, "softmax_dropout of a part");
    cpu::dropout(dy.data(), dyDropped.data(), n, part, 42, 0x99u, 2, 8, 0.1f,
                 {}, offset);
    cpu::softmaxGrad(probs.data(), dyDropped.data(), dx.data(), batch * rows,
                     cols);
    float *ddx = device(std::vector<float>(n));
    cuda::dropoutSoftmaxGrad(stream, device(probs), device(dy), ddx,
                             batch * rows, cols, part, 42, 0x99u, 2, 8, 0.1f, 0,
                             {}, offset);
    expectClose(host(ddx, n), dx, 1e-5, "dropout_softmax_grad of a part");
  }
}

// Rank 1 of 2 holds rows [50, 100) of a 100-row table: ids below 50 look up
// zeros and add nothing to its gradient; an id past the whole table is
// recorded.
TEST_F(CudaTensorParallelKernels, VocabularyParallelEmbeddingEqualsTheCpu) {
  const int64_t rows = 64, width = 24, part = 50, first = 50, whole = 100;
  auto table = random(part * width), dy = random(rows * width);
  std::vector<int32_t> ids(rows);
  for (int64_t r = 0; r < rows; ++r)
    ids[r] = static_cast<int32_t>(rng() % whole);
  ids[3] = ids[9] = 77; // repeated ids sum in row order
  std::vector<float> want(rows * width), dtable(part * width);
  cpu::embedding(table.data(), ids.data(), want.data(), rows, width, first,
                 part);
  cpu::embeddingGrad(ids.data(), dy.data(), dtable.data(), rows, width, part,
                     false, first);
  const int32_t *dIds = device(ids);
  float *out = device(std::vector<float>(rows * width, -1.0f));
  cuda::takeIndexErrors(); // clear
  cuda::embedding(stream, device(table), dIds, out, rows, width, part, first,
                  whole);
  expectClose(host(out, rows * width), want, 0.0, "embedding of a part");
  float *dDtable = device(std::vector<float>(part * width, 3.0f));
  cuda::embeddingGrad(stream, dIds, device(dy), dDtable, rows, width, part,
                      false, sortWorkspace(rows), first, whole);
  expectClose(host(dDtable, part * width), dtable, 0.0,
              "embedding_grad of a part");
  EXPECT_EQ(cuda::takeIndexErrors(), 0u) << "every id is in the whole table";
  ids[5] = static_cast<int32_t>(whole);
  cuda::embedding(stream, device(table), device(ids), out, rows, width, part,
                  first, whole);
  EXPECT_EQ(cuda::takeIndexErrors(), 1u) << "an id past the whole table";
}

// Rank 1 of classes split 40 a rank over 70 real classes: its 40 columns
// hold classes 40..79, of which 30 are real; labels anywhere in [0, 70),
// some rows of weight 0.
TEST_F(CudaTensorParallelKernels, LossesOverSplitClassesEqualTheCpu) {
  const int64_t rows = 33, cols = 40, first = 40, classes = 70;
  const int64_t real = classes - first;
  auto logits = random(rows * cols), dstatsIn = random(rows * 2);
  std::vector<int32_t> labels(rows);
  std::vector<float> weights(rows), rowMax(rows);
  for (int64_t r = 0; r < rows; ++r) {
    labels[r] = static_cast<int32_t>(rng() % classes);
    weights[r] = r % 5 == 0 ? 0.0f : 0.5f + static_cast<float>(r % 3);
    rowMax[r] = 1.5f + 0.01f * static_cast<float>(r); // another rank's max
  }
  // Rows whose maximum is this rank's, so the argmax finds it here.
  for (int64_t r = 0; r < rows; r += 3)
    rowMax[r] = *std::max_element(logits.begin() + r * cols,
                                  logits.begin() + r * cols + real);
  float *dLogits = device(logits), *dRowMax = device(rowMax);
  const int32_t *dLabels = device(labels);
  const float *dWeights = device(weights);

  std::vector<float> maxima(rows);
  cpu::classMax(logits.data(), maxima.data(), rows, cols, real);
  float *out = device(std::vector<float>(rows));
  cuda::classMax(stream, dLogits, out, rows, cols, real);
  expectClose(host(out, rows), maxima, 0.0, "class_max");

  std::vector<float> stats(rows * 2);
  cpu::classStats(logits.data(), labels.data(), rowMax.data(), stats.data(),
                  rows, cols, real, first);
  float *dStats = device(std::vector<float>(rows * 2));
  cuda::classStats(stream, dLogits, dLabels, dRowMax, dStats, rows, cols, real,
                   first, classes);
  expectClose(host(dStats, rows * 2), stats, 1e-5, "class_stats");

  std::vector<float> dlogits(rows * cols);
  cpu::classStatsGrad(logits.data(), labels.data(), rowMax.data(),
                      dstatsIn.data(), dlogits.data(), rows, cols, real, first);
  float *dDlogits = device(std::vector<float>(rows * cols, 7.0f));
  cuda::classStatsGrad(stream, dLogits, dLabels, dRowMax, device(dstatsIn),
                       dDlogits, rows, cols, real, first, classes);
  expectClose(host(dDlogits, rows * cols), dlogits, 1e-5, "class_stats_grad");

  // The whole rows' sums (positive), as the all-reduce would give them.
  for (int64_t r = 0; r < rows; ++r)
    stats[2 * r] += 1.0f;
  std::vector<float> loss(1), dloss = {0.25f}, dstats(rows * 2);
  cpu::crossEntropyOfStats(stats.data(), rowMax.data(), weights.data(),
                           loss.data(), rows);
  float *dLoss = device(std::vector<float>(1));
  const float *dStatsWhole = device(stats);
  cuda::crossEntropyOfStats(stream, dStatsWhole, dRowMax, dWeights, dLoss,
                            rows);
  expectClose(host(dLoss, 1), loss, 1e-6, "cross_entropy_of_stats");
  cpu::crossEntropyOfStatsGrad(stats.data(), weights.data(), dloss.data(),
                               dstats.data(), rows);
  float *dDstats = device(std::vector<float>(rows * 2));
  cuda::crossEntropyOfStatsGrad(stream, dStatsWhole, dWeights, device(dloss),
                                dDstats, rows);
  expectClose(host(dDstats, rows * 2), dstats, 0.0,
              "cross_entropy_of_stats_grad");

  std::vector<float> negated(rows), correct(1);
  cpu::classArgmax(logits.data(), rowMax.data(), negated.data(), rows, cols,
                   real, first);
  float *dNegated = device(std::vector<float>(rows));
  cuda::classArgmax(stream, dLogits, dRowMax, dNegated, rows, cols, real,
                    first);
  auto gotNegated = host(dNegated, rows);
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_EQ(gotNegated[r], negated[r]) << "class_argmax of row " << r;
  // Some rows' labels are the chosen classes.
  for (int64_t r = 0; r < rows; r += 3)
    labels[r] = static_cast<int32_t>(-negated[r]);
  cpu::indexCorrect(negated.data(), labels.data(), weights.data(),
                    correct.data(), rows);
  ASSERT_GT(correct[0], 0.0f);
  float *dCorrect = device(std::vector<float>(1));
  cuda::indexCorrect(stream, dNegated, device(labels), dWeights, dCorrect, rows,
                     classes);
  expectClose(host(dCorrect, 1), correct, 0.0, "index_correct");
}

} // namespace
