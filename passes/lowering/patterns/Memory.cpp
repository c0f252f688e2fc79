//===- Memory.cpp - kernel patterns of ops that fill buffers --------------===//
//
// graph.iota -> iota (dialects/rt/kernels/Memory.td): positions counted
// along one dimension. (Copies and fills come from stores, loop-carried
// values and splat constants: KernelSelection emits them itself.)
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

struct IotaPattern : OpKernelPattern<graph::IotaOp> {
  LogicalResult selectOp(graph::IotaOp op, const LoweredOperands &operands,
                         KernelSelection &s) const override {
    ArrayRef<int64_t> shape = shapeOf(op.getResult());
    auto dim = static_cast<int64_t>(op.getDim());
    auto k = s.emit<rt::IotaOp>(operands.all());
    k.setOuterAttr(s.i(product(shape.take_front(dim))));
    k.setSizeAttr(s.i(shape[dim]));
    k.setInnerAttr(s.i(product(shape.drop_front(dim + 1))));
    return success();
  }
};

} // namespace

void lowering::populateMemoryPatterns(KernelPatterns &patterns) {
  patterns.add<IotaPattern, graph::IotaOp>();
}
