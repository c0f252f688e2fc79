// ferry's CUDA kernels (CudaKernels.h declares them all). Element-wise
// kernels: fills, iota, the attention mask, bias add, binary ops, scale, GELU
// and tanh with their gradients, take, transpose, broadcast, and the rounding
// of GEMM inputs to bf16/fp16. The arithmetic ones are maps on launchMap
// (KernelCommon.cuh): 128-bit loads and stores where the pointers allow.
#include "runtime/cuda/CudaKernels.h"

#include "runtime/cuda/KernelCommon.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace ferry::cuda {
namespace {

__global__ void toBf16Kernel(const float *x, __nv_bfloat16 *out, int64_t n) {
  FERRY_FOR(i, n) out[i] = __float2bfloat16_rn(x[i]);
}

__global__ void fromBf16Kernel(const __nv_bfloat16 *x, float *out, int64_t n) {
  FERRY_FOR(i, n) out[i] = __bfloat162float(x[i]);
}

__global__ void toFp16Kernel(const float *x, __half *out, int64_t n) {
  FERRY_FOR(i, n) out[i] = __float2half_rn(x[i]);
}

template <typename T> __global__ void fillKernel(T *out, int64_t n, T value) {
  FERRY_FOR(i, n) out[i] = value;
}

__global__ void iotaKernel(int32_t *out, int64_t outer, int64_t size,
                           int64_t inner) {
  FERRY_FOR(i, outer * size * inner) {
    out[i] = static_cast<int32_t>((i / inner) % size);
  }
}

__global__ void attentionMaskKernel(const int32_t *mask, float *out, int64_t n,
                                    float fill) {
  FERRY_FOR(i, n) out[i] = mask[i] != 0 ? 0.0f : fill;
}

__global__ void takeKernel(View x, View out, int64_t outer, int64_t size,
                           int64_t inner, int64_t index) {
  FERRY_FOR(i, outer * inner) {
    out.set(i, x[(i / inner * size + index) * inner + i % inner]);
  }
}

__global__ void takeGradKernel(const float *dy, float *dx, int64_t outer,
                               int64_t size, int64_t inner, int64_t index) {
  FERRY_FOR(i, outer * size * inner) {
    int64_t d = (i / inner) % size;
    dx[i] = d == index ? dy[(i / (inner * size)) * inner + i % inner] : 0.0f;
  }
}

// The element-wise maps (launchMap: 128-bit loads where aligned).
struct BiasAddOp {
  const float *bias;
  int64_t cols;
  __device__ float operator()(int64_t i, float x, float) const {
    return x + bias[i % cols];
  }
};
struct BinaryOp {
  int32_t op; // 0 add, 1 sub, 2 mul, 3 div
  __device__ float operator()(int64_t, float x, float y) const {
    return op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
  }
};
struct ScaleOp {
  float factor;
  __device__ float operator()(int64_t, float x, float) const {
    return factor * x;
  }
};
// Accurate in the lower tail too (0.5 * (1 + erf) cancels there).
struct GeluOp {
  __device__ float operator()(int64_t, float x, float) const {
    return x * normcdff(x);
  }
};
struct GeluGradOp { // (x, dy)
  __device__ float operator()(int64_t, float x, float dy) const {
    float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
    return dy * fmaf(x, pdf, normcdff(x));
  }
};
struct TanhOp {
  __device__ float operator()(int64_t, float x, float) const {
    return tanhf(x);
  }
};
struct TanhGradOp { // (y, dy)
  __device__ float operator()(int64_t, float y, float dy) const {
    return dy * (1.0f - y * y);
  }
};

struct Shape6 {
  int64_t dims[6], strides[6]; // output dims; input strides in output order
  int32_t rank;
};

__global__ void transposeKernel(View x, View out, int64_t total, Shape6 shape) {
  FERRY_FOR(i, total) {
    int64_t rest = i, offset = 0;
    for (int32_t d = shape.rank - 1; d >= 0; --d) {
      offset += (rest % shape.dims[d]) * shape.strides[d];
      rest /= shape.dims[d];
    }
    out.set(i, x[offset]);
  }
}

__global__ void broadcastKernel(const float *x, float *out, int64_t outer,
                                int64_t size, int64_t inner) {
  FERRY_FOR(i, outer * size * inner) {
    out[i] = x[(i / (size * inner)) * inner + i % inner];
  }
}

} // namespace

void roundToHalf(cudaStream_t stream, const float *x, void *out, int64_t n,
                 bool fp16) {
  if (fp16)
    launchOver(stream, "rounding to fp16", n, toFp16Kernel, x,
               static_cast<__half *>(out), n);
  else
    launchOver(stream, "rounding to bf16", n, toBf16Kernel, x,
               static_cast<__nv_bfloat16 *>(out), n);
}

