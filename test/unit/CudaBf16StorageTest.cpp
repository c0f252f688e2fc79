// GPU tests (ctest label `gpu`, and `cuda-sim` under the simulator) of the
// CUDA kernels that take bf16-stored buffers (the kernel records' RtBf16,
// training.bf16_activations): each element-wise map with every combination
// of its result and inputs stored as bf16, at sizes that are not multiples
// of the vector width and at views one element past an aligned address (the
// element-by-element path), against the CPU backend's emulation (expand
// the bf16 inputs, the fp32 kernel, round the result to nearest even).
// Arithmetic maps equal it word for word; GELU and tanh, whose fp32 values
// differ from the CPU's by a few ULPs, within one bf16 ULP. The row (layer
// norm, softmax, their gradients, the fused softmax-dropout both ways),
// transpose, indexed and attention kernels with bf16 storage equal their
// fp32 results rounded, and a GEMM instruction's bf16 operands its fp32
// ones.
#include "CudaKernelsTestUtil.h"

#include "runtime/cpu/Bf16Staging.h"
#include "runtime/cuda/GemmInstr.h"

#include <functional>

namespace {

std::vector<uint16_t> words(const std::vector<float> &v) {
  std::vector<uint16_t> w(v.size());
  cpu::toBf16Words(v.data(), w.data(), static_cast<int64_t>(v.size()));
  return w;
}
std::vector<float> values(const std::vector<uint16_t> &w) {
  std::vector<float> v(w.size());
  cpu::fromBf16Words(w.data(), v.data(), static_cast<int64_t>(w.size()));
  return v;
}

struct MapCase {
  const char *name;
  bool twoInputs, exact;
  // The CUDA map on (a, b, out) with MapBits, and the CPU kernel.
  std::function<void(const float *, const float *, float *, int64_t, unsigned)>
      cuda;
  std::function<void(const float *, const float *, float *, int64_t)> cpu;
};

// The kernel tests' fixture, as a suite of its own.
class CudaBf16Storage : public CudaKernels {
protected:
  void rowKernels(int64_t cols);
  void attentionKernels();
  // `v` on the device as fp32 or as bf16 words, and back as bf16 words.
  float *put(const std::vector<float> &v, bool half) {
    return half ? reinterpret_cast<float *>(device(words(v))) : device(v);
  }
  std::vector<uint16_t> got(const float *p, int64_t count, bool half) {
    return half ? host(reinterpret_cast<const uint16_t *>(p),
                       static_cast<size_t>(count))
                : words(host(p, static_cast<size_t>(count)));
  }
};

} // namespace

