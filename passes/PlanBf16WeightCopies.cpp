//===- PlanBf16WeightCopies.cpp - one bf16 copy of each weight ------------===//
//
// ferry-plan-bf16-weight-copies, on rt calls over virtual buffers: under
// training.precision bf16, a GEMM whose operand is an fp32 parameter (a
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

#include "passes/lowering/RtProgram.h"
#include "runtime/executable/KernelTable.h"

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

bool isGemm(const Instr &in) {
  return in.kernel == "gemm" || in.kernel == "gemm_epilogue";
}

// The enclosing loop header of each instruction (-1: the program's body).
std::vector<int64_t> parentsOf(const std::vector<Instr> &instrs) {
  std::vector<int64_t> parent(instrs.size(), -1);
  std::vector<int64_t> open; // loop headers whose body contains q
  for (int64_t q = 0; q < static_cast<int64_t>(instrs.size()); ++q) {
    while (!open.empty() && q > open.back() + instrs[open.back()].loopBody)
      open.pop_back();
    parent[q] = open.empty() ? -1 : open.back();
    if (instrs[q].isLoop())
      open.push_back(q);
  }
  return parent;
}

bool writesState(const Instr &in, int state) {
  if (in.isLoop())
    return false;
  for (size_t b = 0; b < in.buffers.size(); ++b) {
    if (in.buffers[b].buffer != state)
      continue;
    bool reads = false, writes = false;
    accessOf(in, b, reads, writes);
    if (writes)
      return true;
  }
  return false;
}

// Whether any instruction in positions [from, to] writes the state.
bool writtenIn(const std::vector<Instr> &instrs, int64_t from, int64_t to,
               int state) {
  for (int64_t q = from; q <= to; ++q)
    if (writesState(instrs[q], state))
      return true;
  return false;
}

// Whether positions [from, to] begin or end a phase.
bool phaseMarkerIn(const std::vector<Instr> &instrs, int64_t from, int64_t to) {
  for (int64_t q = from; q <= to; ++q)
    if (instrs[q].kernel == "phase_begin" || instrs[q].kernel == "phase_end")
      return true;
  return false;
}

// A loop whose body begins or ends a phase: a copy made outside it would
// read a weight outside the phases (pinning it to the device) and live
// across them.
bool crossesPhase(const std::vector<Instr> &instrs, int64_t loop) {
  return phaseMarkerIn(instrs, loop + 1, loop + instrs[loop].loopBody);
}

// Without trailing zero coefficients (how the IR prints it).
Affine trimmed(Affine a) {
  while (!a.coeffs.empty() && a.coeffs.back() == 0)
    a.coeffs.pop_back();
  return a;
}

struct Copy {
  int buffer;   // the bf16 temporary
  int64_t site; // the instruction it is made before
};

