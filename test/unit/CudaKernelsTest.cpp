// GPU tests (ctest label `gpu`): every CUDA kernel against the CPU backend's
// kernel on fresh random inputs (never zeros), ||out - ref|| / ||ref|| <=
// 1e-5 in fp32 (cuBLAS's summation order and the device's erf differ by
// rounding);
// dropout masks bit for bit; NaN never passes. Skipped, with the CUDA
// runtime's reason, without a device.
#include "CudaKernelsTestUtil.h"

#include "runtime/cuda/GemmInstr.h"

#include <cstdio>
#include <cstdlib>
#include <string>

TEST_F(CudaKernels, GemmEveryTransposeAndBatch) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      int64_t batch = 3, m = 37, n = 29, k = 41;
      auto a = random(batch * m * k), b = random(batch * k * n),
           c = random(batch * m * n);
      std::vector<float> want = c;
      cpu::gemm(batch, m, n, k, ta, tb, 0.7f, a.data(), m * k, b.data(), k * n,
                1.0f, want.data(), m * n);
      float *dc = device(c);
      cuda::gemm(cublas, stream, batch, m, n, k, ta, tb, 0.7f, device(a), m * k,
                 device(b), k * n, 1.0f, dc, m * n);
      expectClose(host(dc, c.size()), want, 1e-5, "gemm");
    }
}

TEST_F(CudaKernels, Bf16GemmEqualsTheCpuEmulation) {
  // Both round A and B to bf16 (ties to even) and accumulate in fp32.
  int64_t batch = 2, m = 64, n = 48, k = 96;
  auto a = random(batch * m * k), b = random(k * n), c = random(batch * m * n);
  std::vector<float> ra(a.size()), rb(b.size()), want = c;
  cpu::roundToBf16(a.data(), ra.data(), static_cast<int64_t>(a.size()));
  cpu::roundToBf16(b.data(), rb.data(), static_cast<int64_t>(b.size()));
  cpu::gemm(batch, m, n, k, false, true, 1.0f, ra.data(), m * k, rb.data(), 0,
            1.0f, want.data(), m * n);
  float *dc = device(c);
  float *work = device(std::vector<float>(a.size() + b.size()));
  cuda::gemmBf16(cublas, stream, batch, m, n, k, false, true, 1.0f, device(a),
                 m * k, device(b), 0, 1.0f, dc, m * n, work);
  expectClose(host(dc, c.size()), want, 1e-5, "gemm (bf16)");
}

TEST_F(CudaKernels, Fp16GemmEqualsTheCpuEmulation) {
  int64_t batch = 1, m = 64, n = 48, k = 96;
  auto a = random(m * k), b = random(k * n), c = random(m * n);
  std::vector<float> ra(a.size()), rb(b.size()), want = c;
  cpu::roundToFp16(a.data(), ra.data(), static_cast<int64_t>(a.size()));
  cpu::roundToFp16(b.data(), rb.data(), static_cast<int64_t>(b.size()));
  cpu::gemm(batch, m, n, k, true, false, 1.0f, ra.data(), m * k, rb.data(),
            k * n, 0.0f, want.data(), m * n);
  float *dc = device(c);
  float *work = device(std::vector<float>(a.size() + b.size()));
  cuda::gemmBf16(cublas, stream, batch, m, n, k, true, false, 1.0f, device(a),
                 m * k, device(b), k * n, 0.0f, dc, m * n, work,
                 /*fp16=*/true);
  expectClose(host(dc, c.size()), want, 1e-5, "gemm (fp16)");
}

// The GEMM instruction with the epilogues ferry-fuse-epilogues asks for,
// against the CPU backend's gemm followed by bias_add / reduce (what
// gemm_epilogue computes there). NVIDIA does not promise that cuBLASLt has
// an algorithm for every epilogue and type (fp32 BGRADB, bf16 BGRADB into
// an fp32 D): the result must be right through whichever path runs, and
// the test reports which one ran. The simulator's cuBLASLt covers them all,
// so there the epilogue path is required (and FERRY_CUDA_SIM_LT_NO_ALGO=1,
// a ctest variant, makes it the fallback).
static cuda::GemmPath runGemmCall(cuda::LtGemm &lt, const cuda::Cublas &cublas,
                                  double *scratch, const cuda::GemmCall &g,
                                  const char *what) {
  cuda::GemmInstr instr;
  instr.call = g;
  instr.a = const_cast<char *>(static_cast<const char *>(g.a));
  instr.b = const_cast<char *>(static_cast<const char *>(g.b));
  instr.c = reinterpret_cast<char *>(g.c);
  instr.bf16A = instr.bf16B = g.inputType == 1; // stored as bf16 already
  instr.workspace = static_cast<char *>(g.workspace);
  instr.workspaceBytes = static_cast<int64_t>(g.workspaceBytes);
  cuda::GemmPath path = cuda::runGemmInstr(instr, lt, cublas, scratch, nullptr);
  const char *name = path == cuda::GemmPath::Lt
                         ? "cuBLASLt with its epilogue"
                         : "cuBLAS, then ferry's epilogue kernel";
  std::printf("[ PATH     ] %s (%s): %s\n", what,
              g.inputType == 1 ? "bf16" : "fp32", name);
  ::testing::Test::RecordProperty(
      std::string(what) + (g.inputType == 1 ? " bf16" : " fp32"), name);
#ifdef FERRY_CUDA_SIM
  const char *noAlgo = std::getenv("FERRY_CUDA_SIM_LT_NO_ALGO");
  bool fallback = noAlgo && std::string(noAlgo) == "1";
  EXPECT_EQ(path, fallback ? cuda::GemmPath::Fallback : cuda::GemmPath::Lt)
      << what;
#endif
  return path;
}

