//===- KernelSelectionValues.cpp - values, ranges and kernels of a program ===//
//
// KernelSelection's value map and what it gives the patterns (the range of
// a value, a splat's fill at its first read, temporaries, kernel ops), and
// the graph ops that only map values: index arithmetic folded into affine
// expressions, state reads as views, stores and accumulations.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelPatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::graph;
using namespace ferry::lowering;

int64_t lowering::numElements(Type t) {
  return cast<RankedTensorType>(t).getNumElements();
}

int64_t lowering::byteSize(Type t) {
  auto rt = cast<RankedTensorType>(t);
  return rt.getNumElements() *
         static_cast<int64_t>(rt.getElementType().getIntOrFloatBitWidth() / 8);
}

BufferRange KernelSelection::temp(Type type, StringRef label) {
  return workspace(byteSize(type), label);
}

BufferRange KernelSelection::workspace(int64_t bytes, StringRef label,
                                       int64_t scratch) {
  rt::AllocOp alloc = appendAlloc(program, bytes, label);
  if (scratch > 0)
    alloc.setScratch(static_cast<uint64_t>(scratch));
  return BufferRange{alloc, Affine(), bytes};
}

BufferRange KernelSelection::state(StringRef name) const {
  return states.lookup(name);
}

ArrayAttr KernelSelection::list(ArrayRef<int64_t> values) {
  SmallVector<Attribute> attrs;
  for (int64_t v : values)
    attrs.push_back(i(v));
  return b.getArrayAttr(attrs);
}

rt::KernelCallOpInterface
KernelSelection::emitKernel(kernels::Kernel kernel,
                            ArrayRef<BufferRange> buffers) {
  SmallVector<Value> ranges;
  for (const BufferRange &r : buffers)
    ranges.push_back(rt::SliceOp::create(b, program.getLoc(),
                                         b.getType<rt::RangeType>(), r.buffer,
                                         r.offset.attr(b), r.bytes));
  return rt::createKernelOp(b, program.getLoc(), kernel, ranges);
}

void KernelSelection::emitCopy(const BufferRange &src, const BufferRange &dst) {
  emit<rt::CopyOp>({src, dst}).setBytesAttr(i(dst.bytes));
}

// Fills `r` with a splat value: fill for f32, fill_i32 for i32.
void KernelSelection::emitFill(const BufferRange &r, Type type, double value) {
  if (getElementTypeOrSelf(type).isInteger(32)) {
    auto fill = emit<rt::FillI32Op>({r});
    fill.setCountAttr(i(numElements(type)));
    fill.setValueAttr(i(static_cast<int64_t>(value)));
  } else {
    auto fill = emit<rt::FillOp>({r});
    fill.setCountAttr(i(numElements(type)));
    fill.setValueAttr(f(value));
  }
}

FailureOr<BufferRange> KernelSelection::range(Value v, Operation *user) {
  if (auto splat = frame->splats.find(v); splat != frame->splats.end()) {
    BufferRange r = temp(v.getType());
    emitFill(r, v.getType(), splat->second);
    frame->ranges[v] = r;
    frame->splats.erase(splat);
    return r;
  }
  auto it = frame->ranges.find(v);
  if (it == frame->ranges.end())
    return user->emitOpError() << "ferry-select-kernels: operand has no "
                                  "buffer (unsupported producer)";
  return it->second;
}

FailureOr<Affine> KernelSelection::affine(Value v, Operation *user) {
  auto it = frame->ints.find(v);
  if (it == frame->ints.end())
    return user->emitOpError() << "ferry-select-kernels: index operand is not "
                                  "affine in constants, loop counters and "
                                  "program inputs";
  return it->second;
}

SmallVector<BufferRange> LoweredOperands::all() const {
  SmallVector<BufferRange> v(ins);
  v.append(outs.begin(), outs.end());
  v.append(packed.begin(), packed.end());
  return v;
}