void expandBf16(cudaStream_t stream, const void *x, float *out, int64_t n) {
  launchOver(stream, "bf16 to fp32", n, fromBf16Kernel,
             static_cast<const __nv_bfloat16 *>(x), out, n);
}

void fill(cudaStream_t s, float *out, int64_t n, float value) {
  launchOver(s, "fill", n, fillKernel<float>, out, n, value);
}

void fillInt(cudaStream_t s, int32_t *out, int64_t n, int32_t value) {
  launchOver(s, "fill_i32", n, fillKernel<int32_t>, out, n, value);
}

void iota(cudaStream_t s, int32_t *out, int64_t outer, int64_t size,
          int64_t inner) {
  launchOver(s, "iota", outer * size * inner, iotaKernel, out, outer, size,
             inner);
}

void attentionMask(cudaStream_t s, const int32_t *mask, float *out, int64_t n,
                   float fill) {
  launchOver(s, "attention_mask", n, attentionMaskKernel, mask, out, n, fill);
}

void take(cudaStream_t s, const float *x, float *out, int64_t outer,
          int64_t size, int64_t inner, int64_t index, uint64_t bf16) {
  launchOver(s, "take", outer * inner, takeKernel, viewOf(x, bf16, 0),
             viewOf(out, bf16, 1), outer, size, inner, index);
}

void takeGrad(cudaStream_t s, const float *dy, float *dx, int64_t outer,
              int64_t size, int64_t inner, int64_t index) {
  launchOver(s, "take_grad", outer * size * inner, takeGradKernel, dy, dx,
             outer, size, inner, index);
}

void biasAdd(cudaStream_t s, const float *x, const float *bias, float *out,
             int64_t rows, int64_t cols, unsigned bf16) {
  launchMap(s, "bias_add", rows * cols, BiasAddOp{bias, cols}, out, x, nullptr,
            bf16);
}

void binary(cudaStream_t s, int32_t op, const float *a, const float *b,
            float *out, int64_t n, unsigned bf16) {
  launchMap(s, "binary", n, BinaryOp{op}, out, a, b, bf16);
}

void accumulate(cudaStream_t s, float *dst, const float *src, int64_t n,
                unsigned bf16) {
  // dst is both the result and the first input.
  unsigned bits = bf16 & kMapA ? bf16 | kMapOut : bf16 & ~unsigned(kMapOut);
  launchMap(s, "accumulate", n, BinaryOp{0}, dst, dst, src, bits);
}

void scale(cudaStream_t s, const float *x, float *out, int64_t n, float factor,
           unsigned bf16) {
  launchMap(s, "scale", n, ScaleOp{factor}, out, x, nullptr, bf16);
}

void gelu(cudaStream_t s, const float *x, float *out, int64_t n,
          unsigned bf16) {
  launchMap(s, "gelu", n, GeluOp{}, out, x, nullptr, bf16);
}

void geluGrad(cudaStream_t s, const float *x, const float *dy, float *dx,
              int64_t n, unsigned bf16) {
  launchMap(s, "gelu_grad", n, GeluGradOp{}, dx, x, dy, bf16);
}

void tanhForward(cudaStream_t s, const float *x, float *out, int64_t n,
                 unsigned bf16) {
  launchMap(s, "tanh", n, TanhOp{}, out, x, nullptr, bf16);
}

void tanhGrad(cudaStream_t s, const float *y, const float *dy, float *dx,
              int64_t n, unsigned bf16) {
  launchMap(s, "tanh_grad", n, TanhGradOp{}, dx, y, dy, bf16);
}

void transpose(cudaStream_t s, const float *x, float *out, int32_t rank,
               const int64_t *dims, const int64_t *perm, uint64_t bf16) {
  Shape6 shape{};
  shape.rank = rank;
  int64_t inStrides[6], total = 1, stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    inStrides[d] = stride;
    stride *= dims[d];
  }
  for (int32_t i = 0; i < rank; ++i) {
    shape.dims[i] = dims[perm[i]];
    shape.strides[i] = inStrides[perm[i]];
    total *= dims[i];
  }
  if (total <= 0)
    return;
  launchOver(s, "transpose", total, transposeKernel, viewOf(x, bf16, 0),
             viewOf(out, bf16, 1), total, shape);
}

void broadcast(cudaStream_t s, const float *x, float *out, int64_t outer,
               int64_t size, int64_t inner) {
  launchOver(s, "broadcast", outer * size * inner, broadcastKernel, x, out,
             outer, size, inner);
}

} // namespace ferry::cuda