struct PlanBf16WeightCopiesPass
    : public ferry::impl::PlanBf16WeightCopiesPassBase<
          PlanBf16WeightCopiesPass> {
  using PlanBf16WeightCopiesPassBase::PlanBf16WeightCopiesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::vector<StateInfo> states = readStates(module);
    for (rt::ProgramOp op : module.getOps<rt::ProgramOp>()) {
      FailureOr<Program> p = readProgram(op, states);
      if (failed(p))
        return signalPassFailure();
      if (plan(*p, states))
        writeProgram(op, *p);
    }
  }

  // Returns whether the program changed.
  bool plan(Program &p, const std::vector<StateInfo> &states) {
    int numStates = static_cast<int>(states.size());
    std::vector<int64_t> parent = parentsOf(p.instrs);
    // (state, offset, bytes, block) -> the copies made in that block, in
    // order.
    using Key = std::tuple<int, std::vector<int64_t>, int64_t, int64_t>;
    std::map<Key, std::vector<Copy>> copies;
    std::vector<std::pair<int64_t, Instr>> inserts; // before position
    for (int64_t q = 0; q < static_cast<int64_t>(p.instrs.size()); ++q) {
      Instr &in = p.instrs[q];
      if (!isGemm(in))
        continue;
      std::optional<kernels::Kernel> kernel = kernels::kernelByName(in.kernel);
      std::vector<int64_t> ints;
      for (const Affine &a : in.ints)
        ints.push_back(a.c);
      kernels::Resolved r = kernels::resolve(*kernel, ints, in.buffers.size());
      for (size_t b = 0; b < 2; ++b) {
        Ref &ref = in.buffers[b];
        if (ref.buffer >= numStates || states[ref.buffer].role != "parameter" ||
            (in.bf16 >> b & 1) || !r.buffers[b].bf16 ||
            r.buffers[b].type != kernels::ElementType::F32 ||
            ref.bytes % 4 != 0 || ref.bytes == 0)
          continue;
        // A bias-gradient epilogue sums the unrounded a (its kernel record).
        if (b == 0 && in.kernel == "gemm_epilogue" && in.ints.size() > 11 &&
            in.ints[11].c == 2)
          continue;
        // Out of every loop that keeps the weight and stays in one phase.
        // A loop that moves the address (a stacked weight's layer loop)
        // widens the copy to every iteration's range.
        int64_t site = q;
        Affine source = ref.offset; // the copy's range: source, span bytes
        int64_t span = ref.bytes;
        for (int64_t l = parent[q]; l >= 0; l = parent[l]) {
          const Instr &loop = p.instrs[l];
          // (A loop that may not run would widen the range below zero
          // iterations.)
          if (loop.loopCount < 1 ||
              writtenIn(p.instrs, l + 1, l + loop.loopBody, ref.buffer) ||
              crossesPhase(p.instrs, l))
            break;
          int64_t step = source.coeff(loop.loopRegister);
          if (step != 0) {
            int64_t reach = step * (loop.loopCount - 1);
            source = source.withRegister(loop.loopRegister, 0) +
                     Affine::constant(std::min<int64_t>(0, reach));
            span += std::abs(reach);
          }
          site = l;
        }
        source = trimmed(source);
        Affine within = trimmed(ref.offset + source * -1); // in the copy
        if (!halvable(within))
          continue;
        std::vector<int64_t> offset{source.c};
        offset.insert(offset.end(), source.coeffs.begin(), source.coeffs.end());
        std::vector<Copy> &made =
            copies[Key{ref.buffer, offset, span, parent[site]}];
        int copy = -1;
        // Shared while nothing writes the parameter and no phase begins or
        // ends in between (a copy lives in one phase).
        if (!made.empty() &&
            !writtenIn(p.instrs, made.back().site, q, ref.buffer) &&
            !phaseMarkerIn(p.instrs, made.back().site, q))
          copy = made.back().buffer;
        if (copy < 0) {
          copy = static_cast<int>(p.buffers.size());
          Buffer buf;
          buf.bytes = span / 2;
          buf.bf16 = true;
          buf.label = "bf16 copy of @" + states[ref.buffer].name;
          p.buffers.push_back(buf);
          Instr scale;
          scale.kernel = "scale";
          scale.buffers.push_back(Ref{ref.buffer, source, span});
          scale.buffers.push_back(Ref{copy, Affine::constant(0), buf.bytes});
          scale.ints.push_back(Affine::constant(span / 4));
          scale.floats.push_back(1.0);
          scale.bf16 = 2; // out
          inserts.push_back({site, scale});
          made.push_back(Copy{copy, site});
        }
        ref = Ref{copy, halved(within), ref.bytes / 2};
        in.bf16 |= uint64_t{1} << b;
      }
    }
    if (inserts.empty())
      return false;
    insertBefore(p, inserts);
    return true;
  }

  // Inserts each instruction before its position (stable for equal
  // positions), growing the bodies of the loops that contain it.
  static void insertBefore(Program &p,
                           std::vector<std::pair<int64_t, Instr>> &inserts) {
    std::stable_sort(
        inserts.begin(), inserts.end(),
        [](const auto &x, const auto &y) { return x.first < y.first; });
    std::vector<Instr> out;
    out.reserve(p.instrs.size() + inserts.size());
    std::vector<int64_t> newIndex(p.instrs.size());
    size_t next = 0;
    for (int64_t q = 0; q < static_cast<int64_t>(p.instrs.size()); ++q) {
      for (; next < inserts.size() && inserts[next].first == q; ++next)
        out.push_back(inserts[next].second);
      newIndex[q] = static_cast<int64_t>(out.size());
      out.push_back(p.instrs[q]);
    }
    // A loop's body grows by what was inserted strictly inside it.
    for (int64_t q = 0; q < static_cast<int64_t>(p.instrs.size()); ++q) {
      if (!p.instrs[q].isLoop())
        continue;
      int64_t last = q + p.instrs[q].loopBody;
      out[newIndex[q]].loopBody = newIndex[last] - newIndex[q];
    }
    p.instrs = std::move(out);
  }
};

} // namespace
