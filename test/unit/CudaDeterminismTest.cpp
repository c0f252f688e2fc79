// GPU tests (ctest label `gpu`, and `cuda-sim` under the simulator): the
// CUDA kernels that sum many values into one give the same bits every run.
// - the scatter-adds (embedding_grad, gather_positions_grad) are the CPU's
//   bits exactly, with many repeated ids and positions;
// - the stable sort behind embedding_grad is std::stable_sort's order;
// - the loss sums, the global norm (past a fold of its partials) and LAMB
//   give the same bits twice, and match the CPU within 1e-6.
// On a GPU two calls race differently; under the simulator the block and
// thread order is reshuffled on every launch, so an order-dependent sum
// changes between the two calls.
#include "CudaKernelsTestUtil.h"

#include <cstring>

namespace {

class CudaDeterminism : public CudaKernels {};

template <typename T>
bool sameBits(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

} // namespace

TEST_F(CudaDeterminism, SortRowsByKeyIsStable) {
  // One pass (keys up to 255, and a single key), two and three passes; row
  // counts that are not a multiple of the 256-row tile.
  for (auto [n, maxKey] : {std::pair<int64_t, int32_t>{1000, 200},
                          {777, 0},
                          {1500, 3000},
                          {600, 70000}}) {
    auto keys = randomInts(n, maxKey + 1);
    std::vector<int32_t> want(n);
    for (int64_t i = 0; i < n; ++i)
      want[i] = static_cast<int32_t>(i);
    std::stable_sort(want.begin(), want.end(),
                     [&](int32_t a, int32_t b) { return keys[a] < keys[b]; });
    int32_t *workspace =
        device(std::vector<int32_t>(cuda::sortRowsWorkspace(n)));
    const int32_t *sorted =
        cuda::sortRowsByKey(stream, device(keys), n, maxKey, workspace);
    EXPECT_EQ(host(sorted, n), want) << n << " rows, keys to " << maxKey;
  }
}

TEST_F(CudaDeterminism, EmbeddingGradIsTheCpuBitForBit) {
  // Few ids (long runs of one id) and many (a two-pass sort); overwrite and
  // accumulate; an out-of-range id is skipped and reported.
  cuda::takeIndexErrors(); // clear
  for (auto [rows, vocab] : {std::pair<int64_t, int64_t>{1000, 7},
                            {700, 3000}})
    for (bool accumulate : {false, true}) {
      int64_t width = 40;
      auto ids = randomInts(rows, static_cast<int32_t>(vocab));
      ids[17] = static_cast<int32_t>(vocab); // out of range
      auto dy = random(rows * width), start = random(vocab * width);
      std::vector<float> want = start;
      // The CPU backend refuses bad ids before its kernels: its reference
      // adds a zero row for id 0 instead (no change), while the GPU gets
      // the row's real values, which it must skip.
      std::vector<int32_t> cpuIds = ids;
      std::vector<float> cpuDy = dy;
      cpuIds[17] = 0;
      std::fill(cpuDy.begin() + 17 * width, cpuDy.begin() + 18 * width, 0.0f);
      cpu::embeddingGrad(cpuIds.data(), cpuDy.data(), want.data(), rows, width,
                         vocab, accumulate);
      const int32_t *dIds = device(ids);
      const float *dDy = device(dy);
      for (int run = 0; run < 2; ++run) {
        float *dtable = device(start);
        cuda::embeddingGrad(stream, dIds, dDy, dtable, rows, width, vocab,
                            accumulate, sortWorkspace(rows));
        EXPECT_TRUE(sameBits(host(dtable, want.size()), want))
            << rows << " rows, vocab " << vocab << ", accumulate "
            << accumulate << ", run " << run;
      }
      EXPECT_EQ(cuda::takeIndexErrors(), 1u) << "the id past the vocabulary";
    }
}

TEST_F(CudaDeterminism, GatherPositionsGradIsTheCpuBitForBit) {
  // 12 predictions over 8 positions: every sample repeats positions.
  int64_t batch = 5, seq = 8, predictions = 12, width = 33;
  auto pos = randomInts(batch * predictions, static_cast<int32_t>(seq));
  auto dy = random(batch * predictions * width);
  std::vector<float> want(batch * seq * width);
  cpu::gatherPositionsGrad(pos.data(), dy.data(), want.data(), batch, seq,
                           predictions, width);
  const int32_t *dPos = device(pos);
  const float *dDy = device(dy);
  for (int run = 0; run < 2; ++run) {
    float *dx = device(random(want.size()));
    cuda::gatherPositionsGrad(stream, dPos, dDy, dx, batch, seq, predictions,
                              width);
    EXPECT_TRUE(sameBits(host(dx, want.size()), want)) << "run " << run;
  }
}

TEST_F(CudaDeterminism, LossSumsRepeatBitForBit) {
  int64_t rows = 300, cols = 130, classes = 128;
  auto logits = random(rows * cols, -4, 4);
  auto labels = randomInts(rows, static_cast<int32_t>(classes));
  auto weights = random(rows, 0.0f, 1.0f);
  std::vector<float> loss(1), hits(1);
  cpu::softmaxCrossEntropy(logits.data(), labels.data(), weights.data(),
                           loss.data(), rows, cols, classes);
  cpu::argmaxCorrect(logits.data(), labels.data(), weights.data(),
                     hits.data(), rows, cols, classes);
  const float *dLogits = device(logits), *dWeights = device(weights);
  const int32_t *dLabels = device(labels);
  std::vector<float> first[2];
  for (int run = 0; run < 2; ++run) {
    float *out = device(std::vector<float>(2));
    cuda::softmaxCrossEntropy(stream, dLogits, dLabels, dWeights, out, rows,
                              cols, classes, doubles(rows));
    cuda::argmaxCorrect(stream, dLogits, dLabels, dWeights, out + 1, rows,
                        cols, classes, doubles(rows));
    std::vector<float> got = host(out, 2);
    expectClose({got[0]}, loss, 1e-6, "softmax_cross_entropy");
    expectClose({got[1]}, hits, 1e-6, "argmax_correct");
    first[run] = got;
  }
  EXPECT_TRUE(sameBits(first[0], first[1]));
}

TEST_F(CudaDeterminism, GlobalNormAndLambRepeatBitForBit) {
  // 70 tensors of 64 blocks each: more partials than one fold holds.
  int64_t count = 70, n = 64 * 256;
  std::vector<std::vector<float>> tensors;
  std::vector<const float *> hostTensors, devTensors;
  std::vector<int64_t> sizes(count, n);
  for (int64_t t = 0; t < count; ++t) {
    tensors.push_back(random(n));
    hostTensors.push_back(tensors.back().data());
    devTensors.push_back(device(tensors.back()));
  }
  std::vector<float> want(1);
  cpu::globalNorm(hostTensors.data(), sizes.data(), count, want.data());
  double *scratch = this->scratch();
  std::vector<float> norms[2];
  for (int run = 0; run < 2; ++run) {
    float *out = device(std::vector<float>(1));
    cuda::globalNorm(stream, devTensors.data(), sizes.data(), count, out,
                     scratch);
    norms[run] = host(out, 1);
    expectClose(norms[run], want, 1e-6, "global_norm");
  }
  EXPECT_TRUE(sameBits(norms[0], norms[1])) << "global_norm";

  int64_t size = 5000, segments = 3;
  auto w = random(size * segments), g = random(size * segments),
       m = random(size * segments, -0.1f, 0.1f),
       v = random(size * segments, 0.0f, 0.1f);
  cuda::AdamParams params{0.9f, 0.999f, 1e-6f, 0.01f, true, true, 3};
  std::vector<float> lr = {1e-3f}, norm = {2.5f};
  const float *dg = device(g), *dlr = device(lr), *dnorm = device(norm);
  std::vector<float> weights[2];
  for (int run = 0; run < 2; ++run) {
    float *dw = device(w), *dm = device(m), *dv = device(v);
    cuda::adamUpdate(stream, dw, dg, dm, dv, size, segments, dlr, dnorm, 1.0f,
                     params, scratch);
    weights[run] = host(dw, w.size());
  }
  EXPECT_TRUE(sameBits(weights[0], weights[1])) << "LAMB";
}