TEST_F(CudaKernels, LtGemmEpilogues) {
  cuda::LtGemm lt;
  float *workspace = device(std::vector<float>(1 << 20)); // 4 MiB
  double *scratch = doubles(cuda::kScratchDoubles);
  for (int inputType : {0, 1}) {
    double tol = 1e-5;
    auto prepare = [&](std::vector<float> v) {
      if (inputType == 1)
        cpu::roundToBf16(v.data(), v.data(), static_cast<int64_t>(v.size()));
      return v;
    };
    auto half = [&](const std::vector<float> &v) -> const void * {
      if (inputType == 0)
        return device(v);
      void *p = device(std::vector<float>(v.size()));
      cuda::roundToHalf(stream, device(v), p, static_cast<int64_t>(v.size()),
                        false);
      return p;
    };
    { // A linear layer: [m, k] x [n, k]^T + bias[n], alpha 1.
      int64_t m = 256, n = 96, k = 64;
      auto a = random(m * k), b = random(n * k), bias = random(n);
      std::vector<float> want(m * n);
      cpu::gemm(1, m, n, k, false, true, 1.0f, prepare(a).data(), m * k,
                prepare(b).data(), n * k, 0.0f, want.data(), m * n);
      cpu::biasAdd(want.data(), bias.data(), want.data(), m, n);
      cuda::GemmCall g;
      g.m = m, g.n = n, g.k = k, g.transB = true;
      g.a = half(a), g.b = half(b), g.strideA = m * k, g.strideB = n * k;
      std::vector<float> c(m * n, 0.0f);
      g.c = device(c), g.strideC = m * n;
      g.inputType = inputType, g.epilogue = 1, g.vector = device(bias);
      g.workspace = workspace, g.workspaceBytes = 4 << 20;
      runGemmCall(lt, cublas, scratch, g, "bias epilogue");
      expectClose(host(g.c, c.size()), want, tol, "cuBLASLt bias epilogue");
    }
    { // A weight gradient: [k, m]^T x [k, n] accumulated into C, and the
      // bias gradient sum over k of A.
      int64_t m = 96, n = 64, k = 512;
      auto a = random(k * m), b = random(k * n), c = random(m * n);
      std::vector<float> want = c, wantBias(m);
      cpu::gemm(1, m, n, k, true, false, 1.0f, prepare(a).data(), m * k,
                prepare(b).data(), k * n, 1.0f, want.data(), m * n);
      // From the rounded A in bf16 (cuBLASLt reduces what it multiplies;
      // the backend therefore sums the unrounded A itself with 16-bit
      // inputs, as the CPU does).
      cpu::reduce(cpu::Reduce::Sum, prepare(a).data(), wantBias.data(), 1, k,
                  m);
      cuda::GemmCall g;
      g.m = m, g.n = n, g.k = k, g.transA = true, g.beta = 1.0f;
      g.a = half(a), g.b = half(b), g.strideA = m * k, g.strideB = k * n;
      g.c = device(c), g.strideC = m * n;
      g.inputType = inputType, g.epilogue = 2;
      g.vector = device(std::vector<float>(m));
      g.workspace = workspace, g.workspaceBytes = 4 << 20;
      runGemmCall(lt, cublas, scratch, g, "bias-gradient epilogue");
      expectClose(host(g.c, c.size()), want, tol, "cuBLASLt weight gradient");
      expectClose(host(g.vector, m), wantBias, tol,
                  "cuBLASLt bias-gradient epilogue");
    }
    { // Attention scores: batched, alpha, no epilogue.
      int64_t batch = 6, m = 128, n = 128, k = 64;
      auto a = random(batch * m * k), b = random(batch * n * k);
      std::vector<float> want(batch * m * n);
      cpu::gemm(batch, m, n, k, false, true, 0.125f, prepare(a).data(), m * k,
                prepare(b).data(), n * k, 0.0f, want.data(), m * n);
      cuda::GemmCall g;
      g.batch = batch, g.m = m, g.n = n, g.k = k, g.transB = true;
      g.alpha = 0.125f;
      g.a = half(a), g.b = half(b), g.strideA = m * k, g.strideB = n * k;
      g.c = device(std::vector<float>(want.size())), g.strideC = m * n;
      g.inputType = inputType;
      g.workspace = workspace, g.workspaceBytes = 4 << 20;
      runGemmCall(lt, cublas, scratch, g, "batched, no epilogue");
      expectClose(host(g.c, want.size()), want, tol, "cuBLASLt batched gemm");
    }
  }
}