TEST_F(CudaBf16Storage, MapsTakeBf16Buffers) {
  const float *bias = device(random(5));
  std::vector<float> hostBias = host(bias, 5);
  std::vector<MapCase> cases = {
      {"add", true, true,
       [&](auto a, auto b, auto o, int64_t n, unsigned m) {
         cuda::binary(stream, 0, a, b, o, n, m);
       },
       [](auto a, auto b, auto o, int64_t n) {
         cpu::binary(cpu::Binary::Add, a, b, o, n);
       }},
      {"mul", true, true,
       [&](auto a, auto b, auto o, int64_t n, unsigned m) {
         cuda::binary(stream, 2, a, b, o, n, m);
       },
       [](auto a, auto b, auto o, int64_t n) {
         cpu::binary(cpu::Binary::Mul, a, b, o, n);
       }},
      {"scale", false, true,
       [&](auto a, auto, auto o, int64_t n, unsigned m) {
         cuda::scale(stream, a, o, n, 0.3f, m);
       },
       [](auto a, auto, auto o, int64_t n) { cpu::scale(a, o, n, 0.3f); }},
      {"bias_add", false, true,
       [&](auto a, auto, auto o, int64_t n, unsigned m) {
         cuda::biasAdd(stream, a, bias, o, n / 5, 5, m);
       },
       [&](auto a, auto, auto o, int64_t n) {
         cpu::biasAdd(a, hostBias.data(), o, n / 5, 5);
       }},
      {"gelu", false, false,
       [&](auto a, auto, auto o, int64_t n, unsigned m) {
         cuda::gelu(stream, a, o, n, m);
       },
       [](auto a, auto, auto o, int64_t n) { cpu::gelu(a, o, n); }},
      {"gelu_grad", true, false,
       [&](auto a, auto b, auto o, int64_t n, unsigned m) {
         cuda::geluGrad(stream, a, b, o, n, m);
       },
       [](auto a, auto b, auto o, int64_t n) { cpu::geluGrad(a, b, o, n); }},
      {"tanh_grad", true, false,
       [&](auto a, auto b, auto o, int64_t n, unsigned m) {
         cuda::tanhGrad(stream, a, b, o, n, m);
       },
       [](auto a, auto b, auto o, int64_t n) { cpu::tanhGrad(a, b, o, n); }},
  };
  for (const MapCase &c : cases)
    for (int64_t n : {5, 35, 4100}) // multiples of bias_add's 5 columns
      for (int64_t shift : {0, 1})  // one element past an aligned address
        for (unsigned bits = 1; bits < 8; ++bits) {
          if (!c.twoInputs && (bits & cuda::kMapB))
            continue;
          bool ho = bits & cuda::kMapOut, ha = bits & cuda::kMapA,
               hb = bits & cuda::kMapB;
          auto x = random(static_cast<size_t>(n + shift)),
               y = random(static_cast<size_t>(n + shift));
          // What each operand holds, and the values the kernels read.
          auto stored = [&](std::vector<float> &v, bool half) -> void * {
            if (!half)
              return device(v) + shift;
            std::vector<uint16_t> w = words(v);
            v = values(w);
            return device(w) + shift;
          };
          auto *a = static_cast<const float *>(stored(x, ha));
          auto *b = static_cast<const float *>(stored(y, hb));
          std::vector<float> init(static_cast<size_t>(n + shift), 0.0f);
          void *out = ho ? static_cast<void *>(device(words(init)) + shift)
                         : static_cast<void *>(device(init) + shift);
          c.cuda(a, c.twoInputs ? b : nullptr, static_cast<float *>(out), n,
                 bits);
          std::vector<float> want(static_cast<size_t>(n));
          c.cpu(x.data() + shift, y.data() + shift, want.data(), n);
          std::vector<float> got;
          if (ho) {
            std::vector<uint16_t> g = host(static_cast<const uint16_t *>(out),
                                           static_cast<size_t>(n));
            std::vector<uint16_t> w = words(want);
            for (int64_t i = 0; i < n; ++i) {
              int diff = std::abs(int(g[i]) - int(w[i]));
              ASSERT_LE(diff, c.exact ? 0 : 1)
                  << c.name << " n " << n << " shift " << shift << " bits "
                  << bits << " element " << i;
            }
            continue;
          }
          got = host(static_cast<const float *>(out), static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i)
            ASSERT_NEAR(got[i], want[i],
                        c.exact ? 0.0
                                : 1e-5 * std::max(1.0f, std::abs(want[i])))
                << c.name << " n " << n << " shift " << shift << " bits "
                << bits << " element " << i;
        }
}

// accumulate: the accumulator is read and written in place as bf16.
TEST_F(CudaBf16Storage, AccumulateIntoABf16Accumulator) {
  int64_t n = 1001;
  auto d = random(n), s = random(n);
  std::vector<uint16_t> dw = words(d), sw = words(s);
  uint16_t *dst = device(dw);
  const uint16_t *src = device(sw);
  cuda::accumulate(stream, reinterpret_cast<float *>(dst),
                   reinterpret_cast<const float *>(src), n,
                   cuda::kMapA | cuda::kMapB);
  std::vector<float> want = values(dw), add = values(sw);
  cpu::accumulate(want.data(), add.data(), n);
  EXPECT_EQ(host(dst, static_cast<size_t>(n)), words(want));
}

