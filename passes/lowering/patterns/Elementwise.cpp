//===- Elementwise.cpp - kernel patterns of element-wise ops --------------===//
//
// graph.add/sub/mul/div, scale, gelu, tanh and their gradients, bias_add,
// attention_mask -> the Elementwise kernels (dialects/rt/kernels/
// Elementwise.td): buffers in the graph op's operand order, then the
// result; the element count from the result.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// The kernels whose only integer is the element count.
template <class GraphOp, class KernelOp>
struct CountPattern : OpKernelPattern<GraphOp> {
  LogicalResult selectOp(GraphOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    auto k = s.emit<KernelOp>(operands.all());
    k.setCountAttr(s.i(numElements(op->getResult(0).getType())));
    return success();
  }
};

struct ScalePattern : OpKernelPattern<graph::ScaleOp> {
  LogicalResult selectOp(graph::ScaleOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    auto k = s.emit<rt::ScaleOp>(operands.all());
    k.setCountAttr(s.i(numElements(op.getType())));
    k.setFactorAttr(s.f(op.getFactor()));
    return success();
  }
};

struct BiasAddPattern : OpKernelPattern<graph::BiasAddOp> {
  LogicalResult selectOp(graph::BiasAddOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    int64_t cols = shapeOf(op.getResult()).back();
    auto k = s.emit<rt::BiasAddOp>(operands.all());
    k.setRowsAttr(s.i(numElements(op.getType()) / cols));
    k.setColsAttr(s.i(cols));
    return success();
  }
};

struct AttentionMaskPattern : OpKernelPattern<graph::AttentionMaskOp> {
  LogicalResult selectOp(graph::AttentionMaskOp op,
                         const LoweredOperands &operands,
                         KernelSelection &s) const override {
    auto k = s.emit<rt::AttentionMaskOp>(operands.all());
    k.setCountAttr(s.i(numElements(op.getType())));
    k.setFillAttr(s.f(op.getFill()));
    return success();
  }
};

} // namespace

void lowering::populateElementwisePatterns(KernelPatterns &patterns) {
  patterns.add<CountPattern<graph::AddOp, rt::AddOp>, graph::AddOp>();
  patterns.add<CountPattern<graph::SubOp, rt::SubOp>, graph::SubOp>();
  patterns.add<CountPattern<graph::MulOp, rt::MulOp>, graph::MulOp>();
  patterns.add<CountPattern<graph::DivOp, rt::DivOp>, graph::DivOp>();
  patterns.add<CountPattern<graph::GeluOp, rt::GeluOp>, graph::GeluOp>();
  patterns.add<CountPattern<graph::GeluGradOp, rt::GeluGradOp>,
               graph::GeluGradOp>();
  patterns.add<CountPattern<graph::TanhOp, rt::TanhOp>, graph::TanhOp>();
  patterns.add<CountPattern<graph::TanhGradOp, rt::TanhGradOp>,
               graph::TanhGradOp>();
  patterns.add<ScalePattern, graph::ScaleOp>();
  patterns.add<BiasAddPattern, graph::BiasAddOp>();
  patterns.add<AttentionMaskPattern, graph::AttentionMaskOp>();
}