// Index arithmetic and constants.
LogicalResult KernelSelection::lowerIndex(Operation &op) {
  Frame &f = *frame;
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    if (auto i = dyn_cast<IntegerAttr>(c.getValue())) {
      f.ints[c.getResult()] = Affine::constant(i.getInt());
      return success();
    }
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (dense && dense.isSplat() && isa<FloatType>(dense.getElementType())) {
      f.splats[c.getResult()] =
          dense.getSplatValue<APFloat>().convertToDouble();
      return success();
    }
    if (dense && dense.isSplat() && dense.getElementType().isInteger(32)) {
      f.splats[c.getResult()] =
          static_cast<double>(dense.getSplatValue<APInt>().getSExtValue());
      return success();
    }
    return op.emitOpError() << "ferry-lower-to-rt supports integer scalars "
                               "and splat f32 or i32 constants only";
  }
  FailureOr<Affine> x = affine(op.getOperand(0), &op);
  FailureOr<Affine> y = affine(op.getOperand(1), &op);
  if (failed(x) || failed(y))
    return failure();
  if (isa<arith::AddIOp>(op))
    f.ints[op.getResult(0)] = *x + *y;
  else if (isa<arith::SubIOp>(op))
    f.ints[op.getResult(0)] = *x + (*y * -1);
  else if (x->isConstant())
    f.ints[op.getResult(0)] = *y * x->c;
  else if (y->isConstant())
    f.ints[op.getResult(0)] = *x * y->c;
  else
    return op.emitOpError() << "multiplies two register-dependent indices; "
                               "addresses must stay affine";
  return success();
}

// State reads are views; stores, accumulations are kernels.
LogicalResult KernelSelection::lowerStateAccess(Operation &op) {
  if (auto read = dyn_cast<ParameterRefOp>(op)) {
    frame->ranges[read.getResult()] = state(read.getName());
    return success();
  }
  if (auto slice = dyn_cast<ParameterSliceOp>(op)) {
    FailureOr<Affine> layer = affine(slice.getLayer(), &op);
    if (failed(layer))
      return failure();
    BufferRange r = state(slice.getName());
    int64_t entry = byteSize(slice.getType());
    r.offset = *layer * entry;
    r.bytes = entry;
    frame->ranges[slice.getResult()] = r;
    return success();
  }
  if (isa<StoreOp, AccumulateOp>(op)) {
    Value value = op.getOperand(0);
    auto name = op.getAttrOfType<FlatSymbolRefAttr>("name").getValue();
    BufferRange dst = state(name);
    Value layerValue = isa<StoreOp>(op) ? cast<StoreOp>(op).getLayer()
                                        : cast<AccumulateOp>(op).getLayer();
    if (layerValue) {
      FailureOr<Affine> layer = affine(layerValue, &op);
      if (failed(layer))
        return failure();
      dst.offset = *layer * byteSize(value.getType());
      dst.bytes = byteSize(value.getType());
    }
    // Storing a splat constant is a fill of the destination.
    if (auto c = value.getDefiningOp<arith::ConstantOp>();
        c && isa<StoreOp>(op)) {
      auto dense = cast<DenseElementsAttr>(c.getValue());
      emitFill(dst, value.getType(),
               isa<FloatType>(dense.getElementType())
                   ? dense.getSplatValue<APFloat>().convertToDouble()
                   : static_cast<double>(
                         dense.getSplatValue<APInt>().getSExtValue()));
      return success();
    }
    FailureOr<BufferRange> src = range(value, &op);
    if (failed(src))
      return failure();
    if (isa<StoreOp>(op)) {
      emitCopy(*src, dst);
      return success();
    }
    emit<rt::AccumulateOp>({*src, dst})
        .setCountAttr(i(numElements(value.getType())));
    return success();
  }
  // Views of their input's buffer: a reshape, and Megatron's f (its
  // gradient's all-reduce is a kernel of its own).
  if (isa<ReshapeOp, CopyToGroupOp>(op)) {
    FailureOr<BufferRange> src = range(op.getOperand(0), &op);
    if (failed(src))
      return failure();
    frame->ranges[op.getResult(0)] = *src;
    return success();
  }
  return op.emitOpError() << "is not a state access";
}
