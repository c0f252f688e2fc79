// GPU tests (ctest label `gpu`, and `cuda-sim` under the simulator) of the
// CUDA kernels that take bf16-stored buffers (Kernels.def FERRY_BF16,
// training.bf16_activations): each element-wise map with every combination
// of its result and inputs stored as bf16, at sizes that are not multiples
// of the vector width and at views one element past an aligned address (the
// element-by-element path), against the CPU backend's emulation (expand
// the bf16 inputs, the fp32 kernel, round the result to nearest even).
// Arithmetic maps equal it word for word; GELU and tanh, whose fp32 values
// differ from the CPU's by a few ULPs, within one bf16 ULP. (A GEMM reads a
// bf16 operand where it is stored: the bf16 training tests cover it.)
#include "CudaKernelsTestUtil.h"

#include "runtime/cpu/Bf16Staging.h"

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
class CudaBf16Storage : public CudaKernels {};

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