TEST_F(CudaKernels, ElementWise) {
  int64_t n = 10007;
  auto x = random(n), y = random(n, 0.5f, 2.0f);
  for (int op = 0; op < 4; ++op) {
    std::vector<float> want(n);
    cpu::binary(static_cast<cpu::Binary>(op), x.data(), y.data(), want.data(),
                n);
    float *out = device(std::vector<float>(n));
    cuda::binary(stream, op, device(x), device(y), out, n);
    expectClose(host(out, n), want, 1e-6, "binary");
  }
  std::vector<float> want(n);
  cpu::gelu(x.data(), want.data(), n);
  float *out = device(std::vector<float>(n));
  cuda::gelu(stream, device(x), out, n);
  expectClose(host(out, n), want, 1e-5, "gelu");
  cpu::geluGrad(x.data(), y.data(), want.data(), n);
  cuda::geluGrad(stream, device(x), device(y), out, n);
  expectClose(host(out, n), want, 1e-5, "gelu_grad");
  cpu::tanhForward(x.data(), want.data(), n);
  cuda::tanhForward(stream, device(x), out, n);
  expectClose(host(out, n), want, 1e-5, "tanh");
  cpu::biasAdd(x.data(), y.data(), want.data(), n / 7, 7);
  cuda::biasAdd(stream, device(x), device(y), out, n / 7, 7);
  auto got = host(out, n / 7 * 7);
  expectClose(got, std::vector<float>(want.begin(), want.begin() + n / 7 * 7),
              1e-6, "bias_add");
}

// The 128-bit paths: sizes that are not multiples of four (the tail),
// pointers one float past 16-byte alignment (element by element), and in
// place. Every map and dropout (with per-sample counts that are and are
// not multiples of four) against the CPU; dropout bit for bit.
TEST_F(CudaKernels, VectorisedKernelsAtEverySizeAndAlignment) {
  for (int64_t n : {1, 3, 4, 5, 8, 1001, 4099})
    for (int64_t offset : {0, 1}) {
      auto x = random(n + 1), y = random(n + 1, 0.5f, 2.0f);
      std::vector<float> want(n),
          xs(x.begin() + offset, x.begin() + offset + n),
          ys(y.begin() + offset, y.begin() + offset + n);
      std::string where =
          "n " + std::to_string(n) + ", offset " + std::to_string(offset);
      float *dx = device(x) + offset, *dy = device(y) + offset;
      float *out = device(std::vector<float>(n + 1)) + offset;
      for (int op = 0; op < 4; ++op) {
        cpu::binary(static_cast<cpu::Binary>(op), xs.data(), ys.data(),
                    want.data(), n);
        cuda::binary(stream, op, dx, dy, out, n);
        expectClose(host(out, n), want, 1e-6, ("binary " + where).c_str());
      }
      cpu::geluGrad(xs.data(), ys.data(), want.data(), n);
      cuda::geluGrad(stream, dx, dy, out, n);
      expectClose(host(out, n), want, 1e-5, ("gelu_grad " + where).c_str());
      cpu::scale(xs.data(), want.data(), n, 0.37f);
      cuda::scale(stream, dx, out, n, 0.37f);
      expectClose(host(out, n), want, 1e-6, ("scale " + where).c_str());
      // In place: dst += src.
      std::vector<float> acc = xs;
      cpu::accumulate(acc.data(), ys.data(), n);
      float *dacc = device(x) + offset;
      cuda::accumulate(stream, dacc, dy, n);
      expectClose(host(dacc, n), acc, 1e-6, ("accumulate " + where).c_str());
      for (int64_t perSample : {n, int64_t(4), int64_t(3)}) {
        cpu::dropout(xs.data(), want.data(), n, perSample, 42, 0x1234u, 3, 16,
                     0.3f);
        cuda::dropout(stream, dx, out, n, perSample, 42, 0x1234u, 3, 16, 0.3f);
        EXPECT_EQ(host(out, n), want)
            << "dropout " << where << ", per sample " << perSample;
      }
    }
}

// fill_i32: every element of the count, none past it, bit for bit the
// CPU's.
TEST_F(CudaKernels, FillI32EqualsTheCpuFill) {
  int64_t n = 10007;
  std::vector<int32_t> want(n + 64, 77);
  cpu::fillInt(want.data(), n, -123456789);
  int32_t *out = device(std::vector<int32_t>(n + 64, 77));
  cuda::fillInt(stream, out, n, -123456789);
  EXPECT_EQ(host(out, n + 64), want);
}