namespace {

// Values a bf16 holds exactly, so that fp32 and bf16 storage of them are
// the same inputs.
std::vector<float> representable(std::vector<float> v) {
  return values(words(v));
}

} // namespace

// The row, indexed and attention kernels on inputs bf16 represents exactly:
// with their buffers stored as bf16 they compute what they compute with
// fp32 storage, and write it rounded (word for word). `run(mask)` runs the
// kernel with the call's bf16 mask on buffers from `make`, and returns
// each output as fp32 values or bf16 words.
TEST_F(CudaBf16Storage, RowAndAttentionKernelsRoundTheirFp32Results) {
  // 45 columns: the row kernels' element-by-element form; 64: their
  // vectorised one (four columns a thread).
  for (int64_t cols : {45, 64})
    rowKernels(cols);
  attentionKernels();
}

void CudaBf16Storage::rowKernels(int64_t cols) {
  int64_t rows = 7, n = rows * cols;
  auto x = representable(random(n)), y = representable(random(n));
  auto scale = random(cols), bias = random(cols);
  const float *dScale = device(scale), *dBias = device(bias);
  const float *dMask = device(random(n)); // softmax's, one row per sample
  // Probabilities (each row positive, summing to about 1), representable.
  std::vector<float> probs(n);
  for (int64_t i = 0; i < n; ++i)
    probs[i] = (1.0f + x[i] * 0.5f) / static_cast<float>(cols);
  probs = representable(probs);
  struct Case {
    const char *name;
    uint64_t mask;            // the bf16 run's
    std::vector<int> outputs; // buffer indices written
    std::function<std::vector<std::vector<uint16_t>>(uint64_t)> run;
  };
  std::vector<Case> cases = {
      {"layer_norm",
       0b1001,
       {3},
       [&](uint64_t m) {
         float *out = put(std::vector<float>(n), m & 8);
         cuda::layerNorm(stream, put(x, m & 1), dScale, dBias, out, rows, cols,
                         1e-5f, m);
         return std::vector<std::vector<uint16_t>>{got(out, n, m & 8)};
       }},
      {"residual_layer_norm",
       0b110011,
       {4, 5},
       [&](uint64_t m) {
         float *sum = put(std::vector<float>(n), m & 16),
               *out = put(std::vector<float>(n), m & 32);
         cuda::residualLayerNorm(stream, put(x, m & 1), put(y, m & 2), dScale,
                                 dBias, sum, out, rows, cols, 1e-5f, cols, 5, 9,
                                 2, 3, 0.1f, m);
         return std::vector<std::vector<uint16_t>>{got(sum, n, m & 16),
                                                   got(out, n, m & 32)};
       }},
      {"layer_norm_grad",
       0b1101,
       {3},
       [&](uint64_t m) {
         float *dx = put(std::vector<float>(n), m & 8);
         float *ds = device(std::vector<float>(cols)),
               *db = device(std::vector<float>(cols));
         cuda::layerNormGrad(stream, put(x, m & 1), dScale, put(y, m & 4), dx,
                             ds, db, rows, cols, 1e-5f,
                             device(std::vector<float>(2 * rows)), nullptr, m);
         return std::vector<std::vector<uint16_t>>{
             got(dx, n, m & 8), words(host(ds, cols)), words(host(db, cols))};
       }},
      {"dropout",
       0b11,
       {1},
       [&](uint64_t m) {
         float *out = put(std::vector<float>(n), m & 2);
         cuda::dropout(stream, put(x, m & 1), out, n, cols, 5, 9, 2, 3, 0.2f,
                       m);
         return std::vector<std::vector<uint16_t>>{got(out, n, m & 2)};
       }},
      {"softmax",
       0b101,
       {2},
       [&](uint64_t m) {
         float *out = put(std::vector<float>(n), m & 4);
         cuda::softmax(stream, put(x, m & 1), dMask, out, rows, 1, cols, m);
         return std::vector<std::vector<uint16_t>>{got(out, n, m & 4)};
       }},
      {"softmax_grad",
       0b111,
       {2},
       [&](uint64_t m) {
         float *dx = put(std::vector<float>(n), m & 4);
         cuda::softmaxGrad(stream, put(probs, m & 1), put(y, m & 2), dx, rows,
                           cols, m);
         return std::vector<std::vector<uint16_t>>{got(dx, n, m & 4)};
       }},
      {"softmax_dropout",
       0b1101,
       {2, 3},
       [&](uint64_t m) {
         float *kept = put(std::vector<float>(n), m & 4),
               *out = put(std::vector<float>(n), m & 8);
         cuda::softmaxDropout(stream, put(x, m & 1), dMask, kept, out, rows, 1,
                              cols, cols, 5, 9, 2, 3, 0.2f, m);
         return std::vector<std::vector<uint16_t>>{got(kept, n, m & 4),
                                                   got(out, n, m & 8)};
       }},
      {"dropout_softmax_grad",
       0b111,
       {2},
       [&](uint64_t m) {
         float *dx = put(std::vector<float>(n), m & 4);
         cuda::dropoutSoftmaxGrad(stream, put(probs, m & 1), put(y, m & 2), dx,
                                  rows, cols, cols, 5, 9, 2, 3, 0.2f, m);
         return std::vector<std::vector<uint16_t>>{got(dx, n, m & 4)};
       }},
      {"transpose",
       0b11,
       {1},
       [&](uint64_t m) {
         float *out = put(std::vector<float>(n), m & 2);
         int64_t dims[2] = {rows, cols}, perm[2] = {1, 0};
         cuda::transpose(stream, put(x, m & 1), out, 2, dims, perm, m);
         return std::vector<std::vector<uint16_t>>{got(out, n, m & 2)};
       }},
      {"take",
       0b11,
       {1},
       [&](uint64_t m) {
         float *out = put(std::vector<float>(rows * 5), m & 2);
         cuda::take(stream, put(x, m & 1), out, rows, 9, 5, 4, m);
         return std::vector<std::vector<uint16_t>>{got(out, rows * 5, m & 2)};
       }},
  };
  for (const Case &c : cases) {
    auto fp32 = c.run(0), bf16 = c.run(c.mask);
    ASSERT_EQ(fp32.size(), bf16.size());
    for (size_t o = 0; o < fp32.size(); ++o)
      EXPECT_EQ(bf16[o], fp32[o])
          << c.name << " output " << o << ", " << cols << " columns";
  }
}

