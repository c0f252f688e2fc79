//===- KernelSelection.cpp - one entry function -> kernel calls -----------===//
//
// The control flow of kernel selection (KernelSelection.h): arguments and
// results, blocks, loops, phases, inlined calls, index arithmetic and state
// accesses. Ops that compute go to selectKernel (OpKernels.cpp).
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelSelection.h"
#include "dialects/graph/GraphAttributes.h"

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

KernelSelection::KernelSelection(ModuleOp module,
                                 const llvm::StringMap<int> &stateIds,
                                 const std::vector<StateInfo> &states)
    : module(module), symbols(module), stateIds(stateIds) {
  for (const StateInfo &s : states) {
    Buffer buf;
    buf.bytes = s.bytes;
    buf.isState = true;
    program.buffers.push_back(buf);
  }
}

Ref KernelSelection::temp(Type type, StringRef label) {
  Buffer buf;
  buf.bytes = type ? byteSize(type) : 0; // no type: the caller sizes it
  buf.label = label.str();
  program.buffers.push_back(buf);
  return Ref{static_cast<int>(program.buffers.size() - 1), Affine(), buf.bytes};
}

Ref KernelSelection::workspace(int64_t bytes, StringRef label) {
  Ref w = temp(Type(), label);
  program.buffers[w.buffer].bytes = w.bytes = bytes;
  return w;
}

Ref KernelSelection::stateRef(StringRef name) const {
  int id = stateIds.lookup(name);
  return Ref{id, Affine(), program.buffers[id].bytes};
}

Instr &KernelSelection::emit(StringRef kernel, ArrayRef<Ref> bufs,
                             ArrayRef<int64_t> ints, ArrayRef<double> floats) {
  Instr in;
  in.kernel = kernel.str();
  in.buffers.assign(bufs.begin(), bufs.end());
  for (int64_t v : ints)
    in.ints.push_back(Affine::constant(v));
  in.floats.assign(floats.begin(), floats.end());
  program.instrs.push_back(std::move(in));
  return program.instrs.back();
}

// Fills `r` with a splat value: fill for f32, fill_i32 for i32.
void KernelSelection::emitFill(const Ref &r, Type type, double value) {
  if (getElementTypeOrSelf(type).isInteger(32))
    emit("fill_i32", {r}, {numElements(type), static_cast<int64_t>(value)});
  else
    emit("fill", {r}, {numElements(type)}, {value});
}

FailureOr<Ref> KernelSelection::ref(Frame &f, Value v, Operation *user) {
  if (auto splat = f.splats.find(v); splat != f.splats.end()) {
    Ref r = temp(v.getType());
    emitFill(r, v.getType(), splat->second);
    f.refs[v] = r;
    f.splats.erase(splat);
    return r;
  }
  auto it = f.refs.find(v);
  if (it == f.refs.end())
    return user->emitOpError() << "ferry-select-kernels: operand has no "
                                  "buffer (unsupported producer)";
  return it->second;
}

FailureOr<Affine> KernelSelection::affine(Frame &f, Value v, Operation *user) {
  auto it = f.ints.find(v);
  if (it == f.ints.end())
    return user->emitOpError() << "ferry-select-kernels: index operand is not "
                                  "affine in constants, loop counters and "
                                  "program inputs";
  return it->second;
}

LogicalResult KernelSelection::lower(func::FuncOp fn) {
  program.name = fn.getSymName().str();
  std::string programName = program.name;
  Frame frame;
  Block &body = fn.getBody().front();
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto name = fn.getArgAttrOfType<StringAttr>(i, ferry::graph::attrs::kInput);
    std::string argName = name ? name.str() : "arg" + std::to_string(i);
    if (isa<IndexType, IntegerType>(arg.getType())) {
      frame.ints[arg] = Affine::reg(program.registers++);
      inputs.push_back(argName);
      continue;
    }
    std::string state = "arg." + programName + "." + argName;
    if (!stateIds.count(state))
      return fn.emitOpError() << "argument " << i << " has no input state";
    frame.refs[arg] = stateRef(state);
  }
  SmallVector<Value> results;
  if (failed(lowerBlock(body, frame, &results)))
    return failure();
  for (auto [i, v] : llvm::enumerate(results)) {
    FailureOr<Ref> src = ref(frame, v, fn);
    if (failed(src))
      return failure();
    Ref dst = stateRef("output." + programName + "." + std::to_string(i));
    emit("copy", {*src, dst}, {dst.bytes});
  }
  return success();
}