TEST_F(CudaKernels, LayerNormForwardAndBackward) {
  int64_t rows = 33, cols = 768;
  auto x = random(rows * cols), scale = random(cols), bias = random(cols),
       dy = random(rows * cols);
  std::vector<float> want(rows * cols), dx(rows * cols), ds(cols), db(cols);
  cpu::layerNorm(x.data(), scale.data(), bias.data(), want.data(), rows, cols,
                 1e-12f);
  float *out = device(std::vector<float>(rows * cols));
  cuda::layerNorm(stream, device(x), device(scale), device(bias), out, rows,
                  cols, 1e-12f);
  expectClose(host(out, rows * cols), want, 1e-5, "layer_norm");
  cpu::layerNormGrad(x.data(), scale.data(), dy.data(), dx.data(), ds.data(),
                     db.data(), rows, cols, 1e-12f);
  float *ddx = device(std::vector<float>(rows * cols));
  float *dds = device(random(cols)), *ddb = device(random(cols));
  cuda::layerNormGrad(stream, device(x), device(scale), device(dy), ddx, dds,
                      ddb, rows, cols, 1e-12f,
                      device(std::vector<float>(2 * rows)));
  expectClose(host(ddx, rows * cols), dx, 1e-5, "layer_norm_grad dx");
  expectClose(host(dds, cols), ds, 1e-5, "layer_norm_grad dscale");
  expectClose(host(ddb, cols), db, 1e-5, "layer_norm_grad dbias");
}

