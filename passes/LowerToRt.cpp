//===- LowerToRt.cpp - graph IR -> rt programs with a memory plan ---------===//
//
// ferry-lower-to-rt turns each entry function (option `programs`) into an
// rt.program and every graph.parameter / graph.variable into an rt.state:
//
// * States are laid out first, each at a fixed, aligned arena offset.
// * Every tensor value becomes a byte range. Reads of states
//   (parameter_ref, parameter_slice at a layer index) and reshapes are views,
//   not copies. Other results get a temporary buffer.
// * Calls are inlined; scf.for becomes rt.loop with its own register, and
//   loop-carried tensors live in one buffer each (copied in before the loop
//   and at the end of the body when the yielded value lives elsewhere).
// * Index arithmetic (arith.addi/subi/muli on constants, loop counters and
//   program inputs) folds into affine expressions, so addresses and kernel
//   parameters such as the dropout sample offset depend on registers.
// * Temporaries are placed by a liveness-based plan (Analysis/MemoryPlan):
//   a buffer lives from its first to its last instruction, over whole loops
//   when it is used both inside and outside one.
//
// Then the graph and func ops are erased: the module holds only rt ops.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"
#include "dialects/rt/RtDialect.h"
#include "passes/Analysis/MemoryPlan.h"
#include "runtime/executable/KernelTable.h"
#include "runtime/random/Philox.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <map>

namespace ferry {
#define GEN_PASS_DEF_LOWERTORTPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry;
using namespace ferry::graph;

namespace {

constexpr int64_t kAlignment = 64;

int64_t alignUp(int64_t v) {
  return (v + kAlignment - 1) / kAlignment * kAlignment;
}

// c + sum coeffs[r] * register r.
struct Affine {
  int64_t c = 0;
  SmallVector<int64_t> coeffs;

  static Affine constant(int64_t v) { return Affine{v, {}}; }
  static Affine reg(unsigned r) {
    Affine a;
    a.coeffs.assign(r + 1, 0);
    a.coeffs[r] = 1;
    return a;
  }
  Affine operator+(const Affine &o) const {
    Affine r = *this;
    r.c += o.c;
    if (r.coeffs.size() < o.coeffs.size())
      r.coeffs.resize(o.coeffs.size(), 0);
    for (size_t i = 0; i < o.coeffs.size(); ++i)
      r.coeffs[i] += o.coeffs[i];
    return r;
  }
  Affine operator*(int64_t k) const {
    Affine r = *this;
    r.c *= k;
    for (int64_t &v : r.coeffs)
      v *= k;
    return r;
  }
  bool isConstant() const {
    return llvm::all_of(coeffs, [](int64_t v) { return v == 0; });
  }
  DenseI64ArrayAttr attr(Builder &b, int64_t prefix = -1) const {
    SmallVector<int64_t> v;
    if (prefix >= 0)
      v.push_back(prefix);
    v.push_back(c);
    v.append(coeffs.begin(), coeffs.end());
    return b.getDenseI64ArrayAttr(v);
  }
};

// A byte range: buffer id (a state or a temporary), offset within it, size.
struct Ref {
  int buffer = -1;
  Affine offset;
  int64_t bytes = 0;
};

struct Buffer {
  int64_t bytes = 0;
  bool isState = false;
  int64_t stateOffset = 0;
  int64_t first = INT64_MAX, last = -1; // instruction positions
  std::string label; // for reports: the state a staging buffer holds
};

struct Instr {
  std::string kernel; // empty for a loop
  SmallVector<Ref> buffers;
  SmallVector<Affine> ints;
  SmallVector<double> floats;
  int64_t loopCount = 0, loopRegister = 0, loopBody = 0;
  int64_t parityRegister = -1; // a loop's counter & 1 (phased prefetch)
};

struct StateInfo {
  std::string name;
  RankedTensorType type;
  std::string role, init, hf;
  double std = 0;
  int64_t initRows = 0; // rows the init applies to (0: all); the rest are 0
  bool stacked = false, noWeightDecay = false;
  int64_t offset = 0, bytes = 0;
};

int64_t numElements(Type t) {
  return cast<RankedTensorType>(t).getNumElements();
}
int64_t byteSize(Type t) {
  auto rt = cast<RankedTensorType>(t);
  return rt.getNumElements() *
         static_cast<int64_t>(rt.getElementType().getIntOrFloatBitWidth() / 8);
}
ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

std::string roleOf(Operation *decl) {
  if (isa<ParameterOp>(decl))
    return "parameter";
  StringRef name = cast<VariableOp>(decl).getSymName();
  if (name.starts_with("grad."))
    return "gradient";
  if (name.starts_with("adam_"))
    return "optimizer_state";
  if (name.starts_with("input.") || name.starts_with("arg."))
    return "input";
  if (name.starts_with("output."))
    return "output";
  if (name.starts_with("metric."))
    return "metric";
  if (name.starts_with("stash."))
    return "stash";
  return "state";
}

// Lowers one entry function.
class ProgramLowering {
public:
  ProgramLowering(ModuleOp module, llvm::StringMap<int> &stateIds,
                  std::vector<StateInfo> &states)
      : module(module), symbols(module), stateIds(stateIds), states(states) {
    for (auto &s : states) {
      Buffer buf;
      buf.bytes = s.bytes;
      buf.isState = true;
      buf.stateOffset = s.offset;
      buffers.push_back(buf);
    }
  }

  LogicalResult lower(func::FuncOp fn);

  std::vector<Buffer> buffers;
  std::vector<Instr> instrs;
  SmallVector<std::string> inputs;
  unsigned registers = 0;
  std::vector<std::string> phaseNames; // by phase id

private:
  struct Frame {
    DenseMap<Value, Ref> refs;
    DenseMap<Value, Affine> ints;
    // Splat constants are filled where they are first read, not where they
    // are defined: canonicalisation hoists them to the top of the function,
    // and a constant only ever stored (zeroing a gradient) needs no
    // temporary at all. The value of an integer splat is exact in a double
    // (int32).
    DenseMap<Value, double> splats;
  };

  LogicalResult lowerBlock(Block &block, Frame &frame,
                           SmallVectorImpl<Value> *results);
  LogicalResult lowerOp(Operation &op, Frame &frame);
  LogicalResult lowerLoop(scf::ForOp loop, Frame &frame);
  LogicalResult lowerPhase(PhaseOp phase, Frame &frame);

  Ref temp(Type type) {
    Buffer buf;
    buf.bytes = byteSize(type);
    buffers.push_back(buf);
    return Ref{static_cast<int>(buffers.size() - 1), Affine(), buf.bytes};
  }
  Ref stateRef(StringRef name) {
    int id = stateIds.lookup(name);
    return Ref{id, Affine(), buffers[id].bytes};
  }
  Instr &emit(StringRef kernel, ArrayRef<Ref> bufs, ArrayRef<int64_t> ints,
              ArrayRef<double> floats = {}) {
    Instr in;
    in.kernel = kernel.str();
    in.buffers.assign(bufs.begin(), bufs.end());
    for (int64_t v : ints)
      in.ints.push_back(Affine::constant(v));
    in.floats.assign(floats.begin(), floats.end());
    instrs.push_back(std::move(in));
    return instrs.back();
  }
  // Fills `r` with a splat value: fill for f32, fill_i32 for i32.
  void emitFill(const Ref &r, Type type, double value) {
    if (getElementTypeOrSelf(type).isInteger(32))
      emit("fill_i32", {r}, {numElements(type), static_cast<int64_t>(value)});
    else
      emit("fill", {r}, {numElements(type)}, {value});
  }
  FailureOr<Ref> ref(Frame &f, Value v, Operation *user) {
    if (auto splat = f.splats.find(v); splat != f.splats.end()) {
      Ref r = temp(v.getType());
      emitFill(r, v.getType(), splat->second);
      f.refs[v] = r;
      f.splats.erase(splat);
      return r;
    }
    auto it = f.refs.find(v);
    if (it == f.refs.end())
      return user->emitOpError() << "ferry-lower-to-rt: operand has no "
                                    "buffer (unsupported producer)";
    return it->second;
  }
  FailureOr<Affine> affine(Frame &f, Value v, Operation *user) {
    auto it = f.ints.find(v);
    if (it == f.ints.end())
      return user->emitOpError() << "ferry-lower-to-rt: index operand is not "
                                    "affine in constants, loop counters and "
                                    "program inputs";
    return it->second;
  }

