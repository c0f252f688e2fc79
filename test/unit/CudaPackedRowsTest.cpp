// GPU tests (ctest label `gpu`; simulated under `cuda-sim`) of the CUDA
// kernels' packed rows (model.max_sequences_per_pack): the softmax with
// sequence ids and the dropout keyed by each sequence's unpacked sample
// (runtime/kernels/DropoutKeys.h), against the CPU backend's kernels with the
// same ids and keys. Skipped, with the CUDA runtime's reason, without a
// device.
#include "AttentionReference.h"
#include "CudaKernelsTestUtil.h"

namespace {
class CudaPackedRows : public CudaKernels {};
} // namespace

// Packed rows (sequence ids): softmax and the fused softmax-dropout against
// the CPU's softmax with the same ids (CpuKernels tests it against a
// reference), rows of 128 (the quad path) and of 50; dropout masks bit for
// bit.
TEST_F(CudaPackedRows, SoftmaxWithSequencesEqualsTheCpu) {
  for (int64_t cols : {128, 50}) {
    int64_t batch = 3, heads = 2, rows = heads * cols, n = batch * rows * cols;
    std::vector<int32_t> ids = test::packedSequenceIds(batch, cols, 7);
    auto x = random(n);
    std::vector<float> mask(batch * cols, 0.0f);
    for (int64_t i = 0; i < batch * cols; ++i)
      mask[i] = ids[i] == 0 ? -10000.0f : 0.0f;
    std::vector<float> probs(n), dropped(n);
    cpu::softmax(x.data(), mask.data(), probs.data(), batch, rows, cols,
                 ids.data());
    cpu::dropout(probs.data(), dropped.data(), n, rows * cols, 42, 0x99u, 5,
                 8, 0.1f);
    int32_t *dIds = device(ids);
    float *out = device(std::vector<float>(n));
    cuda::softmax(stream, device(x), device(mask), out, batch, rows, cols, 0,
                  dIds);
    expectClose(host(out, n), probs, 1e-5, "softmax (sequences)");
    float *dProbs = device(std::vector<float>(n));
    float *dOut = device(std::vector<float>(n));
    cuda::softmaxDropout(stream, device(x), device(mask), dProbs, dOut, batch,
                         rows, cols, rows * cols, 42, 0x99u, 5, 8, 0.1f, 0,
                         dIds);
    expectClose(host(dProbs, n), probs, 1e-5, "softmax_dropout (sequences)");
    auto got = host(dOut, n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i] == 0.0f, dropped[i] == 0.0f) << "mask differs at " << i;
    }
    expectClose(got, dropped, 1e-5, "softmax_dropout (dropped, sequences)");
  }
}

// Packed rows' dropout keys (DropoutKeys.h) on the device: dropout over a
// token's elements and over attention probabilities, the fused
// softmax-dropout and its gradient, and the residual layer norm's dropout
// drop what the CPU drops with the same keys, bit for bit (rows of 64
// columns: the device's quad paths fall back to a draw per element).
TEST_F(CudaPackedRows, DropoutKeysEqualTheCpu) {
  const int64_t batch = 2, seq = 64, heads = 2, width = 64;
  std::vector<int32_t> ids = test::packedSequenceIds(batch, seq, 6);
  std::vector<int32_t> keys(static_cast<size_t>(2 * batch * seq), 0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0, start = 0; t < seq; ++t) {
      int32_t id = ids[b * seq + t];
      if (t > 0 && id != ids[b * seq + t - 1])
        start = t;
      keys[2 * (b * seq + t)] = id ? static_cast<int32_t>(50 + 4 * b + id) : 0;
      keys[2 * (b * seq + t) + 1] = id ? static_cast<int32_t>(t - start) : 0;
    }
  int32_t *dKeys = device(keys);
  PackedDropoutKeys tokens{keys.data(), seq, PackedDropoutKeys::Tokens, width};
  PackedDropoutKeys probs{keys.data(), seq, PackedDropoutKeys::Attention, 1};
  PackedDropoutKeys tokensOnDevice = tokens, probsOnDevice = probs;
  tokensOnDevice.keys = probsOnDevice.keys = dKeys;
  auto sameMask = [](const std::vector<float> &got,
                     const std::vector<float> &want, const char *what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i] == 0.0f, want[i] == 0.0f) << what << " at " << i;
    expectClose(got, want, 1e-5, what);
  };

  int64_t n = batch * seq * width; // hidden states [batch, seq, width]
  auto x = random(n);
  std::vector<float> want(n);
  cpu::dropout(x.data(), want.data(), n, seq * width, 9, 0x51u, 2, 0, 0.2f,
               tokens);
  float *out = device(std::vector<float>(n));
  cuda::dropout(stream, device(x), out, n, seq * width, 9, 0x51u, 2, 0, 0.2f,
                0, tokensOnDevice);
  sameMask(host(out, n), want, "dropout (tokens)");

  // residual_layer_norm's dropout: the sum it keeps is dropout(x) + r.
  auto r = random(n), scale = random(width), bias = random(width);
  std::vector<float> sum(n);
  for (int64_t i = 0; i < n; ++i)
    sum[i] = want[i] + r[i];
  float *dSum = device(std::vector<float>(n)),
        *dOut = device(std::vector<float>(n));
  cuda::residualLayerNorm(stream, device(x), device(r), device(scale),
                          device(bias), dSum, dOut, batch * seq, width, 1e-12f,
                          seq * width, 9, 0x51u, 2, 0, 0.2f, 0, tokensOnDevice);
  expectClose(host(dSum, n), sum, 1e-5, "residual_layer_norm (sum)");

  int64_t m = batch * heads * seq * seq; // probabilities
  auto scores = random(m), dy = random(m);
  std::vector<float> mask(batch * seq, 0.0f);
  for (int64_t i = 0; i < batch * seq; ++i)
    mask[i] = ids[i] == 0 ? -10000.0f : 0.0f;
  std::vector<float> p(m), dropped(m), dyDropped(m), dx(m);
  cpu::softmax(scores.data(), mask.data(), p.data(), batch, heads * seq, seq,
               ids.data());
  cpu::dropout(p.data(), dropped.data(), m, heads * seq * seq, 9, 0x52u, 2, 0,
               0.2f, probs);
  float *gProbs = device(std::vector<float>(m)),
        *gOut = device(std::vector<float>(m));
  cuda::softmaxDropout(stream, device(scores), device(mask), gProbs, gOut,
                       batch, heads * seq, seq, heads * seq * seq, 9, 0x52u, 2,
                       0, 0.2f, 0, device(ids), probsOnDevice);
  sameMask(host(gOut, m), dropped, "softmax_dropout");
  cpu::dropout(dy.data(), dyDropped.data(), m, heads * seq * seq, 9, 0x52u, 2,
               0, 0.2f, probs);
  cpu::softmaxGrad(p.data(), dyDropped.data(), dx.data(), batch * heads * seq,
                   seq);
  float *gDx = device(std::vector<float>(m));
  cuda::dropoutSoftmaxGrad(stream, device(p), device(dy), gDx,
                           batch * heads * seq, seq, heads * seq * seq, 9,
                           0x52u, 2, 0, 0.2f, 0, probsOnDevice);
  expectClose(host(gDx, m), dx, 1e-5, "dropout_softmax_grad");
}