// Column reductions over many rows with few columns (bias and LayerNorm
// parameter gradients) split the rows across blocks when given the
// backend's scratch: the CPU's values, every kind, and the same bits when
// run again (the chunks are added in a fixed order).
TEST_F(CudaKernels, ColumnReductionsSplitRowsInAFixedOrder) {
  double *scratch = this->scratch();
  int64_t size = 4099, inner = 300;
  for (int kind = 0; kind < 4; ++kind) {
    auto x = random(size * inner);
    std::vector<float> want(inner);
    cpu::reduce(static_cast<cpu::Reduce>(kind), x.data(), want.data(), 1, size,
                inner);
    const float *dx = device(x);
    std::vector<float> runs[2];
    for (int run = 0; run < 2; ++run) {
      float *out = device(std::vector<float>(inner));
      cuda::reduce(stream, kind, dx, out, 1, size, inner, scratch);
      runs[run] = host(out, inner);
    }
    expectClose(runs[0], want, 1e-5, "reduce (split rows)");
    EXPECT_EQ(runs[0], runs[1]) << "kind " << kind;
  }
  int64_t rows = 2053, cols = 96;
  auto x = random(rows * cols), scale = random(cols), dy = random(rows * cols);
  std::vector<float> dxw(rows * cols), ds(cols), db(cols);
  cpu::layerNormGrad(x.data(), scale.data(), dy.data(), dxw.data(), ds.data(),
                     db.data(), rows, cols, 1e-12f);
  const float *dX = device(x), *dS = device(scale), *dDy = device(dy);
  std::vector<float> runs[2];
  for (int run = 0; run < 2; ++run) {
    float *ddx = device(std::vector<float>(rows * cols));
    float *dds = device(std::vector<float>(cols)),
          *ddb = device(std::vector<float>(cols));
    cuda::layerNormGrad(stream, dX, dS, dDy, ddx, dds, ddb, rows, cols, 1e-12f,
                        device(std::vector<float>(2 * rows)), scratch);
    expectClose(host(dds, cols), ds, 1e-5, "layer_norm_grad dscale (split)");
    expectClose(host(ddb, cols), db, 1e-5, "layer_norm_grad dbias (split)");
    runs[run] = host(dds, cols);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST_F(CudaKernels, MaskedSoftmaxAndGradient) {
  int64_t batch = 4, rows = 2 * 128, cols = 128;
  auto x = random(batch * rows * cols), dy = random(batch * rows * cols);
  std::vector<float> mask(batch * cols, 0.0f);
  for (int64_t i = 0; i < batch * cols; i += 5)
    mask[i] = -10000.0f;
  std::vector<float> want(x.size()), dx(x.size());
  cpu::softmax(x.data(), mask.data(), want.data(), batch, rows, cols);
  float *out = device(std::vector<float>(x.size()));
  cuda::softmax(stream, device(x), device(mask), out, batch, rows, cols);
  expectClose(host(out, x.size()), want, 1e-5, "softmax");
  cpu::softmaxGrad(want.data(), dy.data(), dx.data(), batch * rows, cols);
  float *ddx = device(std::vector<float>(x.size()));
  cuda::softmaxGrad(stream, device(want), device(dy), ddx, batch * rows, cols);
  expectClose(host(ddx, x.size()), dx, 1e-5, "softmax_grad");
}

// The fused attention kernels against the CPU's softmax + dropout and
// dropout + softmax_grad (what the CPU backend runs for them): masks bit
// for bit, values to 1e-5; rows of 128 (four columns a thread, one Philox
// block for four) and of 50 (one each).
TEST_F(CudaKernels, FusedSoftmaxDropoutAndGradient) {
  for (int64_t cols : {128, 50}) {
    int64_t batch = 4, rows = 2 * 128, n = batch * rows * cols;
    int64_t perSample = rows * cols;
    auto x = random(n), dy = random(n);
    std::vector<float> mask(batch * cols, 0.0f);
    for (int64_t i = 0; i < batch * cols; i += 7)
      mask[i] = -10000.0f;
    std::vector<float> probs(n), dropped(n), dyDropped(n), dx(n);
    cpu::softmax(x.data(), mask.data(), probs.data(), batch, rows, cols);
    cpu::dropout(probs.data(), dropped.data(), n, perSample, 42, 0x99u, 5, 8,
                 0.1f);
    float *dProbs = device(std::vector<float>(n));
    float *dOut = device(std::vector<float>(n));
    cuda::softmaxDropout(stream, device(x), device(mask), dProbs, dOut, batch,
                         rows, cols, perSample, 42, 0x99u, 5, 8, 0.1f);
    expectClose(host(dProbs, n), probs, 1e-5, "softmax_dropout (probs)");
    auto got = host(dOut, n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i] == 0.0f, dropped[i] == 0.0f) << "mask differs at " << i;
    expectClose(got, dropped, 1e-5, "softmax_dropout (dropped)");

    cpu::dropout(dy.data(), dyDropped.data(), n, perSample, 42, 0x99u, 5, 8,
                 0.1f);
    cpu::softmaxGrad(probs.data(), dyDropped.data(), dx.data(), batch * rows,
                     cols);
    float *ddx = device(std::vector<float>(n));
    cuda::dropoutSoftmaxGrad(stream, device(probs), device(dy), ddx,
                             batch * rows, cols, perSample, 42, 0x99u, 5, 8,
                             0.1f);
    expectClose(host(ddx, n), dx, 1e-5, "dropout_softmax_grad");
  }
}

// Out-of-range indices are skipped on the device and reported, never read
// or written outside the table (the CPU backend rejects them up front).
TEST_F(CudaKernels, OutOfRangeIndicesAreReportedNotFollowed) {
  cuda::takeIndexErrors(); // clear
  int64_t width = 8, vocab = 10;
  auto table = random(vocab * width);
  std::vector<int32_t> ids = {3, 10, -1, 9};
  float *out = device(random(ids.size() * width));
  cuda::embedding(stream, device(table), device(ids), out, 4, width, vocab);
  EXPECT_EQ(cuda::takeIndexErrors(), 1u) << "the bad ids are reported";
  auto got = host(out, ids.size() * width);
  for (int64_t w = 0; w < width; ++w) {
    EXPECT_EQ(got[0 * width + w], table[3 * width + w]);
    EXPECT_EQ(got[1 * width + w], 0.0f) << "id 10 read nothing";
    EXPECT_EQ(got[2 * width + w], 0.0f) << "id -1 read nothing";
  }
  std::vector<int32_t> positions = {0, 7}; // seq 4: 7 is outside
  float *gathered = device(std::vector<float>(2 * width));
  cuda::gatherPositions(stream, device(random(4 * width)), device(positions),
                        gathered, 1, 4, 2, width);
  EXPECT_EQ(cuda::takeIndexErrors(), 2u);
  EXPECT_EQ(cuda::takeIndexErrors(), 0u) << "reading clears the record";
}

// The fused end of a sublayer against the CPU's dropout, add and layer norm
// (what the CPU backend runs for it), with and without the dropout, in rows
// the vectorised kernel takes (768 columns) and rows it does not (45), and
// the plain layer norm likewise.
TEST_F(CudaKernels, ResidualLayerNorm) {
  for (int64_t cols : {768, 45})
    for (float p : {0.1f, 0.0f}) {
      int64_t rows = 3 * 128, n = rows * cols, perSample = 128 * cols;
      auto x = random(n), res = random(n), scale = random(cols, 0.5f, 1.5f),
           bias = random(cols);
      std::vector<float> sum(n), out(n);
      cpu::dropout(x.data(), sum.data(), n, perSample, 7, 0x51u, 2, 4, p);
      cpu::binary(cpu::Binary::Add, sum.data(), res.data(), sum.data(), n);
      cpu::layerNorm(sum.data(), scale.data(), bias.data(), out.data(), rows,
                     cols, 1e-12f);
      float *dSum = device(std::vector<float>(n));
      float *dOut = device(std::vector<float>(n));
      cuda::residualLayerNorm(stream, device(x), device(res), device(scale),
                              device(bias), dSum, dOut, rows, cols, 1e-12f,
                              perSample, 7, 0x51u, 2, 4, p);
      expectClose(host(dSum, n), sum, 1e-6, "residual_layer_norm (sum)");
      expectClose(host(dOut, n), out, 1e-5, "residual_layer_norm (out)");
      std::vector<float> norm(n);
      cpu::layerNorm(x.data(), scale.data(), bias.data(), norm.data(), rows,
                     cols, 1e-12f);
      cuda::layerNorm(stream, device(x), device(scale), device(bias), dOut,
                      rows, cols, 1e-12f);
      expectClose(host(dOut, n), norm, 1e-5, "layer_norm");
    }
}

TEST_F(CudaKernels, DropoutMasksAreTheCpuBits) {
  int64_t n = 4 * 128 * 64, perSample = 128 * 64;
  auto x = random(n);
  std::vector<float> want(n);
  cpu::dropout(x.data(), want.data(), n, perSample, 42, 0x1234u, 3, 16, 0.1f);
  float *out = device(std::vector<float>(n));
  cuda::dropout(stream, device(x), out, n, perSample, 42, 0x1234u, 3, 16, 0.1f);
  auto got = host(out, n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i] == 0.0f, want[i] == 0.0f) << "mask differs at " << i;
  expectClose(got, want, 1e-7, "dropout");
}