  ModuleOp module;
  SymbolTable symbols;
  llvm::StringMap<int> &stateIds;
  std::vector<StateInfo> &states;

public:
  std::string programName;
  int matmulInputs = 0;      // 1 bf16, 2 fp16 (training.precision)
  int64_t gemmWorkspace = 0; // cuBLASLt scratch bytes per GEMM
};

LogicalResult ProgramLowering::lower(func::FuncOp fn) {
  programName = fn.getSymName().str();
  Frame frame;
  Block &body = fn.getBody().front();
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto name = fn.getArgAttrOfType<StringAttr>(i, "ferry.input");
    std::string argName = name ? name.str() : "arg" + std::to_string(i);
    if (isa<IndexType, IntegerType>(arg.getType())) {
      frame.ints[arg] = Affine::reg(registers++);
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

LogicalResult ProgramLowering::lowerBlock(Block &block, Frame &frame,
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

LogicalResult ProgramLowering::lowerLoop(scf::ForOp loop, Frame &frame) {
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
  unsigned reg = registers++;
  frame.ints[loop.getInductionVar()] = Affine::reg(reg);
  size_t loopIndex = instrs.size();
  Instr header;
  header.loopCount = ub->c;
  header.loopRegister = reg;
  instrs.push_back(header);
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
  instrs[loopIndex].loopBody =
      static_cast<int64_t>(instrs.size() - loopIndex - 1);
  for (auto [result, buf] : llvm::zip(loop.getResults(), carried))
    frame.refs[result] = buf;
  return success();
}

// A phase: its instructions between a begin and an end marker, which the
// phased placement (below) turns into host transfers.
LogicalResult ProgramLowering::lowerPhase(PhaseOp phase, Frame &frame) {
  int64_t id = static_cast<int64_t>(phaseNames.size());
  phaseNames.push_back(phase.getPhaseName().str());
  Instr begin;
  begin.kernel = "phase_begin";
  begin.ints.push_back(Affine::constant(id));
  instrs.push_back(begin);
  if (failed(lowerBlock(phase.getBody().front(), frame, nullptr)))
    return failure();
  Instr end;
  end.kernel = "phase_end";
  end.ints.push_back(Affine::constant(id));
  instrs.push_back(end);
  return success();
}

LogicalResult ProgramLowering::lowerOp(Operation &op, Frame &f) {
  Location loc = op.getLoc();
  (void)loc;
  auto R = [&](Value v) { return ref(f, v, &op); };
  auto out = [&](Value v) {
    Ref r = temp(v.getType());
    f.refs[v] = r;
    return r;
  };

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
  if (auto call = dyn_cast<func::CallOp>(op)) {
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

  // State reads are views; stores, accumulations are kernels.
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

  // Kernels. Operands first (all must have buffers), then the result.
  SmallVector<Ref> ins;
  for (Value v : op.getOperands()) {
    if (!isa<RankedTensorType>(v.getType()))
      continue;
    FailureOr<Ref> r = R(v);
    if (failed(r))
      return failure();
    ins.push_back(*r);
  }
  SmallVector<Ref> outs;
  for (Value r : op.getResults()) {
    if (!isa<RankedTensorType>(r.getType()))
      return op.emitOpError() << "ferry-lower-to-rt has no kernel for this op";
    outs.push_back(out(r));
  }
  auto all = [&]() {
    SmallVector<Ref> v(ins);
    v.append(outs.begin(), outs.end());
    return v;
  };
  Value r0 = op.getNumResults() ? op.getResult(0) : Value();

  if (isa<AddOp, SubOp, MulOp, DivOp>(op)) {
    StringRef k = isa<AddOp>(op)   ? "add"
                  : isa<SubOp>(op) ? "sub"
                  : isa<MulOp>(op) ? "mul"
                                   : "div";
    emit(k, all(), {numElements(r0.getType())});
  } else if (auto s = dyn_cast<ScaleOp>(op)) {
    emit("scale", all(), {numElements(r0.getType())},
         {s.getFactor().convertToDouble()});
  } else if (isa<GeluOp>(op)) {
    emit("gelu", all(), {numElements(r0.getType())});
  } else if (isa<GeluGradOp>(op)) {
    emit("gelu_grad", all(), {numElements(r0.getType())});
  } else if (isa<TanhOp>(op)) {
    emit("tanh", all(), {numElements(r0.getType())});
  } else if (isa<TanhGradOp>(op)) {
    emit("tanh_grad", all(), {numElements(r0.getType())});
  } else if (isa<MatmulOp, FusedMatmulOp>(op)) {
    auto fused = dyn_cast<FusedMatmulOp>(op);
    bool transA =
        fused ? fused.getTransposeLhs() : cast<MatmulOp>(op).getTransposeLhs();
    bool transB =
        fused ? fused.getTransposeRhs() : cast<MatmulOp>(op).getTransposeRhs();
    ArrayRef<int64_t> a = shapeOf(op.getOperand(0)),
                      b = shapeOf(op.getOperand(1)), c = shapeOf(r0);
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
    SmallVector<Ref> bufs = {ins[0], ins[1], outs[0]};
    if (epilogue == 1)
      bufs.push_back(ins[2]);
    if (epilogue == 2)
      bufs.push_back(outs[1]);
    SmallVector<int64_t> ints = {batch,
                                 m,
                                 n,
                                 k,
                                 transA ? 1 : 0,
                                 transB ? 1 : 0,
                                 m * k,
                                 shared ? 0 : k * n,
                                 m * n,
                                 0};
    if (matmulInputs != 0 || gemmWorkspace > 0 || epilogue) {
      // training.precision: bf16: the inputs are rounded to bf16 and the
      // products accumulated in fp32; the rounded copies need a workspace,
      // planned like any temporary (4 bytes per input element: the CPU
      // backend keeps them as fp32, the CUDA backend as bf16). After them,
      // `gemmWorkspace` bytes of scratch for cuBLASLt (CUDA backend).
      int64_t elements = matmulInputs == 0
                             ? 0
                             : batch * m * k + (shared ? k * n : batch * k * n);
      int64_t bytes = 4 * elements + gemmWorkspace;
      if (bytes > 0) {
        Buffer w;
        w.bytes = bytes;
        w.label =
            matmulInputs != 0 ? "bf16 matmul workspace" : "gemm workspace";
        buffers.push_back(w);
        bufs.push_back(
            Ref{static_cast<int>(buffers.size() - 1), Affine(), w.bytes});
      }
      ints.push_back(matmulInputs);
    }
    if (epilogue)
      ints.push_back(epilogue);
    double alpha = fused ? fused.getAlpha().convertToDouble() : 1.0;
    emit(epilogue ? "gemm_epilogue" : "gemm", bufs, ints, {alpha});
  } else if (isa<BiasAddOp>(op)) {
    int64_t cols = shapeOf(r0).back();
    emit("bias_add", all(), {numElements(r0.getType()) / cols, cols});
  } else if (auto rln = dyn_cast<ResidualLayerNormOp>(op)) {
    ArrayRef<int64_t> shape = shapeOf(r0);
    int64_t n = numElements(r0.getType()), cols = shape.back();
    // As graph.dropout: the leading dimension is the sample.
    int64_t perSample = shape.empty() ? n : n / shape.front();
    SmallVector<int64_t> ints = {n / cols, cols, n, perSample, 0, 0, 0, 0};
    double p = 0.0;
    Instr &in = emit("residual_layer_norm", all(), ints,
                     {rln.getEpsilon().convertToDouble(), 0.0});
    if (rln.getSeed()) {
      FailureOr<Affine> seed = affine(f, rln.getSeed(), &op);
      FailureOr<Affine> layer = affine(f, rln.getLayer(), &op);
      FailureOr<Affine> offset = affine(f, rln.getSampleOffset(), &op);
      if (failed(seed) || failed(layer) || failed(offset))
        return failure();
      in.ints[4] = *seed;
      in.ints[5] = Affine::constant(
          static_cast<int64_t>(random::purposeHash(*rln.getPurpose())));
      in.ints[6] = *layer;
      in.ints[7] = *offset;
      p = rln.getProbability()->convertToDouble();
    }
    in.floats[1] = p;
  } else if (auto ln = dyn_cast<LayerNormOp>(op)) {
    int64_t cols = shapeOf(r0).back();
    emit("layer_norm", all(), {numElements(r0.getType()) / cols, cols},
         {ln.getEpsilon().convertToDouble()});
  } else if (auto lng = dyn_cast<LayerNormGradOp>(op)) {
    int64_t cols = shapeOf(r0).back();
    emit("layer_norm_grad", all(), {numElements(r0.getType()) / cols, cols},
         {lng.getEpsilon().convertToDouble()});
  } else if (auto sm = dyn_cast<SoftmaxOp>(op)) {
    ArrayRef<int64_t> s = shapeOf(r0);
    int64_t cols = s.back(), batch = s.front();
    emit("softmax", all(),
         {batch, numElements(r0.getType()) / (batch * cols), cols});
  } else if (isa<SoftmaxGradOp>(op)) {
    int64_t cols = shapeOf(r0).back();
    emit("softmax_grad", all(), {numElements(r0.getType()) / cols, cols});
  } else if (isa<DropoutOp, SoftmaxDropoutOp, DropoutSoftmaxGradOp>(op)) {
    // Dropout's ints [count, per_sample, seed, purpose, layer, offset], after
    // the softmax's (softmax_dropout) or softmax_grad's.
    unsigned s = isa<DropoutOp>(op) ? 1 : 2; // the seed operand
    FailureOr<Affine> seed = affine(f, op.getOperand(s), &op);
    FailureOr<Affine> layer = affine(f, op.getOperand(s + 1), &op);
    FailureOr<Affine> offset = affine(f, op.getOperand(s + 2), &op);
    if (failed(seed) || failed(layer) || failed(offset))
      return failure();
    int64_t n = numElements(r0.getType());
    ArrayRef<int64_t> shape = shapeOf(r0);
    int64_t perSample = shape.empty() ? n : n / shape.front();
    int64_t cols = shape.empty() ? 1 : shape.back();
    SmallVector<int64_t> ints;
    StringRef kernel = "dropout";
    if (isa<SoftmaxDropoutOp>(op)) {
      kernel = "softmax_dropout";
      ints = {shape.front(), n / (shape.front() * cols), cols};
    } else if (isa<DropoutSoftmaxGradOp>(op)) {
      kernel = "dropout_softmax_grad";
      ints = {n / cols, cols};
    }
    size_t first = ints.size();
    ints.append({n, perSample, 0,
                 static_cast<int64_t>(random::purposeHash(
                     op.getAttrOfType<StringAttr>("purpose").getValue()))});
    Instr &in =
        emit(kernel, all(), ints,
             {op.getAttrOfType<FloatAttr>("probability").getValueAsDouble()});
    in.ints[first + 2] = *seed;
    in.ints.push_back(*layer);
    in.ints.push_back(*offset);
  } else if (auto e = dyn_cast<EmbeddingOp>(op)) {
    ArrayRef<int64_t> t = shapeOf(e.getTable());
    emit("embedding", all(), {numElements(e.getIds().getType()), t[1], t[0]});
  } else if (auto e = dyn_cast<EmbeddingGradOp>(op)) {
    ArrayRef<int64_t> t = shapeOf(r0);
    std::swap(ins[0], ins[1]); // the kernel takes [ids, dy, dtable]
    emit("embedding_grad", all(),
         {numElements(e.getIds().getType()), t[1], t[0], 0});
  } else if (auto g = dyn_cast<GatherPositionsOp>(op)) {
    ArrayRef<int64_t> x = shapeOf(g.getInput()), p = shapeOf(g.getPositions());
    emit("gather_positions", all(), {x[0], x[1], p[1], x[2]});
  } else if (auto g = dyn_cast<GatherPositionsGradOp>(op)) {
    ArrayRef<int64_t> x = shapeOf(r0), p = shapeOf(g.getPositions());
    std::swap(ins[0], ins[1]); // the kernel takes [positions, dy, dx]
    emit("gather_positions_grad", all(), {x[0], x[1], p[1], x[2]});
  } else if (isa<TakeOp, TakeGradOp>(op)) {
    bool grad = isa<TakeGradOp>(op);
    ArrayRef<int64_t> x = grad ? shapeOf(r0) : shapeOf(op.getOperand(0));
    auto dim =
        static_cast<int64_t>(op.getAttrOfType<IntegerAttr>("dim").getInt());
    auto index =
        static_cast<int64_t>(op.getAttrOfType<IntegerAttr>("index").getInt());
    emit(grad ? "take_grad" : "take", all(),
         {product(x.take_front(dim)), x[dim], product(x.drop_front(dim + 1)),
          index});
  } else if (auto t = dyn_cast<TransposeOp>(op)) {
    ArrayRef<int64_t> x = shapeOf(t.getInput());
    if (x.size() > 6)
      return op.emitOpError() << "transposes of rank > 6 are not lowered";
    SmallVector<int64_t> ints = {static_cast<int64_t>(x.size())};
    ints.append(x.begin(), x.end());
    ints.append(t.getPermutation().begin(), t.getPermutation().end());
    emit("transpose", all(), ints);
  } else if (isa<ReduceOp, BroadcastOp>(op)) {
    bool reduce = isa<ReduceOp>(op);
    ArrayRef<int64_t> full = reduce ? shapeOf(op.getOperand(0)) : shapeOf(r0);
    ArrayRef<int64_t> dims =
        op.getAttrOfType<DenseI64ArrayAttr>("dims").asArrayRef();
    for (size_t i = 1; i < dims.size(); ++i)
      if (dims[i] != dims[i - 1] + 1)
        return op.emitOpError() << "ferry-lower-to-rt needs contiguous "
                                   "dimensions to reduce or broadcast";
    int64_t first = dims.empty() ? 0 : dims.front();
    int64_t count = static_cast<int64_t>(dims.size());
    int64_t outer = product(full.take_front(first));
    int64_t size = product(full.slice(first, count));
    int64_t inner = product(full.drop_front(first + count));
    if (reduce)
      emit("reduce", all(),
           {static_cast<int64_t>(cast<ReduceOp>(op).getKind()), outer, size,
            inner});
    else
      emit("broadcast", all(), {outer, size, inner});
  } else if (isa<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp,
                 ArgmaxCorrectOp>(op)) {
    ArrayRef<int64_t> logits = shapeOf(op.getOperand(0));
    int64_t cols = logits.back();
    StringRef k = isa<SoftmaxCrossEntropyOp>(op) ? "softmax_cross_entropy"
                  : isa<SoftmaxCrossEntropyGradOp>(op)
                      ? "softmax_cross_entropy_grad"
                      : "argmax_correct";
    emit(k, all(),
         {product(logits) / cols, cols,
          op.getAttrOfType<IntegerAttr>("num_classes").getInt()});
  } else if (auto am = dyn_cast<AttentionMaskOp>(op)) {
    emit("attention_mask", all(), {numElements(r0.getType())},
         {am.getFill().convertToDouble()});
  } else if (auto io = dyn_cast<IotaOp>(op)) {
    ArrayRef<int64_t> s = shapeOf(r0);
    auto dim = static_cast<int64_t>(io.getDim());
    emit("iota", all(),
         {product(s.take_front(dim)), s[dim], product(s.drop_front(dim + 1))});
  } else if (auto gn = dyn_cast<GlobalNormOp>(op)) {
    SmallVector<int64_t> counts;
    for (Value v : gn.getInputs())
      counts.push_back(numElements(v.getType()));
    emit("global_norm", all(), counts);
  } else if (auto lr = dyn_cast<LearningRateOp>(op)) {
    FailureOr<Affine> step = affine(f, lr.getStep(), &op);
    if (failed(step))
      return failure();
    Instr &in =
        emit("learning_rate", all(),
             {lr.getKind() == "poly" ? 0 : 1,
              static_cast<int64_t>(lr.getWarmupSteps()),
              static_cast<int64_t>(lr.getStartWarmupStep()),
              static_cast<int64_t>(lr.getTotalSteps())},
             {lr.getLr().convertToDouble(), lr.getPower().convertToDouble()});
    in.ints.push_back(*step);
  } else if (auto up = dyn_cast<OptimizerUpdateOp>(op)) {
    FailureOr<Affine> step = affine(f, up.getStep(), &op);
    if (failed(step))
      return failure();
    auto param = symbols.lookup<ParameterOp>(up.getParam());
    RankedTensorType t = param.getTensorType();
    int64_t segments = param.getStacked() ? t.getDimSize(0) : 1;
    SmallVector<Ref> bufs = {stateRef(up.getParam()), stateRef(up.getGrad()),
                             stateRef(up.getM()), stateRef(up.getV())};
    int64_t count = t.getNumElements() / segments;
    if (up.getLayer()) { // one layer's entry (phased execution)
      FailureOr<Affine> layer = affine(f, up.getLayer(), &op);
      if (failed(layer))
        return failure();
      int64_t entryBytes = bufs[0].bytes / segments;
      for (Ref &r : bufs) {
        r.offset = *layer * entryBytes;
        r.bytes = entryBytes;
      }
      segments = 1;
    }
    bufs.append(ins.begin(), ins.end()); // lr, norm
    Instr &in =
        emit("optimizer_update", bufs,
             {count, segments, 0, up.getOptimizer() == "lamb" ? 1 : 0},
             {up.getBeta1().convertToDouble(), up.getBeta2().convertToDouble(),
              up.getEpsilon().convertToDouble(),
              up.getWeightDecay().convertToDouble(),
              up.getClipNorm().convertToDouble()});
    in.ints[2] = *step;
  } else {
    return op.emitOpError() << "ferry-lower-to-rt has no kernel for this op";
  }
  return success();
}

// Two rewrites that save a pass over memory each, on the instruction list:
//  * a GEMM whose result only feeds `accumulate` into a destination adds into
//    that destination itself (beta = 1): weight gradients of every layer;
//  * a temporary that is only copied into a destination (a stash slot, a
//    state) is computed in the destination instead.
// Both require every use of the temporary to sit in the same loop body as
// the rewritten instruction and nothing else to touch the destination's
// buffer meanwhile, so the result is the same program with fewer copies.
void forwardIntoDestinations(std::vector<Buffer> &buffers,
                             std::vector<Instr> &instrs) {
  size_t n = instrs.size();
  // Innermost enclosing loop body of each position, [begin, end].
  std::vector<std::pair<int64_t, int64_t>> scope(n, {-1, -1});
  for (size_t p = 0; p < n; ++p)
    if (instrs[p].kernel.empty())
      for (size_t q = p + 1; q <= p + instrs[p].loopBody && q < n; ++q)
        scope[q] = {static_cast<int64_t>(p) + 1,
                    static_cast<int64_t>(p + instrs[p].loopBody)};
  std::vector<std::vector<size_t>> uses(buffers.size());
  for (size_t p = 0; p < n; ++p)
    for (const Ref &r : instrs[p].buffers)
      if (uses[r.buffer].empty() || uses[r.buffer].back() != p)
        uses[r.buffer].push_back(p);
  std::vector<bool> deleted(n, false);
  auto wholeTemp = [&](const Ref &r) {
    return !buffers[r.buffer].isState && r.offset.isConstant() &&
           r.offset.c == 0 && r.bytes == buffers[r.buffer].bytes;
  };
  auto untouchedBetween = [&](int buffer, size_t from, size_t to,
                              size_t except) {
    for (size_t p : uses[buffer])
      if (p >= from && p <= to && p != except && !deleted[p])
        return false;
    return true;
  };
  auto sameScope = [&](const std::vector<size_t> &positions, size_t at) {
    for (size_t p : positions)
      if (scope[p] != scope[at])
        return false;
    return true;
  };
  for (size_t p = 0; p < n; ++p) {
    Instr &in = instrs[p];
    bool isAccumulate = in.kernel == "accumulate";
    if ((!isAccumulate && in.kernel != "copy") || deleted[p])
      continue;
    Ref src = in.buffers[0], dst = in.buffers[1];
    if (!wholeTemp(src) || dst.bytes != src.bytes || src.buffer == dst.buffer)
      continue;
    std::vector<size_t> &tUses = uses[src.buffer];
    if (!sameScope(tUses, p) || tUses.front() >= p)
      continue;
    if (isAccumulate) {
      // gemm (or embedding_grad) -> T, accumulate T into D: the producer
      // adds into D itself.
      if (tUses.size() != 2 || tUses[1] != p)
        continue;
      Instr &producer = instrs[tUses[0]];
      // A bias-gradient epilogue writes its own output; a bias epilogue
      // would add the bias after the sum, not before (not the same bits).
      bool gemm = producer.kernel == "gemm" ||
                  (producer.kernel == "gemm_epilogue" &&
                   producer.ints.size() > 11 && producer.ints[11].c == 2);
      bool scatter = producer.kernel == "embedding_grad";
      size_t out = 2, flag = gemm ? 9 : 3;
      if ((!gemm && !scatter) || producer.buffers[out].buffer != src.buffer ||
          producer.ints[flag].c != 0)
        continue;
      // alpha * AB + D in one rounding equals D + (alpha * AB) only when
      // alpha * AB is exact: alpha a power of two.
      if (gemm) {
        int exponent;
        double alpha = producer.floats.empty() ? 1.0 : producer.floats[0];
        if (alpha == 0.0 || std::frexp(alpha, &exponent) != 0.5)
          continue;
      }
      bool readsT = false;
      for (size_t b = 0; b < producer.buffers.size(); ++b)
        readsT |= b != out && producer.buffers[b].buffer == src.buffer;
      if (readsT || !untouchedBetween(dst.buffer, tUses[0], p, p))
        continue;
      producer.buffers[out] = dst;
      producer.ints[flag] = Affine::constant(1);
      uses[dst.buffer].push_back(tUses[0]);
      std::sort(uses[dst.buffer].begin(), uses[dst.buffer].end());
      deleted[p] = true;
      continue;
    }
    // copy T into D: compute T in D.
    if (tUses.back() != p &&
        !untouchedBetween(dst.buffer, tUses.front(), tUses.back(), p))
      continue;
    if (!untouchedBetween(dst.buffer, tUses.front(), p, p))
      continue;
    for (size_t q : tUses)
      for (Ref &r : instrs[q].buffers)
        if (r.buffer == src.buffer)
          r = Ref{dst.buffer, dst.offset, dst.bytes};
    for (size_t q : tUses)
      if (q != p)
        uses[dst.buffer].push_back(q);
    std::sort(uses[dst.buffer].begin(), uses[dst.buffer].end());
    tUses.clear();
    deleted[p] = true;
  }
  // Compact, recounting loop bodies.
  std::vector<int64_t> kept(n + 1, 0); // kept[p] = kept instructions < p
  for (size_t p = 0; p < n; ++p)
    kept[p + 1] = kept[p] + (deleted[p] ? 0 : 1);
  std::vector<Instr> out;
  for (size_t p = 0; p < n; ++p) {
    if (deleted[p])
      continue;
    Instr in = std::move(instrs[p]);
    if (in.kernel.empty())
      in.loopBody = kept[p + 1 + in.loopBody] - kept[p + 1];
    out.push_back(std::move(in));
  }
  instrs = std::move(out);
}

// Live intervals of the temporaries, whole loops included when a buffer is
// used both inside a loop and outside it.
void computeLiveness(std::vector<Buffer> &buffers,
                     const std::vector<Instr> &instrs) {
  for (size_t p = 0; p < instrs.size(); ++p)
    for (const Ref &r : instrs[p].buffers) {
      Buffer &b = buffers[r.buffer];
      b.first = std::min<int64_t>(b.first, p);
      b.last = std::max<int64_t>(b.last, p);
    }
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t p = 0; p < instrs.size(); ++p) {
      if (!instrs[p].kernel.empty())
        continue;
      int64_t begin = p, end = p + instrs[p].loopBody;
      for (Buffer &b : buffers) {
        if (b.isState || b.last < begin || b.first > end)
          continue;
        bool inside = b.first >= begin && b.last <= end;
        if (inside)
          continue;
        if (b.first > begin || b.last < end) {
          b.first = std::min(b.first, begin);
          b.last = std::max(b.last, end);
          changed = true;
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Phased execution: staging host-placed states through device temporaries
//===----------------------------------------------------------------------===//
//
// A state placed in host memory (a remote buffer) is never touched by a
// kernel. Within each phase, every distinct byte range of it the phase
// touches gets a device temporary: loaded when its scope starts (unless the
// first touch overwrites it), stored back when its scope ends (if anything
// wrote it). The scope is the phase itself when the range depends only on
// registers outside the phase (a layer's weights: loaded once, used GA
// times), else the innermost loop inside the phase whose counter the address
// uses (a micro-batch's activation row).

// Whether instruction `in` reads / writes its buffer `b`: the roles
// Kernels.def declares, resolved against the call's constant parameters.
void accessOf(const Instr &in, size_t b, bool &reads, bool &writes) {
  std::optional<kernels::Kernel> kernel = kernels::kernelByName(in.kernel);
  if (!kernel || b >= in.buffers.size()) { // not a call: assume both
    reads = writes = true;
    return;
  }
  std::vector<int64_t> ints;
  for (const Affine &a : in.ints)
    ints.push_back(a.c);
  kernels::Resolved r = kernels::resolve(*kernel, ints, in.buffers.size());
  reads = r.buffers[b].reads;
  writes = r.buffers[b].writes;
}

struct Node {
  Instr in;
  std::vector<Node> body; // a loop's body
  // Instructions placed right before / after this node (a loop's prefetch
  // of its first iteration, its wait for the last stores).
  std::vector<Node> before, after;
  bool isLoop() const { return in.kernel.empty(); }
};

std::vector<Node> toTree(const std::vector<Instr> &instrs, size_t &p,
                         size_t end) {
  std::vector<Node> out;
  while (p < end) {
    Node n{instrs[p], {}};
    ++p;
    if (n.isLoop()) {
      size_t bodyEnd = p + n.in.loopBody;
      n.body = toTree(instrs, p, bodyEnd);
    }
    out.push_back(std::move(n));
  }
  return out;
}

void flatten(const std::vector<Node> &nodes, std::vector<Instr> &out) {
  for (const Node &n : nodes) {
    flatten(n.before, out);
    size_t at = out.size();
    out.push_back(n.in);
    if (n.isLoop()) {
      flatten(n.body, out);
      out[at].loopBody = static_cast<int64_t>(out.size() - at - 1);
    }
    flatten(n.after, out);
  }
}

bool sameAffine(const Affine &a, const Affine &b) {
  if (a.c != b.c)
    return false;
  size_t n = std::max(a.coeffs.size(), b.coeffs.size());
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < a.coeffs.size() ? a.coeffs[i] : 0;
    int64_t y = i < b.coeffs.size() ? b.coeffs[i] : 0;
    if (x != y)
      return false;
  }
  return true;
}

bool usesRegister(const Affine &a, int64_t r) {
  return r < static_cast<int64_t>(a.coeffs.size()) && a.coeffs[r] != 0;
}

// Whether two ranges of one buffer can overlap at run time.
bool mayOverlap(const Ref &a, const Ref &b) {
  Affine d = a.offset + (b.offset * -1);
  if (!d.isConstant())
    return true;
  return d.c < b.bytes && -d.c < a.bytes;
}

constexpr int kLayerPrefetch = 1, kMicroBatchPrefetch = 2, kPhasePrefetch = 4;

struct Staging {
  std::vector<Buffer> &buffers;
  const std::vector<bool> &host; // by buffer id (states first)
  const std::vector<StateInfo> &states;
  int64_t &registers; // the program's register count (parity registers)
  // What to double-buffer: kLayerPrefetch (the layer loop a phase is the
  // body of: the next layer's weights) and kMicroBatchPrefetch (loops inside
  // a phase: the next micro-batch's activations), kPhasePrefetch (a layer
  // loop's first layer during the phase before the loop).
  int prefetch = 7;
  int64_t nextEvent = 0;
  int64_t prefetchedGroups = 0, syncGroups = 0;
  std::string error;

  // One staged range.
  struct Group {
    Node *scope = nullptr; // null: the phase
    int depth = -1;        // the scope's loop depth inside the phase
    int buffer = -1;
    Ref range;
    bool load = false, store = false, seen = false;
    int temp = -1;
    std::vector<Ref *> refs;
    Node *prefetchLoop = nullptr; // double-buffered over this loop
  };

  void collect(std::vector<Node> &nodes, std::vector<Node *> &loops,
               std::vector<Group> &groups) {
    for (Node &n : nodes) {
      if (n.isLoop()) {
        loops.push_back(&n);
        collect(n.body, loops, groups);
        loops.pop_back();
        continue;
      }
      for (size_t b = 0; b < n.in.buffers.size(); ++b) {
        Ref &r = n.in.buffers[b];
        if (r.buffer < 0 || r.buffer >= static_cast<int>(host.size()) ||
            !host[r.buffer])
          continue;
        Node *scope = nullptr;
        int depth = -1;
        for (auto [d, loop] : llvm::enumerate(loops))
          if (usesRegister(r.offset, loop->in.loopRegister)) {
            scope = loop;
            depth = static_cast<int>(d);
          }
        Group *g = nullptr;
        for (Group &cand : groups)
          if (cand.scope == scope && cand.buffer == r.buffer &&
              cand.range.bytes == r.bytes &&
              sameAffine(cand.range.offset, r.offset))
            g = &cand;
        if (!g) {
          groups.push_back(Group{scope, depth, r.buffer, r});
          g = &groups.back();
        }
        bool reads = false, writes = false;
        accessOf(n.in, b, reads, writes);
        if (!g->seen)
          g->load = reads;
        g->seen = true;
        g->store |= writes;
        g->refs.push_back(&r);
      }
    }
  }

  Node transfer(StringRef kind, Ref device, Ref remote, int64_t event) {
    Instr in;
    in.kernel = kind.str();
    in.buffers = kind == "load" ? SmallVector<Ref>{remote, device}
                                : SmallVector<Ref>{device, remote};
    in.ints = {Affine::constant(device.bytes), Affine::constant(event)};
    return Node{in, {}};
  }
  Node wait(int64_t event) {
    Instr in;
    in.kernel = "wait";
    in.ints = {Affine::constant(event)};
    return Node{in, {}};
  }

  static int64_t coeff(const Affine &a, int64_t r) {
    return r < static_cast<int64_t>(a.coeffs.size()) ? a.coeffs[r] : 0;
  }
  static Affine withRegister(Affine a, int64_t r, int64_t value) {
    int64_t c = coeff(a, r);
    if (c != 0) {
      a.c += c * value;
      a.coeffs[r] = 0;
    }
    return a;
  }

  // Whether `g` may load its next iteration's range while this one runs:
  // consecutive iterations touch disjoint bytes, and no other group of the
  // phase stores into the bytes it reads ahead (a store issued later would
  // land after the early read).
  bool canPrefetch(const Group &g, const std::vector<Group> &groups,
                   Node *loop) {
    int64_t r = loop->in.loopRegister, n = loop->in.loopCount;
    int64_t cg = coeff(g.range.offset, r);
    if (n < 2 || std::abs(cg) < g.range.bytes)
      return false;
    Affine base = withRegister(g.range.offset, r, 0);
    for (const Group &other : groups) {
      if (&other == &g || other.buffer != g.buffer || !other.store)
        continue;
      // Only offsets that differ by a constant elsewhere can be compared.
      Affine shift = withRegister(other.range.offset, r, 0) + (base * -1);
      if (!shift.isConstant())
        return false;
      int64_t co = coeff(other.range.offset, r);
      int64_t a0 = std::min<int64_t>(0, cg * (n - 1));
      int64_t a1 = std::max<int64_t>(0, cg * (n - 1)) + g.range.bytes;
      int64_t b0 = shift.c + std::min<int64_t>(0, co * (n - 1));
      int64_t b1 =
          shift.c + std::max<int64_t>(0, co * (n - 1)) + other.range.bytes;
      if (a0 < b1 && b0 < a1)
        return false; // the other group writes bytes this one reads ahead
    }
    return true;
  }

  // Stages the phase whose contents are nodes[begin, end) of a block.
  // `enclosing` is the loop whose whole body the phase is (a layer loop), or
  // null.
  LogicalResult stagePhase(std::vector<Node> &block, size_t begin, size_t end,
                           const std::string &phase, Node *enclosing) {
    std::vector<Node> inner(std::make_move_iterator(block.begin() + begin),
                            std::make_move_iterator(block.begin() + end));
    std::vector<Group> groups;
    groups.reserve(1024);
    std::vector<Node *> loops;
    collect(inner, loops, groups);
    if (groups.size() >= 1024) {
      error = "phase " + phase + " touches more than 1024 remote ranges";
      return failure();
    }
    // Two staged copies of overlapping bytes would diverge.
    for (size_t i = 0; i < groups.size(); ++i)
      for (size_t j = i + 1; j < groups.size(); ++j)
        if (groups[i].buffer == groups[j].buffer &&
            (groups[i].store || groups[j].store) &&
            mayOverlap(groups[i].range, groups[j].range)) {
          error = "phase " + phase + " touches overlapping ranges of @" +
                  states[groups[i].buffer].name +
                  " in different ways; it cannot be staged";
          return failure();
        }
    // Double-buffered groups: a loop inside the phase whose counter the
    // address uses (micro-batch i + 1 while i computes), or the layer loop
    // the phase is the body of (layer l + 1's weights while l computes).
    for (Group &g : groups) {
      Node *loop = nullptr;
      if (g.scope && (prefetch & kMicroBatchPrefetch))
        loop = g.scope;
      else if (!g.scope && enclosing && (prefetch & kLayerPrefetch) &&
               usesRegister(g.range.offset, enclosing->in.loopRegister))
        loop = enclosing;
      if (loop && canPrefetch(g, groups, loop))
        g.prefetchLoop = loop;
    }
    // By scope, deepest first (inserting into a body moves the loops in
    // it), the phase itself last.
    struct Edges {
      std::vector<Node> loads, stores;         // synchronous
      std::vector<Node> current, next, output; // double-buffered
      Node *loop = nullptr;
    };
    std::map<std::pair<int, Node *>, Edges, std::greater<>> edges;
    std::map<Node *, std::pair<int64_t, int64_t>> loopEvents; // in, out
    for (Group &g : groups) {
      Buffer t;
      t.label = "@" + states[g.buffer].name + " (staged)";
      Edges &e = edges[{g.depth, g.scope}];
      int64_t bytes = g.range.bytes;
      if (!g.prefetchLoop) {
        ++syncGroups;
        t.bytes = bytes;
        buffers.push_back(t);
        g.temp = static_cast<int>(buffers.size() - 1);
        Ref device{g.temp, Affine(), bytes};
        for (Ref *r : g.refs)
          *r = device;
        if (g.load)
          e.loads.push_back(transfer("load", device, g.range, 0));
        if (g.store)
          e.stores.push_back(transfer("store", device, g.range, 0));
        continue;
      }
      ++prefetchedGroups;
      Node *loop = g.prefetchLoop;
      e.loop = loop;
      if (loop->in.parityRegister < 0)
        loop->in.parityRegister = registers++;
      int64_t p = loop->in.parityRegister, r = loop->in.loopRegister;
      auto [events, added] = loopEvents.try_emplace(loop);
      if (added) {
        events->second = {nextEvent, nextEvent + 1};
        nextEvent += 2;
      }
      auto [in, out] = events->second;
      t.bytes = 2 * bytes;
      buffers.push_back(t);
      g.temp = static_cast<int>(buffers.size() - 1);
      Ref thisHalf{g.temp, Affine::reg(p) * bytes, bytes};
      Ref otherHalf{g.temp, Affine::constant(bytes) + Affine::reg(p) * -bytes,
                    bytes};
      for (Ref *ref : g.refs)
        *ref = thisHalf;
      if (g.load) {
        // Before the loop: iteration 0 into half 0.
        Ref first{g.range.buffer, withRegister(g.range.offset, r, 0), bytes};
        loop->before.push_back(
            transfer("load", Ref{g.temp, Affine(), bytes}, first, in));
        // In iteration r: r + 1 into the other half, if there is one.
        Ref next{g.range.buffer,
                 g.range.offset + Affine::constant(coeff(g.range.offset, r)),
                 bytes};
        Node n = transfer("load", otherHalf, next, in);
        n.in.ints.push_back(Affine::reg(r) + Affine::constant(1));
        n.in.ints.push_back(Affine::constant(loop->in.loopCount));
        e.next.push_back(std::move(n));
      }
      if (g.store)
        e.output.push_back(transfer("store", thisHalf, g.range, out));
      // Both halves are in use for the whole loop (one computing, the other
      // loading or storing on the copy thread), so the buffer stays live
      // from before the loop to the wait after it: the waits name it.
      Ref whole{g.temp, Affine(), 2 * bytes};
      auto hold = [&](std::vector<Node> &nodes, int64_t event) {
        for (Node &n : nodes)
          if (n.in.kernel == "wait" && n.in.ints[0].c == event) {
            n.in.buffers.push_back(whole);
            return;
          }
        nodes.push_back(wait(event));
        nodes.back().in.buffers.push_back(whole);
      };
      if (!g.load)
        hold(loop->before, out);
      hold(loop->after, g.store ? out : in);
    }
    for (auto &[key, e] : edges) {
      Node *scope = key.second;
      std::vector<Node> head, tail;
      int64_t in = nextEvent++, out = nextEvent++;
      for (Node &n : e.loads) {
        n.in.ints[1] = Affine::constant(in);
        head.push_back(std::move(n));
      }
      if (!e.next.empty()) {
        // This iteration's data (loaded by the previous one or before the
        // loop), then the next iteration's, which overlaps this compute.
        head.push_back(wait(e.next.front().in.ints[1].c));
        for (Node &n : e.next)
          head.push_back(std::move(n));
      }
      if (!e.loads.empty())
        head.push_back(wait(in));
      for (Node &n : e.stores) {
        n.in.ints[1] = Affine::constant(out);
        tail.push_back(std::move(n));
      }
      if (!e.output.empty()) {
        // The other half is written by the next iteration's kernels, which
        // the copy queue does not order: its store (issued one iteration
        // ago, overlapping this one) must be done first.
        tail.push_back(wait(e.output.front().in.ints[1].c));
        for (Node &n : e.output)
          tail.push_back(std::move(n));
      }
      if (!e.stores.empty())
        tail.push_back(wait(out));
      std::vector<Node> &body = scope ? scope->body : inner;
      body.insert(body.begin(), std::make_move_iterator(head.begin()),
                  std::make_move_iterator(head.end()));
      body.insert(body.end(), std::make_move_iterator(tail.begin()),
                  std::make_move_iterator(tail.end()));
    }
    block.erase(block.begin() + begin, block.begin() + end);
    block.insert(block.begin() + begin, std::make_move_iterator(inner.begin()),
                 std::make_move_iterator(inner.end()));
    return success();
  }

  LogicalResult stageBlock(std::vector<Node> &block,
                           const std::vector<std::string> &phaseNames,
                           Node *owner) {
    for (size_t i = 0; i < block.size(); ++i) {
      if (block[i].isLoop()) {
        if (failed(stageBlock(block[i].body, phaseNames, &block[i])))
          return failure();
        continue;
      }
      if (block[i].in.kernel != "phase_begin")
        continue;
      size_t end = i + 1;
      while (end < block.size() && block[end].in.kernel != "phase_end")
        ++end;
      Node *enclosing =
          owner && i == 0 && end + 1 == block.size() ? owner : nullptr;
      size_t before = block.size();
      if (failed(stagePhase(block, i + 1, end,
                            phaseNames[block[i].in.ints[0].c], enclosing)))
        return failure();
      i = end + (block.size() - before); // the phase_end marker
    }
    return success();
  }

  static bool storesInto(const std::vector<Node> &nodes, size_t begin,
                         size_t end, int buffer) {
    for (size_t k = begin; k < end; ++k) {
      const Node &n = nodes[k];
      if (n.in.kernel == "store" && n.in.buffers[1].buffer == buffer)
        return true;
      if (storesInto(n.before, 0, n.before.size(), buffer) ||
          storesInto(n.body, 0, n.body.size(), buffer) ||
          storesInto(n.after, 0, n.after.size(), buffer))
        return true;
    }
    return false;
  }

  // Across phases (kPhasePrefetch): a layer loop's first-iteration loads move
  // into the phase before the loop, right after that phase's own loads, so
  // they overlap its compute (heads.fwd_bwd computes while layer L-1's
  // weights arrive). Not a load whose host bytes that phase stores.
  void hoistIntoPreviousPhase(std::vector<Node> &block) {
    for (size_t k = 1; k < block.size(); ++k) {
      Node &loop = block[k];
      if (!loop.isLoop() || loop.before.empty() ||
          block[k - 1].in.kernel != "phase_end")
        continue;
      size_t begin = k - 1;
      while (begin > 0 && block[begin].in.kernel != "phase_begin")
        --begin;
      if (block[begin].in.kernel != "phase_begin")
        continue;
      // After the phase's own loads and their wait, if any.
      size_t at = begin + 1;
      while (at < k - 1 && block[at].in.kernel == "load")
        ++at;
      if (at > begin + 1 && block[at].in.kernel == "wait")
        ++at;
      else
        at = begin + 1;
      std::vector<Node> hoisted, kept;
      for (Node &n : loop.before) {
        if (n.in.kernel == "load" &&
            !storesInto(block, begin, k, n.in.buffers[0].buffer))
          hoisted.push_back(std::move(n));
        else
          kept.push_back(std::move(n));
      }
      loop.before = std::move(kept);
      hoistedLoads += static_cast<int64_t>(hoisted.size());
      block.insert(block.begin() + at, std::make_move_iterator(hoisted.begin()),
                   std::make_move_iterator(hoisted.end()));
      k += hoisted.size();
    }
  }
  int64_t hoistedLoads = 0;
};

// One program after placement: staged, planned, measured per phase.
struct PhaseStats {
  std::string name;
  int64_t executions = 0, bytesIn = 0, bytesOut = 0, peakBytes = 0;
  double flops = 0;
};
struct PlacedProgram {
  int64_t registers = 0; // the lowering's, plus prefetch parity registers
  int64_t prefetchedGroups = 0, syncGroups = 0;
  std::vector<Buffer> buffers;
  std::vector<Instr> instrs;
  MemoryPlan plan;
  std::vector<PhaseStats> phases;
  int64_t peakPosition = 0; // where the most temporaries are alive
};
struct Placement {
  std::vector<bool> host;       // per state
  std::vector<int64_t> offsets; // per state: in the arena or in host memory
  int64_t deviceStateBytes = 0, hostBytes = 0, maxTransient = 0;
  size_t peakProgram = 0;
  int prefetch = 7;
  std::vector<PlacedProgram> programs;
  std::string error;
  int64_t peak() const { return deviceStateBytes + maxTransient; }
};

// Per phase (by name): executions per run of the program, bytes loaded and
// stored, matmul FLOPs, and the most device bytes alive at once.
std::vector<PhaseStats> phaseStats(const PlacedProgram &p,
                                   const std::vector<std::string> &names,
                                   int64_t deviceStateBytes) {
  size_t n = p.instrs.size();
  std::vector<int64_t> live(n + 1, 0);
  for (const Buffer &b : p.buffers)
    if (!b.isState && b.last >= 0) {
      live[b.first] += alignUp(b.bytes);
      live[b.last + 1] -= alignUp(b.bytes);
    }
  std::vector<PhaseStats> stats;
  std::map<std::string, size_t> index;
  std::vector<std::pair<size_t, int64_t>> loops; // (end, multiplier)
  int64_t alive = 0;
  int current = -1;
  for (size_t q = 0; q < n; ++q) {
    alive += live[q];
    while (!loops.empty() && q >= loops.back().first)
      loops.pop_back();
    int64_t mult = loops.empty() ? 1 : loops.back().second;
    const Instr &in = p.instrs[q];
    if (in.kernel.empty()) {
      loops.push_back({q + 1 + in.loopBody, mult * in.loopCount});
      continue;
    }
    if (in.kernel == "phase_begin") {
      const std::string &name = names[in.ints[0].c];
      auto [it, added] = index.try_emplace(name, stats.size());
      if (added)
        stats.push_back(PhaseStats{name});
      current = static_cast<int>(it->second);
      stats[current].executions += mult;
      continue;
    }
    if (in.kernel == "phase_end") {
      current = -1;
      continue;
    }
    if (current < 0)
      continue;
    PhaseStats &s = stats[current];
    s.peakBytes = std::max(s.peakBytes, deviceStateBytes + alive);
    if (in.kernel == "load")
      s.bytesIn += in.buffers[0].bytes * mult;
    else if (in.kernel == "store")
      s.bytesOut += in.buffers[0].bytes * mult;
    else if (in.kernel == "gemm" || in.kernel == "gemm_epilogue")
      s.flops += 2.0 * static_cast<double>(in.ints[0].c) *
                 static_cast<double>(in.ints[1].c) *
                 static_cast<double>(in.ints[2].c) *
                 static_cast<double>(in.ints[3].c) * static_cast<double>(mult);
  }
  return stats;
}

Placement evaluatePlacement(
    const std::vector<std::unique_ptr<ProgramLowering>> &lowerings,
    const std::vector<StateInfo> &states, const std::vector<bool> &host,
    int prefetch) {
  Placement p;
  p.prefetch = prefetch;
  p.host = host;
  p.offsets.resize(states.size());
  bool anyHost = false;
  for (size_t i = 0; i < states.size(); ++i) {
    int64_t &end = host[i] ? p.hostBytes : p.deviceStateBytes;
    p.offsets[i] = end;
    end = alignUp(end + states[i].bytes);
    anyHost |= host[i];
  }
  for (auto [k, l] : llvm::enumerate(lowerings)) {
    PlacedProgram pp;
    pp.buffers = l->buffers;
    pp.instrs = l->instrs;
    pp.registers = l->registers;
    for (size_t i = 0; i < states.size(); ++i)
      pp.buffers[i].stateOffset = p.offsets[i];
    if (anyHost) {
      size_t pos = 0;
      std::vector<Node> tree = toTree(pp.instrs, pos, pp.instrs.size());
      Staging staging{pp.buffers, host, states, pp.registers, prefetch};
      if (failed(staging.stageBlock(tree, l->phaseNames, nullptr))) {
        p.error = staging.error;
        return p;
      }
      if ((prefetch & kPhasePrefetch) && (prefetch & kLayerPrefetch))
        staging.hoistIntoPreviousPhase(tree);
      pp.prefetchedGroups = staging.prefetchedGroups;
      pp.syncGroups = staging.syncGroups;
      pp.instrs.clear();
      flatten(tree, pp.instrs);
    }
    computeLiveness(pp.buffers, pp.instrs);
    std::vector<LiveInterval> intervals;
    std::vector<size_t> temps;
    for (size_t i = 0; i < pp.buffers.size(); ++i) {
      if (pp.buffers[i].isState || pp.buffers[i].last < 0)
        continue;
      intervals.push_back(
          {pp.buffers[i].bytes, pp.buffers[i].first, pp.buffers[i].last});
      temps.push_back(i);
    }
    pp.plan = planMemory(intervals, kAlignment);
    for (auto [t, i] : llvm::enumerate(temps))
      pp.buffers[i].stateOffset = p.deviceStateBytes + pp.plan.offsets[t];
    pp.phases = phaseStats(pp, l->phaseNames, p.deviceStateBytes);
    // Where the most temporary bytes are alive, for reports.
    std::vector<int64_t> live(pp.instrs.size() + 1, 0);
    for (const LiveInterval &iv : intervals) {
      live[iv.first] += alignUp(iv.bytes);
      live[iv.last + 1] -= alignUp(iv.bytes);
    }
    int64_t alive = 0, most = -1;
    for (size_t q = 0; q < pp.instrs.size(); ++q) {
      alive += live[q];
      if (alive > most) {
        most = alive;
        pp.peakPosition = static_cast<int64_t>(q);
      }
    }
    if (pp.plan.peakBytes > p.maxTransient) {
      p.maxTransient = pp.plan.peakBytes;
      p.peakProgram = k;
    }
    p.programs.push_back(std::move(pp));
  }
  return p;
}

// Says why the smallest plan does not fit, what is largest at its peak, and
// what to change.
std::string budgetError(const Placement &p,
                        const std::vector<std::unique_ptr<ProgramLowering>> &l,
                        const std::vector<StateInfo> &states, int64_t limit,
                        bool recomputing) {
  auto mib = [](int64_t bytes) {
    return llvm::formatv("{0:F2} MiB", static_cast<double>(bytes) / 1048576.0)
        .str();
  };
  const PlacedProgram &pp = p.programs[p.peakProgram];
  std::string phase = "outside any phase";
  for (int64_t q = 0; q <= pp.peakPosition; ++q) {
    const Instr &in = pp.instrs[q];
    if (in.kernel == "phase_begin")
      phase = "phase " + l[p.peakProgram]->phaseNames[in.ints[0].c];
    else if (in.kernel == "phase_end")
      phase = "outside any phase";
  }
  std::vector<std::pair<int64_t, std::string>> consumers;
  int64_t unlabeled = 0, count = 0;
  for (const Buffer &b : pp.buffers) {
    if (b.isState || b.first > pp.peakPosition || b.last < pp.peakPosition)
      continue;
    if (b.label.empty()) {
      unlabeled += b.bytes;
      ++count;
    } else {
      consumers.push_back({b.bytes, b.label});
    }
  }
  consumers.push_back(
      {unlabeled, llvm::formatv("{0} activations and temporaries", count)});
  int64_t residentBytes = 0;
  for (size_t i = 0; i < states.size(); ++i)
    if (!p.host[i])
      residentBytes += states[i].bytes;
  consumers.push_back({residentBytes,
                       "states kept on the device (small or used outside "
                       "phases)"});
  std::sort(consumers.rbegin(), consumers.rend());
  std::string largest;
  for (size_t i = 0; i < consumers.size() && i < 5; ++i)
    largest +=
        (i ? ", " : "") + consumers[i].second + " " + mib(consumers[i].first);
  return llvm::formatv(
             "the phased plan needs {0} of device memory ({1} bytes) at its "
             "peak ({2} of @{3}) but execution.device_memory_limit is {4}, "
             "even with every remote buffer in host memory; largest there: "
             "{5}. Lower execution.micro_batch_size, {6}or raise "
             "execution.device_memory_limit",
             mib(p.peak()), p.peak(), phase, l[p.peakProgram]->programName,
             mib(limit), largest,
             recomputing ? "" : "set execution.recompute: layer, ")
      .str();
}

// State reads lower to views of the state, read where they are used. So a
// read whose value is still used after a write to the same declaration would
// see the new contents; the training passes never emit that, and this check
// keeps any future pass from doing it silently.
LogicalResult checkReadsPrecedeWrites(func::FuncOp fn) {
  auto symbolOf = [](Operation *op) -> StringRef {
    if (auto ref = dyn_cast<ParameterRefOp>(op))
      return ref.getName();
    if (auto slice = dyn_cast<ParameterSliceOp>(op))
      return slice.getName();
    return {};
  };
  auto written = [](Operation *op) -> SmallVector<StringRef> {
    if (isa<StoreOp, AccumulateOp>(op))
      return {op->getAttrOfType<FlatSymbolRefAttr>("name").getValue()};
    if (auto up = dyn_cast<OptimizerUpdateOp>(op))
      return {up.getParam(), up.getM(), up.getV()};
    return {};
  };
  WalkResult result = fn.walk([&](Operation *write) {
    for (StringRef symbol : written(write)) {
      Block *block = write->getBlock();
      for (Operation &read : *block) {
        if (&read == write)
          break;
        if (symbolOf(&read) != symbol)
          continue;
        for (Operation *user : read.getResult(0).getUsers()) {
          Operation *inBlock = block->findAncestorOpInBlock(*user);
          if (inBlock && write->isBeforeInBlock(inBlock)) {
            write->emitOpError()
                << "writes @" << symbol
                << " while an earlier read of it is still used below; "
                   "ferry-lower-to-rt lowers reads as views, so copy the "
                   "value (or move the read after the write)";
            return WalkResult::interrupt();
          }
        }
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

struct LowerToRtPass : public ferry::impl::LowerToRtPassBase<LowerToRtPass> {
  using LowerToRtPassBase::LowerToRtPassBase;
  // Timing reports and crash messages name the pass by its flag.
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

void LowerToRtPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  OpBuilder b(module.getContext());
  SmallVector<std::string> names(programs.begin(), programs.end());
  if (names.empty())
    names.push_back("train_step");

  for (auto fn : module.getOps<func::FuncOp>())
    if (!fn.isExternal() && failed(checkReadsPrecedeWrites(fn)))
      return signalPassFailure();

  // Input and output states of each program's tensor arguments and results.
  b.setInsertionPointToStart(module.getBody());
  for (const std::string &name : names) {
    auto fn = symbols.lookup<func::FuncOp>(name);
    if (!fn || fn.isExternal()) {
      module.emitError() << "ferry-lower-to-rt: no function @" << name
                         << (fn ? " with a body" : "");
      return signalPassFailure();
    }
    for (Type type : fn.getResultTypes()) {
      auto t = dyn_cast<RankedTensorType>(type);
      if (!t ||
          !(t.getElementType().isF32() || t.getElementType().isInteger(32))) {
        fn.emitOpError() << "returns " << type
                         << "; a program's results must be f32 or i32 "
                            "tensors (they become output states)";
        return signalPassFailure();
      }
    }
    for (auto [i, type] : llvm::enumerate(fn.getArgumentTypes())) {
      auto t = dyn_cast<RankedTensorType>(type);
      if (!t)
        continue;
      auto attr = fn.getArgAttrOfType<StringAttr>(i, "ferry.input");
      std::string arg = attr ? attr.str() : "arg" + std::to_string(i);
      std::string state = "arg." + name + "." + arg;
      VariableOp::create(b, module.getLoc(), state, t, InitKind::zeros,
                         FloatAttr(), state, false, false);
    }
    for (auto [i, type] : llvm::enumerate(fn.getResultTypes())) {
      std::string state = "output." + name + "." + std::to_string(i);
      VariableOp::create(b, module.getLoc(), state,
                         cast<RankedTensorType>(type), InitKind::zeros,
                         FloatAttr(), state, false, false);
    }
  }

  // States, in declaration order.
  std::vector<StateInfo> states;
  llvm::StringMap<int> stateIds;
  int64_t offset = 0;
  for (Operation &op : module.getBody()->getOperations()) {
    auto param = dyn_cast<ParameterOp>(op);
    auto var = dyn_cast<VariableOp>(op);
    if (!param && !var)
      continue;
    StateInfo s;
    RankedTensorType t = param ? param.getTensorType() : var.getTensorType();
    if (!t.getElementType().isF32() && !t.getElementType().isInteger(32)) {
      op.emitOpError() << "ferry-lower-to-rt supports f32 and i32 states, "
                          "found "
                       << t.getElementType();
      return signalPassFailure();
    }
    s.name = (param ? param.getSymName() : var.getSymName()).str();
    s.type = t;
    s.role = roleOf(&op);
    InitKind init = param ? param.getInit() : var.getInit();
    s.init = stringifyInitKind(init).str();
    if (auto std = param ? param.getInitStd() : var.getInitStd())
      s.std = std->convertToDouble();
    s.hf = (param ? param.getHfName() : var.getHfName()).str();
    s.stacked = param ? param.getStacked() : var.getStacked();
    s.noWeightDecay = param ? param.getNoWeightDecay() : false;
    if (auto rows = op.getAttrOfType<IntegerAttr>("ferry.init_rows"))
      s.initRows = rows.getInt();
    s.bytes = byteSize(t);
    s.offset = offset;
    offset = alignUp(offset + s.bytes);
    stateIds[s.name] = static_cast<int>(states.size());
    states.push_back(s);
  }
  (void)offset; // final offsets come from the placement below

  // Programs, lowered once; where each state lives is decided below.
  std::vector<std::unique_ptr<ProgramLowering>> lowerings;
  for (const std::string &name : names) {
    auto fn = symbols.lookup<func::FuncOp>(name);
    auto l = std::make_unique<ProgramLowering>(module, stateIds, states);
    l->matmulInputs = matmulInputs;
    l->gemmWorkspace = gemmWorkspace;
    if (failed(l->lower(fn)))
      return signalPassFailure();
    forwardIntoDestinations(l->buffers, l->instrs);
    lowerings.push_back(std::move(l));
  }

  // Placement. In phased programs a state only phases touch may live in
  // host memory (a remote buffer); small ones (biases, metrics) stay on the
  // device, where they cost nothing worth a transfer.
  constexpr int64_t kSmallState = 64 * 1024;
  std::vector<bool> eligible(states.size(), false);
  bool phased = false;
  {
    std::vector<bool> outside(states.size(), false);
    for (auto &l : lowerings) {
      int depth = 0;
      for (const Instr &in : l->instrs) {
        depth += in.kernel == "phase_begin" ? 1 : 0;
        depth -= in.kernel == "phase_end" ? 1 : 0;
        phased |= in.kernel == "phase_begin";
        if (depth == 0)
          for (const Ref &r : in.buffers)
            if (r.buffer < static_cast<int>(states.size()))
              outside[r.buffer] = true;
      }
    }
    for (size_t i = 0; i < states.size(); ++i)
      eligible[i] = phased && !outside[i] && states[i].bytes >= kSmallState;
  }
  // Prefetching doubles staging buffers; under a tight budget keep what
  // fits: both kinds, the layers' only, the micro-batches' only, none.
  auto describe = [](int levels) -> std::string {
    return levels == 7   ? "next layer and next micro-batch, the first layer "
                           "during the phase before its loop"
           : levels == 3 ? "next layer and next micro-batch"
           : levels == kLayerPrefetch      ? "next layer only"
           : levels == kMicroBatchPrefetch ? "next micro-batch only"
                                           : "none";
  };
  int prefetching = prefetch ? 7 : 0;
  std::string prefetchNote = prefetch ? "" : "off (execution.prefetch: false)";
  Placement best = evaluatePlacement(lowerings, states, eligible, prefetching);
  if (!best.error.empty()) {
    module.emitError() << "ferry-lower-to-rt: " << best.error;
    return signalPassFailure();
  }
  int64_t limit = deviceMemoryLimit;
  if (phased && limit > 0 && best.peak() > limit && prefetching) {
    int64_t full = best.peak();
    for (int levels : {3, kLayerPrefetch, kMicroBatchPrefetch, 0}) {
      Placement fewer = evaluatePlacement(lowerings, states, eligible, levels);
      if (!fewer.error.empty())
        continue;
      best = std::move(fewer);
      prefetching = levels;
      if (best.peak() <= limit)
        break;
    }
    if (best.peak() <= limit)
      prefetchNote = llvm::formatv(
          "reduced to {0}: double-buffering everything needs {1} bytes at "
          "the peak, over the {2}-byte budget",
          describe(prefetching), full, limit);
  }
  if (phased && limit > 0 && best.peak() > limit) {
    bool recomputing = false;
    module.walk([&](func::CallOp call) {
      recomputing |= call->hasAttr("ferry.recompute");
    });
    module.emitError() << budgetError(best, lowerings, states, limit,
                                      recomputing);
    return signalPassFailure();
  }
  if (phased) {
    // Keep on the device what the budget allows, the largest host-link
    // traffic first: activation rows and stashes (stored and reloaded every
    // step), then optimizer state, gradients, weights. The check is
    // conservative (staging buffers only shrink when a state moves), and the
    // final plan is exact.
    std::vector<bool> host = eligible;
    auto rank = [&](const StateInfo &st) {
      return st.role == "stash"             ? 0
             : st.role == "optimizer_state" ? 1
             : st.role == "gradient"        ? 2
             : st.role == "parameter"       ? 3
                                            : 4;
    };
    std::vector<size_t> order;
    for (size_t i = 0; i < states.size(); ++i)
      if (host[i])
        order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (rank(states[a]) != rank(states[b]))
        return rank(states[a]) < rank(states[b]);
      return states[a].bytes > states[b].bytes;
    });
    int64_t device = best.deviceStateBytes, transient = best.maxTransient;
    for (size_t i : order)
      if (limit <= 0 ||
          device + alignUp(states[i].bytes) + transient <= limit) {
        host[i] = false;
        device += alignUp(states[i].bytes);
      }
    if (host != eligible) {
      best = evaluatePlacement(lowerings, states, host, prefetching);
      if (!best.error.empty()) {
        module.emitError() << "ferry-lower-to-rt: " << best.error;
        return signalPassFailure();
      }
    }
  }

  // Emit the rt module: states, then programs; drop the graph IR.
  SmallVector<Operation *> old;
  for (Operation &op : module.getBody()->getOperations())
    old.push_back(&op);
  b.setInsertionPointToEnd(module.getBody());
  for (auto [i, s] : llvm::enumerate(states)) {
    auto op = rt::StateOp::create(
        b, module.getLoc(), s.name, s.type, s.role,
        static_cast<uint64_t>(best.offsets[i]), static_cast<uint64_t>(s.bytes),
        s.init, llvm::APFloat(s.std), s.hf, s.stacked, s.noWeightDecay);
    if (s.initRows > 0)
      op->setAttr("init_rows", b.getI64IntegerAttr(s.initRows));
    if (best.host[i]) // a remote buffer: `at` is an offset in host memory
      op->setAttr("host", b.getUnitAttr());
  }
  for (auto [k, lowering] : llvm::enumerate(lowerings)) {
    PlacedProgram &placed = best.programs[k];
    SmallVector<StringRef> inputNames(lowering->inputs.begin(),
                                      lowering->inputs.end());
    b.setInsertionPointToEnd(module.getBody());
    auto program = rt::ProgramOp::create(
        b, module.getLoc(), names[k], b.getStrArrayAttr(inputNames),
        placed.registers, placed.plan.peakBytes);
    program->setAttr("rt.max_live_bytes",
                     b.getI64IntegerAttr(placed.plan.maxLiveBytes));
    if (!placed.phases.empty()) {
      SmallVector<Attribute> phases;
      for (const PhaseStats &ps : placed.phases)
        phases.push_back(b.getDictionaryAttr({
            b.getNamedAttr("name", b.getStringAttr(ps.name)),
            b.getNamedAttr("executions", b.getI64IntegerAttr(ps.executions)),
            b.getNamedAttr("bytes_in", b.getI64IntegerAttr(ps.bytesIn)),
            b.getNamedAttr("bytes_out", b.getI64IntegerAttr(ps.bytesOut)),
            b.getNamedAttr("flops", b.getF64FloatAttr(ps.flops)),
            b.getNamedAttr("peak_bytes", b.getI64IntegerAttr(ps.peakBytes)),
        }));
      program->setAttr("rt.phases", b.getArrayAttr(phases));
      SmallVector<StringRef> phaseNames(lowering->phaseNames.begin(),
                                        lowering->phaseNames.end());
      program->setAttr("rt.phase_names", b.getStrArrayAttr(phaseNames));
    }
    Block *block = b.createBlock(&program.getBody());
    // Nested loops: a stack of (block, remaining instructions).
    SmallVector<std::pair<Block *, int64_t>> stack = {{block, INT64_MAX}};
    const std::vector<Buffer> &bufs = placed.buffers;
    for (const Instr &in : placed.instrs) {
      OpBuilder ib = OpBuilder::atBlockEnd(stack.back().first);
      // Every enclosing loop's body counts this instruction.
      for (size_t k = 1; k < stack.size(); ++k)
        --stack[k].second;
      if (in.kernel.empty()) {
        auto loop = rt::LoopOp::create(
            ib, module.getLoc(), in.loopRegister, in.loopCount,
            in.parityRegister >= 0 ? ib.getI64IntegerAttr(in.parityRegister)
                                   : IntegerAttr());
        Block *body = ib.createBlock(&loop.getBody());
        stack.push_back({body, in.loopBody});
        while (stack.size() > 1 && stack.back().second == 0)
          stack.pop_back();
        continue;
      }
      SmallVector<Attribute> bufAttrs, intAttrs;
      for (const Ref &r : in.buffers) {
        Affine a = r.offset + Affine::constant(bufs[r.buffer].stateOffset);
        bufAttrs.push_back(a.attr(ib, r.bytes));
      }
      for (const Affine &a : in.ints)
        intAttrs.push_back(a.attr(ib));
      rt::KernelOp::create(ib, module.getLoc(), in.kernel,
                           ib.getArrayAttr(bufAttrs), ib.getArrayAttr(intAttrs),
                           ib.getDenseF64ArrayAttr(in.floats));
      while (stack.size() > 1 && stack.back().second == 0)
        stack.pop_back();
    }
  }
  for (Operation *op : old)
    op->erase();
  int64_t params = 0;
  for (const StateInfo &s : states)
    if (s.role == "parameter")
      params += s.type.getNumElements();
  module->setAttr("rt.arena_bytes", b.getI64IntegerAttr(best.peak()));
  module->setAttr("rt.state_bytes", b.getI64IntegerAttr(best.deviceStateBytes));
  if (best.hostBytes > 0) {
    module->setAttr("rt.host_bytes", b.getI64IntegerAttr(best.hostBytes));
    int64_t doubled = 0, single = 0;
    for (const PlacedProgram &pp : best.programs) {
      doubled += pp.prefetchedGroups;
      single += pp.syncGroups;
    }
    if (prefetchNote.empty())
      prefetchNote = llvm::formatv("on ({0})", describe(prefetching));
    prefetchNote += llvm::formatv(
        "; {0} staged ranges double-buffered (loaded while the previous "
        "layer or micro-batch computes), {1} loaded when their phase starts",
        doubled, single);
    module->setAttr("rt.prefetch", b.getStringAttr(prefetchNote));
  }
  module->setAttr("rt.alignment", b.getI64IntegerAttr(kAlignment));
  module->setAttr("rt.parameter_count", b.getI64IntegerAttr(params));
}

} // namespace