void CudaBf16Storage::attentionKernels() {
  // The fused attention, both products' precisions, forward and backward.
  for (int precision : {0, 1}) {
    AttentionShape a;
    a.batch = 2, a.heads = 2, a.seq = 40, a.headDim = 24;
    a.seed = 4, a.purpose = 1, a.layer = 2, a.sampleOffset = 6, a.p = 0.1f;
    a.scale = 0.2f, a.precision = precision;
    int64_t m = a.batch * a.heads * a.seq * a.headDim;
    int64_t r = a.batch * a.heads * a.seq;
    auto q = representable(random(m)), k = representable(random(m)),
         v = representable(random(m)), dout = representable(random(m));
    const float *mask = device(std::vector<float>(a.batch * a.seq, 0.0f));
    // Forward: q, k, v and out (buffers 0, 1, 2, 4) stored as bf16 or not.
    std::vector<float> lseValues;
    auto forward = [&](bool h) {
      float *out = put(std::vector<float>(m), h),
            *lse = device(std::vector<float>(r));
      cuda::attention(stream, put(q, h), put(k, h), put(v, h), mask, out, lse,
                      a, h ? 0b10111 : 0);
      lseValues = host(lse, r);
      return std::vector<std::vector<uint16_t>>{got(out, m, h),
                                                words(lseValues)};
    };
    auto fp32 = forward(false), bf16 = forward(true);
    EXPECT_EQ(bf16[0], fp32[0]) << "attention out, precision " << precision;
    EXPECT_EQ(bf16[1], fp32[1]) << "attention lse, precision " << precision;
    // Backward from the same (rounded) output: q, k, v, out, dout, dq, dk,
    // dv (buffers 0-2, 4, 6-9) stored as bf16 or not.
    std::vector<float> out = values(bf16[0]);
    auto backward = [&](bool h) {
      float *dq = put(std::vector<float>(m), h),
            *dk = put(std::vector<float>(m), h),
            *dv = put(std::vector<float>(m), h);
      cuda::attentionGrad(stream, put(q, h), put(k, h), put(v, h), mask,
                          put(out, h), device(lseValues), put(dout, h), dq, dk,
                          dv, device(std::vector<float>(r)), a,
                          h ? 0b1111010111 : 0);
      return std::vector<std::vector<uint16_t>>{got(dq, m, h), got(dk, m, h),
                                                got(dv, m, h)};
    };
    auto g32 = backward(false), g16 = backward(true);
    for (size_t o = 0; o < 3; ++o)
      EXPECT_EQ(g16[o], g32[o])
          << "attention_grad output " << o << ", precision " << precision;
  }
}

