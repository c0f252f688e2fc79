// The Elementwise family on CUDA (dialects/rt/kernels/Elementwise.td), as
// run(Context &, const XArgs &): host code launching ElementwiseKernels.cu's
// grids. The maps read and write bf16-stored tensors: their MapBits say
// which of the result and the first and second inputs are bf16.
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/CudaKernels.h"

namespace ferry::cuda {
namespace {

unsigned mapBits(bool out, bool a, bool b = false) {
  return (out ? kMapOut : 0u) | (a ? kMapA : 0u) | (b ? kMapB : 0u);
}

// binary's op codes (ElementwiseKernels.cu): 0 add, 1 sub, 2 mul, 3 div.
template <class Args> void binaryOf(Context &cx, int32_t op, const Args &a) {
  binary(cx.stream, op, a.a.data, a.b.data, a.out.data, a.count,
         mapBits(a.out.bf16, a.a.bf16, a.b.bf16));
}

} // namespace

void run(Context &cx, const kernels::AttentionMaskArgs &a) {
  attentionMask(cx.stream, a.mask.data, a.out.data, a.count,
                static_cast<float>(a.fill));
}

void run(Context &cx, const kernels::BiasAddArgs &a) {
  biasAdd(cx.stream, a.x.data, a.bias.data, a.out.data, a.rows, a.cols,
          mapBits(a.out.bf16, a.x.bf16));
}

void run(Context &cx, const kernels::AddArgs &a) { binaryOf(cx, 0, a); }
void run(Context &cx, const kernels::SubArgs &a) { binaryOf(cx, 1, a); }
void run(Context &cx, const kernels::MulArgs &a) { binaryOf(cx, 2, a); }
void run(Context &cx, const kernels::DivArgs &a) { binaryOf(cx, 3, a); }

void run(Context &cx, const kernels::ScaleArgs &a) {
  scale(cx.stream, a.x.data, a.out.data, a.count, static_cast<float>(a.factor),
        mapBits(a.out.bf16, a.x.bf16));
}

void run(Context &cx, const kernels::AccumulateArgs &a) { // dst += src
  accumulate(cx.stream, a.dst.data, a.src.data, a.count,
             mapBits(false, a.dst.bf16, a.src.bf16));
}

void run(Context &cx, const kernels::GeluArgs &a) {
  gelu(cx.stream, a.x.data, a.out.data, a.count, mapBits(a.out.bf16, a.x.bf16));
}

void run(Context &cx, const kernels::GeluGradArgs &a) {
  geluGrad(cx.stream, a.x.data, a.dy.data, a.dx.data, a.count,
           mapBits(a.dx.bf16, a.x.bf16, a.dy.bf16));
}

void run(Context &cx, const kernels::TanhArgs &a) {
  tanhForward(cx.stream, a.x.data, a.out.data, a.count,
              mapBits(a.out.bf16, a.x.bf16));
}

void run(Context &cx, const kernels::TanhGradArgs &a) {
  tanhGrad(cx.stream, a.y.data, a.dy.data, a.dx.data, a.count,
           mapBits(a.dx.bf16, a.y.bf16, a.dy.bf16));
}

} // namespace ferry::cuda
