//===- Gemm.cpp - kernel patterns of matrix products ----------------------===//
//
// graph.matmul and graph.fused_matmul -> gemm and gemm_epilogue
// (dialects/rt/kernels/Gemm.td): C = alpha * op(A) op(B) [+ bias | bias
// gradient], batched over the leading dimensions; a weight shared by every
// batch entry of a non-transposed A is one GEMM of batch * m rows (a linear
// layer over [batch, seq]). The workspace holds the rounded inputs under
// training.precision bf16 or fp16, then cuBLASLt's scratch.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// The shape of a product and what both kernels are given.
template <class KernelOp>
void setShape(KernelOp k, KernelSelection &s, int64_t batch, int64_t m,
              int64_t n, int64_t kk, bool transA, bool transB, bool shared) {
  k.setBatchAttr(s.i(batch));
  k.setMAttr(s.i(m));
  k.setNAttr(s.i(n));
  k.setKAttr(s.i(kk));
  k.setTransAAttr(s.i(transA ? 1 : 0));
  k.setTransBAttr(s.i(transB ? 1 : 0));
  k.setStrideAAttr(s.i(m * kk));
  k.setStrideBAttr(s.i(shared ? 0 : kk * n));
  k.setStrideCAttr(s.i(m * n));
  k.setAccumulateAttr(s.i(0));
}

template <class GraphOp> struct MatmulPattern : OpKernelPattern<GraphOp> {
  LogicalResult selectOp(GraphOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    auto fused = dyn_cast<graph::FusedMatmulOp>(op.getOperation());
    bool transA = op.getTransposeLhs(), transB = op.getTransposeRhs();
    ArrayRef<int64_t> a = shapeOf(op->getOperand(0)),
                      b = shapeOf(op->getOperand(1)),
                      c = shapeOf(op->getResult(0));
    int64_t m = c[c.size() - 2], n = c.back();
    int64_t k = transA ? a[a.size() - 2] : a.back();
    int64_t batch = product(c.drop_back(2));
    bool shared = b.size() == 2 && c.size() > 2;
    if (shared && !transA) {
      // A weight shared by every batch entry, entries contiguous: one GEMM
      // of batch * m rows (what a linear layer over [batch, seq] is).
      m *= batch;
      batch = 1;
      shared = false;
    }
    // gemm: [a, b, c]; gemm_epilogue: [a, b, c, bias or bias gradient].
    int epilogue = fused && fused.getBias()       ? 1
                   : fused && fused.getBiasGrad() ? 2
                                                  : 0;
    const SmallVector<BufferRange> &ins = operands.ins, &outs = operands.outs;
    SmallVector<BufferRange> buffers = {ins[0], ins[1], outs[0]};
    if (epilogue == 1)
      buffers.push_back(ins[2]);
    if (epilogue == 2)
      buffers.push_back(outs[1]);
    bool rounded = s.matmulInputs != MatmulPrecision::fp32;
    bool precision = rounded || s.gemmWorkspace > 0 || epilogue;
    if (precision) {
      // training.precision: bf16: the inputs are rounded to bf16 and the
      // products accumulated in fp32; the rounded copies need a workspace,
      // planned like any temporary (4 bytes per input element: the CPU
      // backend keeps them as fp32, the CUDA backend as bf16). After them,
      // `gemmWorkspace` bytes of scratch for cuBLASLt (CUDA backend), which
      // ferry-place-buffers shrinks under a small budget.
      int64_t elements =
          !rounded ? 0 : batch * m * k + (shared ? k * n : batch * k * n);
      int64_t bytes = 4 * elements + s.gemmWorkspace;
      if (bytes > 0)
        buffers.push_back(s.workspace(
            bytes, rounded ? "bf16 matmul workspace" : "gemm workspace",
            s.gemmWorkspace));
    }
    double alpha = fused ? fused.getAlpha().convertToDouble() : 1.0;
    auto precisionAttr = s.i(static_cast<int64_t>(s.matmulInputs));
    if (epilogue) {
      auto g = s.emit<rt::GemmEpilogueOp>(buffers);
      setShape(g, s, batch, m, n, k, transA, transB, shared);
      g.setPrecisionAttr(precisionAttr);
      g.setEpilogueAttr(s.i(epilogue));
      g.setAlphaAttr(s.f(alpha));
      return success();
    }
    auto g = s.emit<rt::GemmOp>(buffers);
    setShape(g, s, batch, m, n, k, transA, transB, shared);
    if (precision)
      g.setPrecisionAttr(precisionAttr);
    g.setAlphaAttr(s.f(alpha));
    return success();
  }
};

} // namespace

void lowering::populateGemmPatterns(KernelPatterns &patterns) {
  patterns.add<MatmulPattern<graph::MatmulOp>, graph::MatmulOp>();
  patterns.add<MatmulPattern<graph::FusedMatmulOp>, graph::FusedMatmulOp>();
}
