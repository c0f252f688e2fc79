//===- KernelSelection.cpp - one entry function -> kernel calls -----------===//
//
// The control flow of kernel selection (KernelSelection.h): arguments and
// results, blocks, loops, phases, inlined calls; ops that compute go to
// their pattern (KernelPatterns.h). Values, index arithmetic and state
// accesses are KernelSelectionValues.cpp's.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/KernelSelection.h"
#include "dialects/graph/GraphAttributes.h"
#include "dialects/rt/RtAttributes.h"
#include "passes/lowering/KernelPatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::graph;
using namespace ferry::lowering;

KernelSelection::KernelSelection(rt::ProgramOp program, SymbolTable &symbols,
                                 const std::vector<StateInfo> &stateInfos,
                                 const KernelPatterns &patterns)
    : program(program), symbols(symbols), patterns(patterns),
      b(program.getContext()) {
  // A buffer per state, in declaration order; those no kernel takes go
  // when the program is done.
  Block &top = program.getBody().front();
  b.setInsertionPointToEnd(&top);
  for (const StateInfo &s : stateInfos) {
    Value ref = rt::StateRefOp::create(b, program.getLoc(),
                                       b.getType<rt::BufferType>(), s.name);
    states[s.name] = BufferRange{ref, Affine(), s.bytes};
  }
}

LogicalResult KernelSelection::lower(func::FuncOp fn) {
  std::string programName = fn.getSymName().str();
  Frame top;
  frame = &top;
  Block &body = fn.getBody().front();
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto name = fn.getArgAttrOfType<StringAttr>(i, ferry::graph::attrs::kInput);
    std::string argName = name ? name.str() : "arg" + std::to_string(i);
    if (isa<IndexType, IntegerType>(arg.getType())) {
      top.ints[arg] = Affine::reg(registers++);
      inputs.push_back(argName);
      continue;
    }
    std::string stateName = "arg." + programName + "." + argName;
    if (!states.count(stateName))
      return fn.emitOpError() << "argument " << i << " has no input state";
    top.ranges[arg] = state(stateName);
  }
  SmallVector<Value> results;
  if (failed(lowerBlock(body, &results)))
    return failure();
  for (auto [i, v] : llvm::enumerate(results)) {
    FailureOr<BufferRange> src = range(v, fn);
    if (failed(src))
      return failure();
    emitCopy(*src, state("output." + programName + "." + std::to_string(i)));
  }
  program.setRegisters(static_cast<uint64_t>(registers));
  if (!phaseNames.empty())
    program->setAttr(rt::attrs::kPhaseNames, b.getStrArrayAttr(phaseNames));
  eraseUnusedBuffers(program);
  return success();
}

LogicalResult KernelSelection::lowerBlock(Block &block,
                                          SmallVectorImpl<Value> *results) {
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (results)
        results->assign(ret.getOperands().begin(), ret.getOperands().end());
      continue;
    }
    if (isa<scf::YieldOp>(op))
      continue; // handled by lowerLoop
    if (failed(lowerOp(op)))
      return failure();
  }
  return success();
}

LogicalResult KernelSelection::lowerLoop(scf::ForOp loop) {
  FailureOr<Affine> lb = affine(loop.getLowerBound(), loop);
  FailureOr<Affine> ub = affine(loop.getUpperBound(), loop);
  FailureOr<Affine> st = affine(loop.getStep(), loop);
  if (failed(lb) || failed(ub) || failed(st))
    return failure();
  if (!lb->isConstant() || !ub->isConstant() || !st->isConstant() ||
      st->c != 1 || lb->c != 0)
    return loop.emitOpError() << "ferry-lower-to-rt lowers loops from 0 "
                                 "with step 1 and constant bounds";
  if (ub->c <= 0) { // runs no iteration: the results are the initial values
    for (auto [init, result] :
         llvm::zip(loop.getInitArgs(), loop.getResults())) {
      FailureOr<BufferRange> src = range(init, loop);
      if (failed(src))
        return failure();
      frame->ranges[result] = *src;
    }
    return success();
  }
  // Carried values: one buffer each, initialised before the loop.
  SmallVector<BufferRange> carried;
  for (auto [init, arg] :
       llvm::zip(loop.getInitArgs(), loop.getRegionIterArgs())) {
    FailureOr<BufferRange> src = range(init, loop);
    if (failed(src))
      return failure();
    BufferRange buf = temp(arg.getType());
    emitCopy(*src, buf);
    carried.push_back(buf);
    frame->ranges[arg] = buf;
  }
  auto reg = static_cast<unsigned>(registers++);
  frame->ints[loop.getInductionVar()] = Affine::reg(reg);
  auto header =
      rt::LoopOp::create(b, program.getLoc(), reg, ub->c, IntegerAttr());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(b.createBlock(&header.getBody()));
  if (failed(lowerBlock(*loop.getBody(), nullptr)))
    return failure();
  // The yield is a parallel assignment: when a yielded value lives in another
  // carried buffer, stage every source in a temporary first so no copy
  // overwrites a value a later copy reads.
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  SmallVector<BufferRange> sources;
  bool overlapping = false;
  for (auto [k, value] : llvm::enumerate(yield.getOperands())) {
    FailureOr<BufferRange> src = range(value, yield);
    if (failed(src))
      return failure();
    for (auto [j, buf] : llvm::enumerate(carried))
      overlapping |= j != k && src->buffer == buf.buffer;
    sources.push_back(*src);
  }
  if (overlapping && carried.size() > 1)
    for (auto [k, src] : llvm::enumerate(sources)) {
      BufferRange staged = temp(yield.getOperand(k).getType());
      emitCopy(src, staged);
      src = staged;
    }
  for (auto [src, buf] : llvm::zip(sources, carried)) {
    if (src.buffer == buf.buffer && src.offset.c == buf.offset.c &&
        src.offset.isConstant())
      continue;
    emitCopy(src, buf);
  }
  for (auto [result, buf] : llvm::zip(loop.getResults(), carried))
    frame->ranges[result] = buf;
  return success();
}

