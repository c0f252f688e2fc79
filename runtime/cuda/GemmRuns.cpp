// The Gemm family on CUDA (dialects/rt/kernels/Gemm.td), as
// run(Context &, const XArgs &): cuBLASLt with its epilogues, or cuBLAS
// with ferry's epilogue kernels where cuBLASLt has no algorithm
// (GemmInstr.h chooses).
#include "runtime/cuda/CudaKernelContext.h"
#include "runtime/cuda/GemmInstr.h"

namespace ferry::cuda {
namespace {

template <class Args> GemmInstr instrOf(const Args &g) {
  GemmInstr instr;
  GemmCall &c = instr.call;
  c.batch = g.batch, c.m = g.m, c.n = g.n, c.k = g.k;
  c.transA = g.trans_a != 0, c.transB = g.trans_b != 0;
  c.strideA = g.stride_a, c.strideB = g.stride_b, c.strideC = g.stride_c;
  c.beta = g.accumulate ? 1.0f : 0.0f;
  c.alpha = static_cast<float>(g.alpha);
  c.inputType = static_cast<int>(g.precision);
  instr.a = reinterpret_cast<char *>(const_cast<float *>(g.a.data));
  instr.b = reinterpret_cast<char *>(const_cast<float *>(g.b.data));
  instr.c = reinterpret_cast<char *>(g.c.data);
  instr.bf16A = g.a.bf16, instr.bf16B = g.b.bf16, instr.bf16C = g.c.bf16;
  if (g.workspace) {
    instr.workspace = reinterpret_cast<char *>(g.workspace.data);
    instr.workspaceBytes = g.workspace.bytes;
  }
  return instr;
}

} // namespace

void run(Context &cx, const kernels::GemmArgs &g) {
  runGemmInstr(instrOf(g), *cx.lt, *cx.cublas, cx.scratch, cx.stream);
}

void run(Context &cx, const kernels::GemmEpilogueArgs &g) {
  GemmInstr instr = instrOf(g);
  instr.call.epilogue = static_cast<int>(g.epilogue);
  instr.call.vector = g.vector.data;
  runGemmInstr(instr, *cx.lt, *cx.cublas, cx.scratch, cx.stream);
}

} // namespace ferry::cuda