LogicalResult KernelSelection::lowerBlock(Block &block, Frame &frame,
                                          SmallVectorImpl<Value> *results) {
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (results)
        results->assign(ret.getOperands().begin(), ret.getOperands().end());
      continue;
    }
    if (isa<scf::YieldOp>(op))
      continue; // handled by lowerLoop
    if (failed(lowerOp(op, frame)))
      return failure();
  }
  return success();
}

LogicalResult KernelSelection::lowerLoop(scf::ForOp loop, Frame &frame) {
  FailureOr<Affine> lb = affine(frame, loop.getLowerBound(), loop);
  FailureOr<Affine> ub = affine(frame, loop.getUpperBound(), loop);
  FailureOr<Affine> st = affine(frame, loop.getStep(), loop);
  if (failed(lb) || failed(ub) || failed(st))
    return failure();
  if (!lb->isConstant() || !ub->isConstant() || !st->isConstant() ||
      st->c != 1 || lb->c != 0)
    return loop.emitOpError() << "ferry-lower-to-rt lowers loops from 0 "
                                 "with step 1 and constant bounds";
  if (ub->c <= 0) { // runs no iteration: the results are the initial values
    for (auto [init, result] :
         llvm::zip(loop.getInitArgs(), loop.getResults())) {
      FailureOr<Ref> src = ref(frame, init, loop);
      if (failed(src))
        return failure();
      frame.refs[result] = *src;
    }
    return success();
  }
  // Carried values: one buffer each, initialised before the loop.
  SmallVector<Ref> carried;
  for (auto [init, arg] :
       llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs())) {
    FailureOr<Ref> src = ref(frame, init, loop);
    if (failed(src))
      return failure();
    Ref buf = temp(arg.getType());
    emit("copy", {*src, buf}, {buf.bytes});
    carried.push_back(buf);
    frame.refs[arg] = buf;
  }
  auto reg = static_cast<unsigned>(program.registers++);
  frame.ints[loop.getInductionVar()] = Affine::reg(reg);
  size_t loopIndex = program.instrs.size();
  Instr header;
  header.loopCount = ub->c;
  header.loopRegister = reg;
  program.instrs.push_back(header);
  if (failed(lowerBlock(*loop.getBody(), frame, nullptr)))
    return failure();
  // The yield is a parallel assignment: when a yielded value lives in another
  // carried buffer, stage every source in a temporary first so no copy
  // overwrites a value a later copy reads.
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  SmallVector<Ref> sources;
  bool overlapping = false;
  for (auto [k, value] : llvm::enumerate(yield.getOperands())) {
    FailureOr<Ref> src = ref(frame, value, yield);
    if (failed(src))
      return failure();
    for (auto [j, buf] : llvm::enumerate(carried))
      overlapping |= j != k && src->buffer == buf.buffer;
    sources.push_back(*src);
  }
  if (overlapping && carried.size() > 1)
    for (auto [k, src] : llvm::enumerate(sources)) {
      Ref staged = temp(yield.getOperand(k).getType());
      emit("copy", {src, staged}, {staged.bytes});
      src = staged;
    }
  for (auto [src, buf] : llvm::zip(sources, carried)) {
    if (src.buffer == buf.buffer && src.offset.c == buf.offset.c &&
        src.offset.isConstant())
      continue;
    emit("copy", {src, buf}, {buf.bytes});
  }
  program.instrs[loopIndex].loopBody =
      static_cast<int64_t>(program.instrs.size() - loopIndex - 1);
  for (auto [result, buf] : llvm::zip(loop.getResults(), carried))
    frame.refs[result] = buf;
  return success();
}

// A phase: its instructions between a begin and an end marker, which the
// phased placement (below) turns into host transfers.
LogicalResult KernelSelection::lowerPhase(PhaseOp phase, Frame &frame) {
  int64_t id = static_cast<int64_t>(program.phaseNames.size());
  program.phaseNames.push_back(phase.getPhaseName().str());
  Instr begin;
  begin.kernel = "phase_begin";
  begin.ints.push_back(Affine::constant(id));
  program.instrs.push_back(begin);
  if (failed(lowerBlock(phase.getBody().front(), frame, nullptr)))
    return failure();
  Instr end;
  end.kernel = "phase_end";
  end.ints.push_back(Affine::constant(id));
  program.instrs.push_back(end);
  return success();
}

