//===- PlanBf16WeightCopies.cpp - one bf16 copy of each weight ------------===//
//
// ferry-plan-bf16-weight-copies, on the rt IR before the layout, in place:
// under training.precision bf16, a GEMM whose operand is an fp32 parameter (a
// master weight) reads a bf16 copy of it instead, made by one `scale` by 1
// (fp32 in, bf16 out, rounded to nearest even) as far out of the
// surrounding loops as the weight stays unchanged. Without it every GEMM
// call rounds its weight into its workspace again: once per micro-batch,
// forward and backward. With it a weight is rounded once per update in a
// resident program and once per phase in a phased one (the copy is made
// inside the phase that loads the weight, so it never outlives the phase).
//
// The rounding is the one the GEMM did (to nearest even), so the products
// are the same bits; what changes is the traffic and the memory: the copy
// is a temporary (2 bytes an element) alive from where it is made to its
// last GEMM.
//
// Where the copy is made: before the outermost loop around the GEMM that
// writes no part of the parameter and neither begins nor ends a phase. A
// loop that moves the operand's address (the layer loop of a stacked
// weight) widens the copy to the range every iteration reads, so a
// resident program copies all layers' weights once and its layer loop
// reads its layer's part. Calls in the same block that read the same range
// share a copy while nothing writes the parameter between them (a resident
// program's forward and backward GEMMs). Before ferry-place-buffers, so the
// budget sees the copies.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/rt/RtKernelCall.h"
#include "passes/lowering/RtRanges.h"

#include <cstdlib>
#include <map>
#include <tuple>

namespace ferry {
#define GEN_PASS_DEF_PLANBF16WEIGHTCOPIESPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// The program's instructions with their positions, and what the copies'
// placement asks of them.
struct Positions {
  Instructions ins;
  llvm::DenseMap<Operation *, int64_t> at;

  explicit Positions(rt::ProgramOp program)
      : ins(instructionsInOrder(program)) {
    for (auto [q, op] : llvm::enumerate(ins.ops))
      at[op] = static_cast<int64_t>(q);
  }

  // Whether any call in positions [from, to] writes the state.
  bool writtenIn(int64_t from, int64_t to, StringAttr state) const {
    for (int64_t q = from; q <= to; ++q) {
      auto call = dyn_cast<rt::KernelCallOpInterface>(ins.ops[q]);
      if (!call)
        continue;
      for (OpOperand &range : call->getOpOperands()) {
        if (stateOf(bufferOf(range.get())) != state)
          continue;
        bool reads = false, writes = false;
        accessOf(call, range.getOperandNumber(), reads, writes);
        if (writes)
          return true;
      }
    }
    return false;
  }

  // Whether positions [from, to] begin or end a phase.
  bool phaseMarkerIn(int64_t from, int64_t to) const {
    for (int64_t q = from; q <= to; ++q)
      if (isa<rt::PhaseBeginOp, rt::PhaseEndOp>(ins.ops[q]))
        return true;
    return false;
  }
};

// Without trailing zero coefficients (how the IR prints it).
Affine trimmed(Affine a) {
  while (!a.coeffs.empty() && a.coeffs.back() == 0)
    a.coeffs.pop_back();
  return a;
}

struct Copy {
  Value buffer; // the bf16 temporary
  int64_t site; // the instruction it is made before
};

// A copy to make: `scale` by 1 of the state's range into the temporary,
// before the instruction at `site`.
struct CopyOp {
  int64_t site;
  Value state, copy;
  Affine source;
  int64_t span;
};

// The bias-gradient epilogue sums the unrounded a (its kernel record).
bool sumsUnroundedA(Operation *gemm) {
  auto fused = dyn_cast<rt::GemmEpilogueOp>(gemm);
  return fused && fused.getEpilogue()[0] == 2;
}

struct PlanBf16WeightCopiesPass
    : public ferry::impl::PlanBf16WeightCopiesPassBase<
          PlanBf16WeightCopiesPass> {
  using PlanBf16WeightCopiesPassBase::PlanBf16WeightCopiesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<StateInfo> states;
    for (StateInfo &s : readStates(module))
      states[s.name] = s;
    for (rt::ProgramOp program : module.getOps<rt::ProgramOp>()) {
      if (failed(checkBeforeLayout(program)))
        return signalPassFailure();
      plan(program, states);
    }
  }

