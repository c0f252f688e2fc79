//===- ForwardBuffers.cpp - results computed where they are copied to ----===//
//
// ferry-forward-buffers, on the rt IR before the layout, in place: removes
// copies and accumulations a producer can do itself, by pointing the
// producer's range at the destination. The temporaries it frees go with
// their rt.alloc.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "passes/lowering/RtRanges.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace ferry {
#define GEN_PASS_DEF_FORWARDBUFFERSPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// Two rewrites that save a pass over memory each, on a program's calls in
// order:
//  * a GEMM whose result only feeds `accumulate` into a destination adds into
//    that destination itself (beta = 1): weight gradients of every layer;
//  * a temporary that is only copied into a destination (a stash slot, a
//    state) is computed in the destination instead; an all-reduce of the
//    destination itself becomes an all-reduce in place.
// Both require every use of the temporary to sit in the same loop body as
// the rewritten call and nothing else to touch the destination's buffer
// meanwhile, so the result is the same program with fewer copies.
void forwardIntoDestinations(rt::ProgramOp program) {
  SmallVector<rt::KernelCallOpInterface> calls = kernelsInOrder(program);
  size_t n = calls.size();
  // The positions of the calls that take a range of each buffer (a state
  // is one buffer however many rt.state_refs name it).
  llvm::DenseMap<StringAttr, Value> stateBuffers;
  auto key = [&](Value buffer) {
    if (auto ref = buffer.getDefiningOp<rt::StateRefOp>())
      return stateBuffers.try_emplace(ref.getStateAttr().getAttr(), buffer)
          .first->second;
    return buffer;
  };
  llvm::DenseMap<Value, std::vector<size_t>> uses;
  for (size_t p = 0; p < n; ++p)
    for (Value range : calls[p]->getOperands()) {
      std::vector<size_t> &u = uses[key(bufferOf(range))];
      if (u.empty() || u.back() != p)
        u.push_back(p);
    }
  std::vector<bool> deleted(n, false);
  // A range that is all of a temporary.
  auto wholeTemp = [&](Value range) {
    rt::SliceOp slice = sliceOf(range);
    auto alloc = slice.getSource().getDefiningOp<rt::AllocOp>();
    Affine offset = offsetOf(slice);
    return alloc && offset.isConstant() && offset.c == 0 &&
           slice.getBytes() == alloc.getBytes();
  };
  auto untouchedBetween = [&](Value buffer, size_t from, size_t to,
                              size_t except) {
    for (size_t p : uses[buffer])
      if (p >= from && p <= to && p != except && !deleted[p])
        return false;
    return true;
  };
  // In the same loop body (or both outside loops).
  auto sameScope = [&](const std::vector<size_t> &positions, size_t at) {
    for (size_t p : positions)
      if (calls[p]->getBlock() != calls[at]->getBlock())
        return false;
    return true;
  };
  auto addUse = [&](Value buffer, size_t p) {
    std::vector<size_t> &u = uses[buffer];
    u.insert(std::upper_bound(u.begin(), u.end(), p), p);
  };
  for (size_t p = 0; p < n; ++p) {
    Operation *in = calls[p];
    bool isAccumulate = isa<rt::AccumulateOp>(in);
    if ((!isAccumulate && !isa<rt::CopyOp>(in)) || deleted[p])
      continue;
    Value src = in->getOperand(0), dst = in->getOperand(1);
    rt::SliceOp srcSlice = sliceOf(src), dstSlice = sliceOf(dst);
    Value temp = srcSlice.getSource(), dstBuffer = key(dstSlice.getSource());
    Affine dstOffset = offsetOf(dstSlice);
    auto dstBytes = static_cast<int64_t>(dstSlice.getBytes());
    if (!wholeTemp(src) || dstSlice.getBytes() != srcSlice.getBytes() ||
        temp == dstBuffer)
      continue;
    std::vector<size_t> &tUses = uses[temp];
    if (!sameScope(tUses, p) || tUses.front() >= p)
      continue;
    if (isAccumulate) {
      // gemm (or embedding_grad) -> T, accumulate T into D: the producer
      // adds into D itself, its accumulate flag set.
      if (tUses.size() != 2 || tUses[1] != p)
        continue;
      Operation *producer = calls[tUses[0]];
      // A bias-gradient epilogue writes its own output; a bias epilogue
      // would add the bias after the sum, not before (not the same bits).
      // alpha * AB + D in one rounding equals D + (alpha * AB) only when
      // alpha * AB is exact: alpha a power of two.
      auto powerOfTwo = [](double alpha) {
        int exponent;
        return alpha != 0.0 && std::frexp(alpha, &exponent) == 0.5;
      };
      Affine flag;
      if (auto gemm = dyn_cast<rt::GemmOp>(producer)) {
        if (!powerOfTwo(gemm.getAlpha().convertToDouble()))
          continue;
        flag = Affine::fromArray(gemm.getAccumulate());
      } else if (auto gemm = dyn_cast<rt::GemmEpilogueOp>(producer)) {
        if (Affine::fromArray(gemm.getEpilogue()).c != 2 ||
            !powerOfTwo(gemm.getAlpha().convertToDouble()))
          continue;
        flag = Affine::fromArray(gemm.getAccumulate());
      } else if (auto grad = dyn_cast<rt::EmbeddingGradOp>(producer)) {
        std::optional<ArrayRef<int64_t>> accumulate = grad.getAccumulate();
        if (!accumulate)
          continue;
        flag = Affine::fromArray(*accumulate);
      } else {
        continue;
      }
      // The output is buffer 2 of all three (c, dtable).
      constexpr unsigned out = 2;
      if (bufferOf(producer->getOperand(out)) != temp || flag.c != 0)
        continue;
      bool readsT = false;
      for (auto [b, range] : llvm::enumerate(producer->getOperands()))
        readsT |= b != out && bufferOf(range) == temp;
      if (readsT || !untouchedBetween(dstBuffer, tUses[0], p, p))
        continue;
      setRange(producer, out, dstBuffer, dstOffset, dstBytes);
      Builder b(producer->getContext());
      llvm::TypeSwitch<Operation *>(producer)
          .Case<rt::GemmOp, rt::GemmEpilogueOp, rt::EmbeddingGradOp>(
              [&](auto op) {
                op.setAccumulateAttr(b.getDenseI64ArrayAttr({1}));
              });
      addUse(dstBuffer, tUses[0]);
      deleted[p] = true;
      continue;
    }
    // copy T into D: compute T in D. An all-reduce of D itself into T
    // may sum in place (MPI_IN_PLACE; NCCL allows it too): the gradient
    // sum of data parallelism needs no second gradient-sized buffer.
    auto sum = dyn_cast<rt::AllReduceOp>(calls[tUses.front()].getOperation());
    bool inPlaceSum = false;
    if (sum && tUses.size() == 2 && tUses.back() == p) {
      rt::SliceOp x = sliceOf(sum.getX());
      inPlaceSum = key(x.getSource()) == dstBuffer &&
                   offsetOf(x) == dstOffset &&
                   x.getBytes() == dstSlice.getBytes();
    }
    if (tUses.back() != p &&
        !untouchedBetween(dstBuffer, tUses.front(), tUses.back(), p))
      continue;
    if (!inPlaceSum && !untouchedBetween(dstBuffer, tUses.front(), p, p))
      continue;
    if (inPlaceSum && !untouchedBetween(dstBuffer, tUses.front() + 1, p, p))
      continue;
    for (size_t q : tUses) {
      if (q == p)
        continue;
      for (unsigned b = 0; b < calls[q]->getNumOperands(); ++b)
        if (bufferOf(calls[q]->getOperand(b)) == temp)
          setRange(calls[q], b, dstBuffer, dstOffset, dstBytes);
      addUse(dstBuffer, q);
    }
    tUses.clear();
    deleted[p] = true;
  }
  for (size_t p = 0; p < n; ++p)
    if (deleted[p])
      calls[p]->erase();
  eraseUnusedBuffers(program);
}

struct ForwardBuffersPass
    : public ferry::impl::ForwardBuffersPassBase<ForwardBuffersPass> {
  using ForwardBuffersPassBase::ForwardBuffersPassBase;
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override {
    for (auto program : getOperation().getOps<rt::ProgramOp>()) {
      // Every range must be a slice of one of the program's buffers.
      WalkResult bad = program.getBody().walk([&](Operation *op) {
        if (isa<rt::KernelCallOpInterface>(op))
          for (Value range : op->getOperands())
            if (!sliceOf(range)) {
              op->emitOpError() << "takes a range that is not an rt.slice";
              return WalkResult::interrupt();
            }
        return WalkResult::advance();
      });
      if (bad.wasInterrupted())
        return signalPassFailure();
      forwardIntoDestinations(program);
    }
  }
};

} // namespace