TEST_F(CudaKernels, GathersAndTheirGradients) {
  int64_t batch = 4, seq = 64, predictions = 10, width = 96, vocab = 500;
  auto table = random(vocab * width);
  auto ids = randomInts(batch * seq, static_cast<int32_t>(vocab));
  std::vector<float> want(batch * seq * width);
  cpu::embedding(table.data(), ids.data(), want.data(), batch * seq, width);
  float *out = device(std::vector<float>(want.size()));
  cuda::embedding(stream, device(table), device(ids), out, batch * seq, width,
                  vocab);
  expectClose(host(out, want.size()), want, 0, "embedding");

  auto dy = random(batch * seq * width);
  std::vector<float> dtable(vocab * width);
  cpu::embeddingGrad(ids.data(), dy.data(), dtable.data(), batch * seq, width,
                     vocab);
  float *ddt = device(random(vocab * width));
  cuda::embeddingGrad(stream, device(ids), device(dy), ddt, batch * seq, width,
                      vocab, false, sortWorkspace(batch * seq));
  expectClose(host(ddt, dtable.size()), dtable, 1e-5, "embedding_grad");

  auto x = random(batch * seq * width);
  auto pos = randomInts(batch * predictions, static_cast<int32_t>(seq));
  std::vector<float> g(batch * predictions * width), gdx(batch * seq * width);
  cpu::gatherPositions(x.data(), pos.data(), g.data(), batch, seq, predictions,
                       width);
  float *dg = device(std::vector<float>(g.size()));
  cuda::gatherPositions(stream, device(x), device(pos), dg, batch, seq,
                        predictions, width);
  expectClose(host(dg, g.size()), g, 0, "gather_positions");
  cpu::gatherPositionsGrad(pos.data(), g.data(), gdx.data(), batch, seq,
                           predictions, width);
  float *dgx = device(random(gdx.size()));
  cuda::gatherPositionsGrad(stream, device(pos), device(g), dgx, batch, seq,
                            predictions, width);
  expectClose(host(dgx, gdx.size()), gdx, 1e-6, "gather_positions_grad");
}