  void plan(rt::ProgramOp program, const llvm::StringMap<StateInfo> &states) {
    Positions pos(program);
    // (state, offset, bytes, block) -> the copies made in that block, in
    // order.
    using Key = std::tuple<std::string, std::vector<int64_t>, int64_t, Block *>;
    std::map<Key, std::vector<Copy>> copies;
    std::vector<CopyOp> inserts;
    for (auto [q, op] : llvm::enumerate(pos.ins.ops)) {
      if (!isa<rt::GemmOp, rt::GemmEpilogueOp>(op))
        continue;
      auto call = cast<rt::KernelCallOpInterface>(op);
      kernels::Resolved r = resolvedUses(call);
      uint64_t mask = rt::kernelCallParts(call).bf16;
      for (unsigned b = 0; b < 2; ++b) {
        rt::SliceOp slice = sliceOf(op->getOperand(b));
        StringAttr state = stateOf(slice.getSource());
        auto bytes = static_cast<int64_t>(slice.getBytes());
        if (!state || states.lookup(state.getValue()).role != "parameter" ||
            (mask >> b & 1) || !r.buffers[b].bf16 ||
            r.buffers[b].type != kernels::ElementType::F32 || bytes % 4 != 0 ||
            bytes == 0 || (b == 0 && sumsUnroundedA(op)))
          continue;
        // Out of every loop that keeps the weight and stays in one phase.
        // A loop that moves the address (a stacked weight's layer loop)
        // widens the copy to every iteration's range.
        Operation *site = op;
        Affine offset = offsetOf(slice);
        Affine source = offset; // the copy's range: source, span bytes
        int64_t span = bytes;
        for (auto loop = op->getParentOfType<rt::LoopOp>(); loop;
             loop = loop->getParentOfType<rt::LoopOp>()) {
          int64_t l = pos.at.lookup(loop);
          auto count = static_cast<int64_t>(loop.getCount());
          // (A loop that may not run would widen the range below zero
          // iterations.) A loop whose body begins or ends a phase: a copy
          // made outside it would read a weight outside the phases (pinning
          // it to the device) and live across them.
          if (count < 1 || pos.writtenIn(l + 1, pos.ins.loopEnds[l], state) ||
              pos.phaseMarkerIn(l + 1, pos.ins.loopEnds[l]))
            break;
          auto reg = static_cast<int64_t>(loop.getRegisterIndex());
          int64_t step = source.coeff(reg);
          if (step != 0) {
            int64_t reach = step * (count - 1);
            source = source.withRegister(reg, 0) +
                     Affine::constant(std::min<int64_t>(0, reach));
            span += std::abs(reach);
          }
          site = loop;
        }
        source = trimmed(source);
        Affine within = trimmed(offset + source * -1); // in the copy
        if (!halvable(within))
          continue;
        std::vector<int64_t> key{source.c};
        key.insert(key.end(), source.coeffs.begin(), source.coeffs.end());
        std::vector<Copy> &made =
            copies[Key{state.str(), key, span, site->getBlock()}];
        Value copy;
        // Shared while nothing writes the parameter and no phase begins or
        // ends in between (a copy lives in one phase).
        int64_t q64 = static_cast<int64_t>(q);
        if (!made.empty() && !pos.writtenIn(made.back().site, q64, state) &&
            !pos.phaseMarkerIn(made.back().site, q64))
          copy = made.back().buffer;
        if (!copy) {
          rt::AllocOp alloc =
              appendAlloc(program, span / 2, "bf16 copy of @" + state.str());
          alloc.setBf16(true);
          copy = alloc;
          inserts.push_back(CopyOp{pos.at.lookup(site), slice.getSource(), copy,
                                   source, span});
          made.push_back(Copy{copy, pos.at.lookup(site)});
        }
        setRange(op, b, copy, halved(within), bytes / 2);
        mask |= uint64_t{1} << b;
        setBf16Mask(call, mask);
      }
    }
    // Each copy before its site, in the order planned.
    std::stable_sort(
        inserts.begin(), inserts.end(),
        [](const CopyOp &x, const CopyOp &y) { return x.site < y.site; });
    for (const CopyOp &c : inserts) {
      OpBuilder b(firstOpOf(pos.ins.ops[c.site]));
      Location loc = program.getLoc();
      Value x = sliceBefore(&*b.getInsertionPoint(), c.state, c.source, c.span);
      Value out =
          sliceBefore(&*b.getInsertionPoint(), c.copy, Affine(), c.span / 2);
      rt::ScaleOp::create(b, loc, x, out, Affine::constant(c.span / 4).attr(b),
                          b.getF64FloatAttr(1.0),
                          b.getI64IntegerAttr(2)); // out is bf16
    }
  }
};

} // namespace