// A GEMM instruction with bf16 operands (runtime/cuda/GemmInstr): a and b
// read where they are stored, c written bf16 by the library (no epilogue)
// or through the workspace (bias epilogue; bias-gradient epilogue while
// accumulating into c), against the same instruction with fp32 storage of
// the same values: c within one bf16 ULP of the fp32 result rounded (the
// library may sum in another order for another output type), the bias
// gradient within 1e-5.
TEST_F(CudaBf16Storage, GemmInstrReadsAndWritesBf16Operands) {
  cuda::LtGemm lt;
  int64_t m = 48, n = 40, k = 56;
  auto a = representable(random(m * k)), b = representable(random(k * n)),
       c0 = representable(random(m * n)), bias = random(n);
  for (int epilogue : {0, 1, 2}) {
    bool accumulate = epilogue == 2;
    auto run = [&](bool half, std::vector<float> &vector) {
      cuda::GemmInstr g;
      cuda::GemmCall &call = g.call;
      call.m = m, call.n = n, call.k = k;
      // The bias gradient sums a's columns: ferry's a is [k, m] there.
      call.transA = epilogue == 2;
      call.strideA = m * k, call.strideB = k * n, call.strideC = m * n;
      call.beta = accumulate ? 1.0f : 0.0f;
      call.inputType = 1;
      call.epilogue = epilogue;
      float *v = device(epilogue == 1 ? bias : std::vector<float>(m));
      call.vector = epilogue ? v : nullptr;
      g.bf16A = half, g.bf16B = half, g.bf16C = half;
      auto store = [&](const std::vector<float> &x, bool h) -> char * {
        return h ? reinterpret_cast<char *>(device(words(x)))
                 : reinterpret_cast<char *>(device(x));
      };
      g.a = store(a, g.bf16A), g.b = store(b, g.bf16B), g.c = store(c0, half);
      std::vector<float> ws(4 * (m * k + k * n + m * n) + (1 << 18));
      g.workspace = reinterpret_cast<char *>(device(ws));
      g.workspaceBytes = static_cast<int64_t>(ws.size()) * 4;
      cuda::runGemmInstr(g, lt, cublas, scratch(), stream);
      if (epilogue == 2)
        vector = host(v, static_cast<size_t>(m));
      return half ? host(reinterpret_cast<const uint16_t *>(g.c),
                         static_cast<size_t>(m * n))
                  : words(host(reinterpret_cast<const float *>(g.c),
                               static_cast<size_t>(m * n)));
    };
    std::vector<float> v32, v16;
    auto w32 = run(false, v32), w16 = run(true, v16);
    for (int64_t i = 0; i < m * n; ++i)
      ASSERT_LE(std::abs(int(w16[i]) - int(w32[i])), 1)
          << "epilogue " << epilogue << " element " << i;
    if (epilogue == 2)
      expectClose(v16, v32, 1e-5, "bias gradient");
  }
}