TEST_F(CudaKernels, ReductionsTransposeAndLosses) {
  // Both kernels (rows: inner 1; column tiles: inner > 1), the bias
  // gradient's shape (outer 1, many rows, width a non-multiple of the
  // tile), every kind; a NaN wins a max, as on the CPU.
  struct Shape {
    int64_t outer, size, inner;
  };
  for (Shape sh : {Shape{6, 50, 7}, Shape{5, 3001, 1}, Shape{1, 4096, 300}})
    for (int kind = 0; kind < 4; ++kind) {
      auto x = random(sh.outer * sh.size * sh.inner);
      std::vector<float> want(sh.outer * sh.inner);
      cpu::reduce(static_cast<cpu::Reduce>(kind), x.data(), want.data(),
                  sh.outer, sh.size, sh.inner);
      float *out = device(std::vector<float>(want.size()));
      cuda::reduce(stream, kind, device(x), out, sh.outer, sh.size, sh.inner);
      expectClose(host(out, want.size()), want, 1e-5, "reduce");
    }
  {
    auto x = random(4 * 100);
    x[2 * 100 + 37] = NAN;
    float *out = device(std::vector<float>(4));
    cuda::reduce(stream, 2, device(x), out, 4, 100, 1);
    auto got = host(out, 4);
    EXPECT_TRUE(std::isnan(got[2])) << "a NaN must win the max";
    EXPECT_FALSE(std::isnan(got[1]));
  }
  int64_t dims[4] = {3, 4, 5, 6}, perm[4] = {0, 2, 1, 3};
  auto t = random(360);
  std::vector<float> want(360);
  cpu::transpose(t.data(), want.data(), 4, dims, perm);
  float *out = device(std::vector<float>(360));
  cuda::transpose(stream, device(t), out, 4, dims, perm);
  expectClose(host(out, 360), want, 0, "transpose");

  int64_t rows = 40, cols = 1008, classes = 1000;
  auto logits = random(rows * cols, -5, 5);
  auto labels = randomInts(rows, static_cast<int32_t>(classes));
  auto weights = random(rows, 0.0f, 1.0f);
  weights[3] = 0.0f;
  std::vector<float> loss(1), dl(rows * cols), hits(1), dloss = {0.37f};
  cpu::softmaxCrossEntropy(logits.data(), labels.data(), weights.data(),
                           loss.data(), rows, cols, classes);
  float *dloss1 = device(std::vector<float>(1));
  cuda::softmaxCrossEntropy(stream, device(logits), device(labels),
                            device(weights), dloss1, rows, cols, classes,
                            doubles(rows));
  expectClose(host(dloss1, 1), loss, 1e-5, "softmax_cross_entropy");
  cpu::softmaxCrossEntropyGrad(logits.data(), labels.data(), weights.data(),
                               dloss.data(), dl.data(), rows, cols, classes);
  float *ddl = device(std::vector<float>(dl.size()));
  cuda::softmaxCrossEntropyGrad(stream, device(logits), device(labels),
                                device(weights), device(dloss), ddl, rows, cols,
                                classes);
  expectClose(host(ddl, dl.size()), dl, 1e-5, "softmax_cross_entropy_grad");
  for (int64_t r = 0; r < rows; r += 3) // make some hits
    labels[r] = static_cast<int32_t>(
        std::max_element(logits.begin() + r * cols,
                         logits.begin() + r * cols + classes) -
        (logits.begin() + r * cols));
  cpu::argmaxCorrect(logits.data(), labels.data(), weights.data(), hits.data(),
                     rows, cols, classes);
  float *dh = device(std::vector<float>(1));
  cuda::argmaxCorrect(stream, device(logits), device(labels), device(weights),
                      dh, rows, cols, classes, doubles(rows));
  expectClose(host(dh, 1), hits, 1e-6, "argmax_correct");
  // The first column holding the maximum or a NaN, as the CPU decides: a
  // tie goes to the first column, a NaN before the maximum wins.
  {
    std::vector<float> l(3 * 600, 0.5f);
    l[0 * 600 + 10] = 2.0f, l[0 * 600 + 500] = 2.0f; // tie: 10
    l[1 * 600 + 300] = NAN, l[1 * 600 + 450] = 3.0f; // NaN first: 300
    l[2 * 600 + 0] = 9.0f, l[2 * 600 + 599] = 9.0f;  // tie: 0
    std::vector<int32_t> lab = {10, 300, 0};
    std::vector<float> w = {1.0f, 1.0f, 1.0f}, want(1);
    cpu::argmaxCorrect(l.data(), lab.data(), w.data(), want.data(), 3, 600,
                       600);
    ASSERT_EQ(want[0], 3.0f) << "the CPU's rule changed: update this test";
    float *got = device(std::vector<float>(1));
    cuda::argmaxCorrect(stream, device(l), device(lab), device(w), got, 3, 600,
                        600, doubles(3));
    EXPECT_EQ(host(got, 1)[0], 3.0f) << "argmax_correct ties / NaN";
  }
}

TEST_F(CudaKernels, GlobalNormAndOptimizers) {
  auto a = random(1000), b = random(4321);
  const float *hostTensors[2] = {a.data(), b.data()};
  int64_t sizes[2] = {1000, 4321};
  std::vector<float> want(1);
  cpu::globalNorm(hostTensors, sizes, 2, want.data());
  const float *devTensors[2] = {device(a), device(b)};
  double *scratch = this->scratch();
  float *out = device(std::vector<float>(1));
  cuda::globalNorm(stream, devTensors, sizes, 2, out, scratch);
  expectClose(host(out, 1), want, 1e-6, "global_norm");

  for (bool lamb : {false, true}) {
    int64_t n = 3000, segments = 3;
    auto w = random(n * segments), g = random(n * segments),
         m = random(n * segments, -0.1f, 0.1f),
         v = random(n * segments, 0.0f, 0.1f);
    cpu::AdamParams cp{0.9f, 0.999f, 1e-6f, 0.01f, true, lamb, 3};
    cuda::AdamParams gp{0.9f, 0.999f, 1e-6f, 0.01f, true, lamb, 3};
    float *dw = device(w), *dm = device(m), *dv = device(v);
    std::vector<float> lr = {1e-3f}, norm = {2.5f};
    cpu::adamUpdate(w.data(), g.data(), m.data(), v.data(), n, segments, lr[0],
                    norm[0], 1.0f, cp);
    cuda::adamUpdate(stream, dw, device(g), dm, dv, n, segments, device(lr),
                     device(norm), 1.0f, gp, scratch);
    expectClose(host(dw, w.size()), w, 1e-6, "optimizer weights");
    expectClose(host(dm, m.size()), m, 1e-6, "optimizer m");
    expectClose(host(dv, v.size()), v, 1e-6, "optimizer v");
  }
}

