//===- ForwardBuffers.cpp - results computed where they are copied to ----===//
//
// ferry-forward-buffers, on rt calls over virtual buffers: removes copies
// and accumulations a producer can do itself. The temporaries it frees stay
// unused (ferry-layout-arena gives them no space).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "passes/lowering/RtProgram.h"

#include <cmath>

namespace ferry {
#define GEN_PASS_DEF_FORWARDBUFFERSPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// Two rewrites that save a pass over memory each, on the instruction list:
//  * a GEMM whose result only feeds `accumulate` into a destination adds into
//    that destination itself (beta = 1): weight gradients of every layer;
//  * a temporary that is only copied into a destination (a stash slot, a
//    state) is computed in the destination instead; an all-reduce of the
//    destination itself becomes an all-reduce in place.
// Both require every use of the temporary to sit in the same loop body as
// the rewritten instruction and nothing else to touch the destination's
// buffer meanwhile, so the result is the same program with fewer copies.
void forwardIntoDestinations(Program &program) {
  std::vector<Buffer> &buffers = program.buffers;
  std::vector<Instr> &instrs = program.instrs;
  size_t n = instrs.size();
  // Innermost enclosing loop body of each position, [begin, end].
  std::vector<std::pair<int64_t, int64_t>> scope(n, {-1, -1});
  for (size_t p = 0; p < n; ++p)
    if (instrs[p].isLoop())
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
      if ((!gemm && !scatter) || producer.buffers.size() <= out ||
          producer.ints.size() <= flag ||
          producer.buffers[out].buffer != src.buffer ||
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
    // copy T into D: compute T in D. An all-reduce of D itself into T
    // may sum in place (MPI_IN_PLACE; NCCL allows it too): the gradient
    // sum of data parallelism needs no second gradient-sized buffer.
    const Instr &producer = instrs[tUses.front()];
    bool inPlaceSum = producer.kernel == "all_reduce" && tUses.size() == 2 &&
                      tUses.back() == p &&
                      producer.buffers[0].buffer == dst.buffer &&
                      producer.buffers[0].offset == dst.offset &&
                      producer.buffers[0].bytes == dst.bytes;
    if (tUses.back() != p &&
        !untouchedBetween(dst.buffer, tUses.front(), tUses.back(), p))
      continue;
    if (!inPlaceSum &&
        !untouchedBetween(dst.buffer, tUses.front(), p, p))
      continue;
    if (inPlaceSum && !untouchedBetween(dst.buffer, tUses.front() + 1, p, p))
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
    if (in.isLoop())
      in.loopBody = kept[p + 1 + in.loopBody] - kept[p + 1];
    out.push_back(std::move(in));
  }
  instrs = std::move(out);
}

struct ForwardBuffersPass
    : public ferry::impl::ForwardBuffersPassBase<ForwardBuffersPass> {
  using ForwardBuffersPassBase::ForwardBuffersPassBase;
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::vector<StateInfo> states = readStates(module);
    for (auto program : module.getOps<rt::ProgramOp>()) {
      FailureOr<Program> p = readProgram(program, states);
      if (failed(p))
        return signalPassFailure();
      forwardIntoDestinations(*p);
      writeProgram(program, *p);
    }
  }
};

} // namespace
