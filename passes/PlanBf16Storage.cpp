//===- PlanBf16Storage.cpp - activations stored as bf16 -------------------===//
//
// ferry-plan-bf16-storage, on the rt IR before the layout, in place: under
// training.precision bf16, stores as bf16 (2 bytes an element) every
// activation whose every use may take it so: the program's temporaries and
// the stashed activations (`stash` states), each one only where every
// kernel that reads or writes it declares the buffer FERRY_BF16 in
// its kernel record for that call. Buffers a `copy` connects share the decision
// (a copy moves bytes). Sizes, offsets and copy lengths halve; each call
// gets the mask of its buffers stored as bf16 (`bf16`); the temporaries get
// `bf16`, the states a bf16 tensor type. Parameters, gradients, optimizer
// state, inputs and metrics stay fp32: the master weights and everything
// the optimizer reads. Before the budget's placement, so the smaller sizes
// are what it places and what phased runs move.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/rt/RtKernelCall.h"
#include "passes/lowering/RtRanges.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <map>

namespace ferry {
#define GEN_PASS_DEF_PLANBF16STORAGEPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// A buffer: a state (its symbol, whichever program names it) or a
// temporary (its rt.alloc's value).
using Key = const void *;
Key keyOf(Value buffer) {
  if (StringAttr state = stateOf(buffer))
    return state.getAsOpaquePointer();
  return buffer.getAsOpaquePointer();
}

struct UnionFind {
  std::map<Key, Key> parent;
  Key find(Key k) {
    auto it = parent.find(k);
    if (it == parent.end() || it->second == k)
      return k;
    Key root = find(it->second);
    parent[k] = root;
    return root;
  }
  void join(Key a, Key b) { parent[find(a)] = find(b); }
};

// A GEMM call's operands, for either kind.
struct Gemm {
  Value a, b;
  OpOperand *c;
  Value workspace;
};
std::optional<Gemm> gemmOf(Operation *op) {
  if (auto g = dyn_cast<rt::GemmOp>(op))
    return Gemm{g.getA(), g.getB(), &g.getCMutable(), g.getWorkspace()};
  if (auto g = dyn_cast<rt::GemmEpilogueOp>(op))
    return Gemm{g.getA(), g.getB(), &g.getCMutable(), g.getWorkspace()};
  return std::nullopt;
}

struct PlanBf16StoragePass
    : public ferry::impl::PlanBf16StoragePassBase<PlanBf16StoragePass> {
  using PlanBf16StoragePassBase::PlanBf16StoragePassBase;

  std::map<Key, bool> eligible;
  UnionFind groups;
  std::map<Key, bool> groupOk, matmul;

  bool okGroup(Key k) { return eligible.count(k) && groupOk[groups.find(k)]; }
  bool half(Key k) { return okGroup(k) && matmul.count(groups.find(k)); }

  // Every use must allow bf16; copies join their two ends.
  void checkUses(rt::KernelCallOpInterface call) {
    auto copy = dyn_cast<rt::CopyOp>(call.getOperation());
    std::optional<Gemm> gemm = gemmOf(call);
    kernels::Resolved r = resolvedUses(call);
    for (OpOperand &range : call->getOpOperands()) {
      auto it = eligible.find(keyOf(bufferOf(range.get())));
      if (it == eligible.end())
        continue;
      rt::SliceOp slice = sliceOf(range.get());
      unsigned b = range.getOperandNumber();
      bool ok = halvable(offsetOf(slice)) && slice.getBytes() % 4 == 0;
      // A GEMM's bf16 result goes through its workspace in fp32.
      if (gemm && &range == gemm->c && !gemm->workspace)
        ok = false;
      if (copy) {
        Affine bytes = Affine::fromArray(copy.getBytes());
        ok = ok && bytes.isConstant() && bytes.c % 4 == 0;
      } else {
        ok = ok && r.buffers[b].bf16 &&
             r.buffers[b].type == kernels::ElementType::F32;
      }
      it->second = it->second && ok;
    }
    if (!copy)
      return;
    Key src = keyOf(bufferOf(copy.getSrc())),
        dst = keyOf(bufferOf(copy.getDst()));
    if (eligible.count(src) && eligible.count(dst)) {
      groups.join(src, dst);
      return;
    }
    for (Key k : {src, dst}) // a copy to or from an fp32 tensor keeps its end
      if (eligible.count(k))
        eligible[k] = false;
  }

  // Grows the set of groups stored as bf16 through `call` when it is an
  // element-wise call on one of them: its same-sized operands join.
  bool growThrough(rt::KernelCallOpInterface call) {
    if (isa<rt::CopyOp>(call.getOperation()) || gemmOf(call))
      return false;
    int64_t bytes = -1;
    for (Value range : call->getOperands()) {
      Key k = keyOf(bufferOf(range));
      if (okGroup(k) && matmul.count(groups.find(k)))
        bytes = static_cast<int64_t>(sliceOf(range).getBytes());
    }
    if (bytes < 0)
      return false;
    bool grew = false;
    for (Value range : call->getOperands()) {
      Key k = keyOf(bufferOf(range));
      if (okGroup(k) &&
          static_cast<int64_t>(sliceOf(range).getBytes()) == bytes &&
          !matmul.count(groups.find(k))) {
        matmul[groups.find(k)] = true;
        grew = true;
      }
    }
    return grew;
  }

  // Sizes, offsets, copy lengths and the masks of one program.
  void rewrite(rt::ProgramOp program) {
    Builder builder(program.getContext());
    for (auto alloc : program.getBody().front().getOps<rt::AllocOp>())
      if (half(keyOf(alloc))) {
        alloc.setBytes(alloc.getBytes() / 2);
        alloc.setBf16(true);
      }
    llvm::DenseSet<Operation *> halvedSlices;
    for (rt::KernelCallOpInterface call : kernelsInOrder(program)) {
      auto copy = dyn_cast<rt::CopyOp>(call.getOperation());
      uint64_t mask = rt::bf16MaskOf(call);
      bool any = false;
      for (OpOperand &range : call->getOpOperands()) {
        if (!half(keyOf(bufferOf(range.get()))))
          continue;
        rt::SliceOp slice = sliceOf(range.get());
        if (halvedSlices.insert(slice).second) {
          slice.setOffsetAttr(halved(offsetOf(slice)).attr(builder));
          slice.setBytes(slice.getBytes() / 2);
        }
        any = true;
        if (!copy)
          mask |= uint64_t{1} << range.getOperandNumber();
      }
      if (copy && any) {
        Affine bytes = Affine::fromArray(copy.getBytes());
        bytes.c /= 2;
        copy.setBytesAttr(bytes.attr(builder));
      }
      rt::setBf16Mask(call, mask);
    }
    // A GEMM with an epilogue whose c is bf16 computes its fp32 result in
    // its workspace first, after the rounded inputs
    // (runtime/cuda/GemmInstr.cpp): 4 bytes per element of c, and 256 for
    // each of the three regions' alignment (a tiny GEMM's rounded copies
    // are padded too). Without an epilogue the library writes bf16.
    llvm::MapVector<Value, int64_t> grow;
    program.getBody().walk([&](rt::GemmEpilogueOp g) {
      // (Without a workspace, c was kept fp32 above; a mask given in the
      // input that says otherwise leaves the workspace alone.)
      if (!(rt::bf16MaskOf(g) >> 2 & 1) || !g.getWorkspace() ||
          !bufferOf(g.getWorkspace()).getDefiningOp<rt::AllocOp>())
        return;
      int64_t batch = g.getBatch()[0], m = g.getM()[0], n = g.getN()[0];
      int64_t extent = (batch - 1) * g.getStrideC()[0] + m * n;
      int64_t &extra = grow[bufferOf(g.getWorkspace())];
      extra = std::max(extra, 4 * extent + 3 * 256);
    });
    for (auto [ws, extra] : grow) {
      auto alloc = ws.getDefiningOp<rt::AllocOp>();
      uint64_t old = alloc.getBytes();
      alloc.setBytes(old + static_cast<uint64_t>(extra));
      for (Operation *user : alloc->getUsers())
        if (auto slice = dyn_cast<rt::SliceOp>(user);
            slice && slice.getBytes() == old)
          slice.setBytes(alloc.getBytes());
    }
  }

  void runOnOperation() override {
    // The plan is per run (a pass instance may run again).
    eligible.clear();
    groups.parent.clear();
    groupOk.clear();
    matmul.clear();
    if (storage == "fp32")
      return;
    if (storage != "bf16") {
      getOperation().emitError()
          << "ferry-plan-bf16-storage: storage must be fp32 or bf16, found '"
          << storage << "'";
      return signalPassFailure();
    }
    ModuleOp module = getOperation();
    SmallVector<rt::ProgramOp> programs(module.getOps<rt::ProgramOp>());
    for (rt::ProgramOp program : programs) {
      if (failed(checkBeforeLayout(program)))
        return signalPassFailure();
      eraseUnusedBuffers(program); // nothing to halve
    }
    // Candidates: temporaries and stashed f32 activations.
    Builder builder(module.getContext());
    for (rt::StateOp state : module.getOps<rt::StateOp>()) {
      auto type = dyn_cast<RankedTensorType>(state.getType());
      if (state.getRole() == "stash" && !state->hasAttr("host") && type &&
          type.getElementType().isF32())
        eligible[state.getSymNameAttr().getAsOpaquePointer()] = true;
    }
    for (rt::ProgramOp program : programs)
      for (auto alloc : program.getBody().front().getOps<rt::AllocOp>())
        eligible[keyOf(alloc)] = true;
    for (rt::ProgramOp program : programs)
      for (rt::KernelCallOpInterface call : kernelsInOrder(program))
        checkUses(call);
    for (auto [k, ok] : eligible) {
      auto [it, fresh] = groupOk.insert({groups.find(k), ok});
      if (!fresh)
        it->second = it->second && ok;
    }
    // Only activations: groups a GEMM reads, and the same-sized operands of
    // the element-wise calls that produce or consume them, transitively.
    // Scalars and small terms (the losses, the metrics, a gradient's seed)
    // stay fp32: they are not matmul operands and would save nothing.
    for (rt::ProgramOp program : programs)
      program.getBody().walk([&](Operation *op) {
        if (std::optional<Gemm> g = gemmOf(op))
          for (Value range : {g->a, g->b})
            if (Key k = keyOf(bufferOf(range)); okGroup(k))
              matmul[groups.find(k)] = true;
      });
    for (bool grew = true; grew;) {
      grew = false;
      for (rt::ProgramOp program : programs)
        for (rt::KernelCallOpInterface call : kernelsInOrder(program))
          grew |= growThrough(call);
    }
    for (rt::StateOp state : module.getOps<rt::StateOp>()) {
      if (!half(state.getSymNameAttr().getAsOpaquePointer()))
        continue;
      auto type = cast<RankedTensorType>(state.getType());
      state.setType(
          RankedTensorType::get(type.getShape(), builder.getBF16Type()));
      state.setBytes(state.getBytes() / 2);
    }
    for (rt::ProgramOp program : programs)
      rewrite(program);
  }
};

} // namespace