// reduce over [outer, size, inner] with more outer slices than a grid's y
// dimension may hold (65535): the blocks stride over them.
TEST_F(CudaKernels, ReduceWithMoreOuterSlicesThanTheGridHolds) {
  int64_t outer = 70000, size = 3, inner = 2;
  auto x = random(outer * size * inner);
  std::vector<float> want(outer * inner);
  cpu::reduce(cpu::Reduce::Sum, x.data(), want.data(), outer, size, inner);
  float *out = device(std::vector<float>(outer * inner));
  cuda::reduce(stream, 0, device(x), out, outer, size, inner);
  expectClose(host(out, want.size()), want, 1e-6, "reduce (70000 slices)");
}

// Empty sizes launch nothing (a grid of 0 blocks is an invalid
// configuration) and leave the CPU's results.
TEST_F(CudaKernels, EmptySizesLaunchNothing) {
  float *dscale = device(std::vector<float>(4, 7.0f));
  float *dbias = device(std::vector<float>(4, 7.0f));
  float *any = device(std::vector<float>(4, 1.0f));
  EXPECT_NO_THROW(cuda::layerNormGrad(stream, any, any, any, any, dscale, dbias,
                                      3, 0, 1e-5f, any));
  EXPECT_NO_THROW(cuda::layerNormGrad(stream, any, any, any, any, dscale, dbias,
                                      0, 4, 1e-5f, any));
  EXPECT_EQ(host(dscale, 4), std::vector<float>(4, 0.0f)); // as the CPU
  EXPECT_NO_THROW(cuda::softmax(stream, any, nullptr, any, 2, 2, 0));
  EXPECT_NO_THROW(cuda::reduce(stream, 0, any, any, 0, 2, 2));
  EXPECT_NO_THROW(cuda::layerNorm(stream, any, any, any, any, 2, 0, 1e-5f));
}

// The bias pointer is only as aligned as the arena makes it (64 bytes):
// the algorithm cuBLASLt picks must not assume more. Two calls that differ
// only in the bias vector's alignment (the first 256-byte aligned) both run.
TEST_F(CudaKernels, LtGemmBiasAlignedToOnly64Bytes) {
  cuda::LtGemm lt;
  float *workspace = device(std::vector<float>(1 << 20));
  int64_t m = 8, n = 64, k = 16;
  auto a = random(m * k), b = random(k * n), bias = random(n + 64);
  char *base = reinterpret_cast<char *>(device(bias));
  // A copy of the bias vector at a 256-byte and at a 64-byte aligned
  // address inside one allocation.
  char *aligned = base + (256 - reinterpret_cast<uintptr_t>(base) % 256) % 256;
  std::vector<float> want(m * n);
  cpu::gemm(1, m, n, k, false, false, 1.0f, a.data(), m * k, b.data(), k * n,
            0.0f, want.data(), m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      want[i * n + j] += bias[j];
  float *da = device(a), *db = device(b);
  for (int64_t offset : {0, 64}) {
    float *vector = reinterpret_cast<float *>(aligned + offset);
    cudaMemcpy(vector, bias.data(), n * 4, cudaMemcpyHostToDevice);
    float *c = device(std::vector<float>(m * n));
    cuda::GemmCall g;
    g.m = m, g.n = n, g.k = k, g.a = da, g.b = db, g.c = c;
    g.strideA = m * k, g.strideB = k * n, g.strideC = m * n;
    g.epilogue = 1, g.vector = vector;
    g.workspace = workspace, g.workspaceBytes = 4u << 20;
    ASSERT_TRUE(lt.run(g, stream)) << "offset " << offset;
    expectClose(host(c, want.size()), want, 1e-5, "bias epilogue");
  }
}

// A probe of the runtime's last-error rule: an event query that answers
// "not ready" must not make the next launch fail (ferry's launches check
// their own result; the backend also clears the error after its queries).
// On a GPU this shows whether the query records "not ready" as the last
// error: the simulator assumes it does, as PyTorch does.
TEST_F(CudaKernels, EventQueryNotReadyDoesNotFailTheNextLaunch) {
#ifdef FERRY_CUDA_SIM
  int64_t n = 1 << 12; // the simulator queues work lazily: never ready yet
#else
  int64_t n = 1 << 22;
#endif
  float *x = device(std::vector<float>(n, 1.0f));
  cudaEvent_t e;
  ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  for (int i = 0; i < 64; ++i) // enough work to still be running
    cuda::scale(stream, x, x, n, 1.0f);
  ASSERT_EQ(cudaEventRecord(e, stream), cudaSuccess);
  cudaError_t q = cudaEventQuery(e);
  EXPECT_TRUE(q == cudaSuccess || q == cudaErrorNotReady) << q;
  // The last error is left as the query set it: the launch must check its
  // own result, not read the thread's last error (the old check() threw
  // here with "device not ready").
  EXPECT_NO_THROW(cuda::fill(stream, x, n, 2.0f));
  (void)cudaGetLastError();
  cudaEventDestroy(e);
  EXPECT_EQ(host(x, 1)[0], 2.0f);
}