LogicalResult KernelSelection::lowerOp(Operation &op, Frame &f) {
  // Index arithmetic and constants.
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
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op)) {
    FailureOr<Affine> a = affine(f, op.getOperand(0), &op);
    FailureOr<Affine> b = affine(f, op.getOperand(1), &op);
    if (failed(a) || failed(b))
      return failure();
    if (isa<arith::AddIOp>(op))
      f.ints[op.getResult(0)] = *a + *b;
    else if (isa<arith::SubIOp>(op))
      f.ints[op.getResult(0)] = *a + (*b * -1);
    else if (a->isConstant())
      f.ints[op.getResult(0)] = *b * a->c;
    else if (b->isConstant())
      f.ints[op.getResult(0)] = *a * b->c;
    else
      return op.emitOpError() << "multiplies two register-dependent indices; "
                                 "addresses must stay affine";
    return success();
  }

  // Control flow.
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return lowerLoop(loop, f);
  if (auto phase = dyn_cast<PhaseOp>(op))
    return lowerPhase(phase, f);
  if (auto call = dyn_cast<func::CallOp>(op))
    return lowerCall(call, f);
  if (isa<ParameterRefOp, ParameterSliceOp, StoreOp, AccumulateOp, ReshapeOp>(
          op))
    return lowerStateAccess(op, f);
  return selectKernel(op, f);
}

// Inlined: the callee's block lowered in a frame of the call's operands.
LogicalResult KernelSelection::lowerCall(func::CallOp call, Frame &f) {
  Operation &op = *call;
  auto R = [&](Value v) { return ref(f, v, &op); };
  {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal())
      return call.emitOpError() << "calls a function without a body";
    Frame inner;
    Block &body = callee.getBody().front();
    for (auto [arg, operand] :
         llvm::zip(body.getArguments(), call.getOperands())) {
      if (isa<IndexType, IntegerType>(arg.getType())) {
        FailureOr<Affine> a = affine(f, operand, &op);
        if (failed(a))
          return failure();
        inner.ints[arg] = *a;
      } else {
        FailureOr<Ref> r = R(operand);
        if (failed(r))
          return failure();
        inner.refs[arg] = *r;
      }
    }
    SmallVector<Value> results;
    if (failed(lowerBlock(body, inner, &results)))
      return failure();
    for (auto [result, value] : llvm::zip(call.getResults(), results)) {
      if (auto it = inner.refs.find(value); it != inner.refs.end())
        f.refs[result] = it->second;
      else if (auto jt = inner.ints.find(value); jt != inner.ints.end())
        f.ints[result] = jt->second;
      else
        return call.emitOpError() << "result has no lowered value";
    }
    return success();
  }
}

// State reads are views; stores, accumulations are kernels.
LogicalResult KernelSelection::lowerStateAccess(Operation &op, Frame &f) {
  auto R = [&](Value v) { return ref(f, v, &op); };
  if (auto read = dyn_cast<ParameterRefOp>(op)) {
    Ref r = stateRef(read.getName());
    f.refs[read.getResult()] = r;
    return success();
  }
  if (auto slice = dyn_cast<ParameterSliceOp>(op)) {
    FailureOr<Affine> layer = affine(f, slice.getLayer(), &op);
    if (failed(layer))
      return failure();
    Ref r = stateRef(slice.getName());
    int64_t entry = byteSize(slice.getType());
    r.offset = *layer * entry;
    r.bytes = entry;
    f.refs[slice.getResult()] = r;
    return success();
  }
  if (isa<StoreOp, AccumulateOp>(op)) {
    Value value = op.getOperand(0);
    auto name = op.getAttrOfType<FlatSymbolRefAttr>("name").getValue();
    Ref dst = stateRef(name);
    Value layerValue = isa<StoreOp>(op) ? cast<StoreOp>(op).getLayer()
                                        : cast<AccumulateOp>(op).getLayer();
    if (layerValue) {
      FailureOr<Affine> layer = affine(f, layerValue, &op);
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
    FailureOr<Ref> src = R(value);
    if (failed(src))
      return failure();
    if (isa<StoreOp>(op))
      emit("copy", {*src, dst}, {dst.bytes});
    else
      emit("accumulate", {*src, dst}, {numElements(value.getType())});
    return success();
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    FailureOr<Ref> src = R(reshape.getInput());
    if (failed(src))
      return failure();
    f.refs[reshape.getResult()] = *src;
    return success();
  }
  return op.emitOpError() << "is not a state access";
}
