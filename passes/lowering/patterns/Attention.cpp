//===- Attention.cpp - kernel patterns of fused attention -----------------===//
//
// graph.attention and graph.attention_grad -> attention and attention_grad
// (dialects/rt/kernels/Attention.td): [q, k, v, mask, out, lse] and, for
// the gradient, [dout, dq, dk, dv] and the per-row workspace, then packed
// rows' sequence ids and dropout keys. The dropout's seed, layer and sample
// offset stay affine in the registers.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

#include "runtime/random/Philox.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

template <class GraphOp> struct AttentionPattern : OpKernelPattern<GraphOp> {
  static constexpr bool kGrad = std::is_same_v<GraphOp, graph::AttentionGradOp>;
  using KernelOp =
      std::conditional_t<kGrad, rt::AttentionGradOp, rt::AttentionOp>;

  SmallVector<Value> packed(GraphOp op) const override {
    return presentOperands({op.getSequenceIds(), op.getDropoutKeys()});
  }

  LogicalResult selectOp(GraphOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    FailureOr<Affine> seed = s.affine(op.getSeed(), op);
    FailureOr<Affine> layer = s.affine(op.getLayer(), op);
    FailureOr<Affine> offset = s.affine(op.getSampleOffset(), op);
    if (failed(seed) || failed(layer) || failed(offset))
      return failure();
    ArrayRef<int64_t> q = shapeOf(op.getQuery());
    bool sequenceMajor = op.getSequenceMajor();
    SmallVector<BufferRange> buffers(operands.ins);
    buffers.append(operands.outs.begin(), operands.outs.end());
    if (kGrad) // each query row's dout . out
      buffers.push_back(
          s.workspace(4 * q[0] * q[1] * q[2], "attention_grad rows"));
    buffers.append(operands.packed.begin(), operands.packed.end());
    auto k = s.template emit<KernelOp>(buffers);
    k.setBatchAttr(s.i(q[0]));
    k.setHeadsAttr(s.i(sequenceMajor ? q[2] : q[1]));
    k.setSeqAttr(s.i(sequenceMajor ? q[1] : q[2]));
    k.setHeadDimAttr(s.i(q[3]));
    k.setSeedAttr(s.a(*seed));
    k.setPurposeAttr(
        s.i(static_cast<int64_t>(random::purposeHash(op.getPurpose()))));
    k.setLayerAttr(s.a(*layer));
    k.setSampleOffsetAttr(s.a(*offset));
    // bf16 products where the GEMMs round to bf16; fp32 otherwise (fp16
    // leaves attention unfused: ferry-fuse-attention does not run).
    k.setPrecisionAttr(s.i(s.matmulInputs == MatmulPrecision::bf16 ? 1 : 0));
    k.setSequenceMajorAttr(s.i(sequenceMajor ? 1 : 0));
    // Tensor parallelism: this rank's heads, keyed by their place in the
    // whole sample.
    if (std::optional<uint64_t> stride = op.getTensorKeyStride())
      k.setTensorKeyStrideAttr(s.i(static_cast<int64_t>(*stride)));
    k.setScaleAttr(s.f(op.getScale()));
    k.setPAttr(s.f(op.getProbability()));
    return success();
  }
};

} // namespace

void lowering::populateAttentionPatterns(KernelPatterns &patterns) {
  patterns.add<AttentionPattern<graph::AttentionOp>, graph::AttentionOp>();
  patterns
      .add<AttentionPattern<graph::AttentionGradOp>, graph::AttentionGradOp>();
}