// A phase: its kernels between a begin and an end marker, which the phased
// placement turns into host transfers.
LogicalResult KernelSelection::lowerPhase(graph::PhaseOp phase) {
  auto id = static_cast<int64_t>(phaseNames.size());
  phaseNames.push_back(phase.getPhaseName());
  emit<rt::PhaseBeginOp>({}).setPhaseAttr(i(id));
  if (failed(lowerBlock(phase.getBody().front(), nullptr)))
    return failure();
  emit<rt::PhaseEndOp>({}).setPhaseAttr(i(id));
  return success();
}

LogicalResult KernelSelection::lowerOp(Operation &op) {
  if (isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp>(op))
    return lowerIndex(op);
  // Control flow.
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return lowerLoop(loop);
  if (auto phase = dyn_cast<graph::PhaseOp>(op))
    return lowerPhase(phase);
  if (auto call = dyn_cast<func::CallOp>(op))
    return lowerCall(call);
  if (isa<ParameterRefOp, ParameterSliceOp, StoreOp, AccumulateOp, ReshapeOp,
          CopyToGroupOp>(op))
    return lowerStateAccess(op);
  return selectKernel(op);
}

// Inlined: the callee's block lowered in a frame of the call's operands.
LogicalResult KernelSelection::lowerCall(func::CallOp call) {
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  if (!callee || callee.isExternal())
    return call.emitOpError() << "calls a function without a body";
  Frame inner;
  Block &body = callee.getBody().front();
  for (auto [arg, operand] :
       llvm::zip(body.getArguments(), call.getOperands())) {
    if (isa<IndexType, IntegerType>(arg.getType())) {
      FailureOr<Affine> a = affine(operand, call);
      if (failed(a))
        return failure();
      inner.ints[arg] = *a;
    } else {
      FailureOr<BufferRange> r = range(operand, call);
      if (failed(r))
        return failure();
      inner.ranges[arg] = *r;
    }
  }
  Frame *outer = frame;
  frame = &inner;
  SmallVector<Value> results;
  LogicalResult lowered = lowerBlock(body, &results);
  frame = outer;
  if (failed(lowered))
    return failure();
  for (auto [result, value] : llvm::zip(call.getResults(), results)) {
    if (auto it = inner.ranges.find(value); it != inner.ranges.end())
      frame->ranges[result] = it->second;
    else if (auto jt = inner.ints.find(value); jt != inner.ints.end())
      frame->ints[result] = jt->second;
    else
      return call.emitOpError() << "result has no lowered value";
  }
  return success();
}

// Operands first (all must have buffers), then a temporary per result, then
// the packed rows' operands; then the op's pattern.
LogicalResult KernelSelection::selectKernel(Operation &op) {
  const KernelPattern *pattern = patterns.lookup(op);
  if (!pattern)
    return op.emitOpError() << "ferry-lower-to-rt has no kernel for this op";
  SmallVector<Value> packed = pattern->packedOperands(op);
  LoweredOperands lowered;
  for (Value v : op.getOperands()) {
    if (!isa<RankedTensorType>(v.getType()) || llvm::is_contained(packed, v))
      continue;
    FailureOr<BufferRange> r = range(v, &op);
    if (failed(r))
      return failure();
    lowered.ins.push_back(*r);
  }
  for (Value r : op.getResults()) {
    if (!isa<RankedTensorType>(r.getType()))
      return op.emitOpError() << "ferry-lower-to-rt has no kernel for this op";
    BufferRange out = temp(r.getType());
    frame->ranges[r] = out;
    lowered.outs.push_back(out);
  }
  for (Value v : packed) {
    FailureOr<BufferRange> r = range(v, &op);
    if (failed(r))
      return failure();
    lowered.packed.push_back(*r);
  }
  return pattern->select(op, lowered, *this);
}
