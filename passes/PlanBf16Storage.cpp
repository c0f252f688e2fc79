//===- PlanBf16Storage.cpp - activations stored as bf16 -------------------===//
//
// ferry-plan-bf16-storage, on rt calls over virtual buffers: under
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

#include "passes/lowering/RtProgram.h"
#include "runtime/executable/KernelTable.h"

#include "mlir/IR/BuiltinTypes.h"

#include <map>
#include <numeric>

namespace ferry {
#define GEN_PASS_DEF_PLANBF16STORAGEPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// A buffer of one program (temporary) or of the module (state): states
// are keyed by program -1.
using Key = std::pair<int, int>;

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

bool isGemm(const Instr &in) {
  return in.kernel == "gemm" || in.kernel == "gemm_epilogue";
}
// A GEMM call's workspace buffer (kernel-record order).
size_t wsOf(const Instr &in) { return in.kernel == "gemm" ? 3 : 4; }

struct PlanBf16StoragePass
    : public ferry::impl::PlanBf16StoragePassBase<PlanBf16StoragePass> {
  using PlanBf16StoragePassBase::PlanBf16StoragePassBase;

  void runOnOperation() override {
    if (storage == "fp32")
      return;
    if (storage != "bf16") {
      getOperation().emitError()
          << "ferry-plan-bf16-storage: storage must be fp32 or bf16, found '"
          << storage << "'";
      return signalPassFailure();
    }
    ModuleOp module = getOperation();
    std::vector<StateInfo> states = readStates(module);
    SmallVector<rt::StateOp> stateOps(module.getOps<rt::StateOp>());
    SmallVector<rt::ProgramOp> programOps(module.getOps<rt::ProgramOp>());
    std::vector<Program> programs;
    for (rt::ProgramOp op : programOps) {
      FailureOr<Program> p = readProgram(op, states);
      if (failed(p))
        return signalPassFailure();
      programs.push_back(std::move(*p));
    }
    int numStates = static_cast<int>(states.size());
    auto keyOf = [&](int program, int buffer) {
      return buffer < numStates ? Key{-1, buffer} : Key{program, buffer};
    };
    // Candidates: temporaries and stashed f32 activations.
    std::map<Key, bool> eligible;
    for (int s = 0; s < numStates; ++s) {
      auto type = dyn_cast<RankedTensorType>(stateOps[s].getType());
      if (states[s].role == "stash" && !states[s].host && type &&
          type.getElementType().isF32())
        eligible[{-1, s}] = true;
    }
    for (auto [pi, p] : llvm::enumerate(programs))
      for (int b = numStates; b < static_cast<int>(p.buffers.size()); ++b)
        if (p.buffers[b].bytes > 0)
          eligible[{static_cast<int>(pi), b}] = true;

    // Every use must allow bf16; copies join their two ends.
    UnionFind groups;
    for (auto [pi, p] : llvm::enumerate(programs)) {
      for (const Instr &in : p.instrs) {
        if (in.isLoop())
          continue;
        bool copy = in.kernel == "copy";
        std::optional<kernels::Kernel> kernel =
            kernels::kernelByName(in.kernel);
        std::vector<int64_t> ints;
        for (const Affine &a : in.ints)
          ints.push_back(a.c);
        kernels::Resolved r =
            kernels::resolve(*kernel, ints, in.buffers.size());
        for (auto [b, ref] : llvm::enumerate(in.buffers)) {
          Key k = keyOf(static_cast<int>(pi), ref.buffer);
          auto it = eligible.find(k);
          if (it == eligible.end())
            continue;
          bool ok = halvable(ref.offset) && ref.bytes % 4 == 0;
          // A GEMM's bf16 result goes through its workspace in fp32.
          if (!copy && b == 2 && isGemm(in) && in.buffers.size() <= wsOf(in))
            ok = false;
          if (copy)
            ok = ok && in.ints[0].isConstant() && in.ints[0].c % 4 == 0;
          else
            ok = ok && r.buffers[b].bf16 &&
                 r.buffers[b].type == kernels::ElementType::F32;
          it->second = it->second && ok;
        }
        if (copy) {
          Key src = keyOf(static_cast<int>(pi), in.buffers[0].buffer);
          Key dst = keyOf(static_cast<int>(pi), in.buffers[1].buffer);
          bool both = eligible.count(src) && eligible.count(dst);
          if (both)
            groups.join(src, dst);
          else // a copy to or from an fp32 tensor keeps its end fp32
            for (Key k : {src, dst})
              if (eligible.count(k))
                eligible[k] = false;
        }
      }
    }
    std::map<Key, bool> groupOk;
    for (auto [k, ok] : eligible) {
      auto [it, fresh] = groupOk.insert({groups.find(k), ok});
      if (!fresh)
        it->second = it->second && ok;
    }
    // Only activations: groups a GEMM reads, and the same-sized operands of
    // the element-wise calls that produce or consume them, transitively.
    // Scalars and small terms (the losses, the metrics, a gradient's seed)
    // stay fp32: they are not matmul operands and would save nothing.
    std::map<Key, bool> matmul;
    auto okGroup = [&](Key k) {
      return eligible.count(k) && groupOk[groups.find(k)];
    };
    for (auto [pi, p] : llvm::enumerate(programs))
      for (const Instr &in : p.instrs)
        if (in.kernel == "gemm" || in.kernel == "gemm_epilogue")
          for (size_t b = 0; b < 2; ++b) {
            Key k = keyOf(static_cast<int>(pi), in.buffers[b].buffer);
            if (okGroup(k))
              matmul[groups.find(k)] = true;
          }
    for (bool grew = true; grew;) {
      grew = false;
      for (auto [pi, p] : llvm::enumerate(programs))
        for (const Instr &in : p.instrs) {
          if (in.isLoop() || in.kernel == "copy" || in.kernel == "gemm" ||
              in.kernel == "gemm_epilogue")
            continue;
          int64_t bytes = -1;
          for (const Ref &ref : in.buffers) {
            Key k = keyOf(static_cast<int>(pi), ref.buffer);
            if (okGroup(k) && matmul.count(groups.find(k)))
              bytes = ref.bytes;
          }
          if (bytes < 0)
            continue;
          for (const Ref &ref : in.buffers) {
            Key k = keyOf(static_cast<int>(pi), ref.buffer);
            if (okGroup(k) && ref.bytes == bytes &&
                !matmul.count(groups.find(k))) {
              matmul[groups.find(k)] = true;
              grew = true;
            }
          }
        }
    }
    auto half = [&](Key k) {
      return okGroup(k) && matmul.count(groups.find(k));
    };

    // Rewrite: sizes, offsets, copy lengths and the masks.
    Builder builder(module.getContext());
    for (int s = 0; s < numStates; ++s) {
      if (!half({-1, s}))
        continue;
      auto type = cast<RankedTensorType>(stateOps[s].getType());
      stateOps[s].setType(
          RankedTensorType::get(type.getShape(), builder.getBF16Type()));
      stateOps[s].setBytes(stateOps[s].getBytes() / 2);
      states[s].bytes /= 2;
    }
    for (auto [pi, p] : llvm::enumerate(programs)) {
      for (int b = 0; b < static_cast<int>(p.buffers.size()); ++b) {
        if (!half(keyOf(static_cast<int>(pi), b)))
          continue;
        p.buffers[b].bytes /= 2;
        p.buffers[b].bf16 = b >= numStates;
      }
      for (Instr &in : p.instrs) {
        if (in.isLoop())
          continue;
        bool any = false;
        for (auto [b, ref] : llvm::enumerate(in.buffers)) {
          if (!half(keyOf(static_cast<int>(pi), ref.buffer)))
            continue;
          ref.offset = halved(ref.offset);
          ref.bytes /= 2;
          any = true;
          if (in.kernel != "copy")
            in.bf16 |= uint64_t{1} << b;
        }
        if (any && in.kernel == "copy")
          in.ints[0].c /= 2;
      }
      // A GEMM with an epilogue whose c is bf16 computes its fp32 result in
      // its workspace first, after the rounded inputs
      // (runtime/cuda/GemmInstr.cpp): 4 bytes per element of c, and 256
      // for each of the three regions' alignment (a tiny GEMM's rounded
      // copies are padded too). Without an epilogue the library writes
      // bf16.
      std::map<int, int64_t> grow;
      for (const Instr &in : p.instrs)
        if (!in.isLoop() && in.kernel == "gemm_epilogue" &&
            (in.bf16 >> 2 & 1)) {
          int64_t batch = in.ints[0].c, m = in.ints[1].c, n = in.ints[2].c;
          int64_t extent = (batch - 1) * in.ints[8].c + m * n;
          int ws = in.buffers[wsOf(in)].buffer;
          grow[ws] = std::max(grow[ws], 4 * extent + 3 * 256);
        }
      for (auto [ws, extra] : grow) {
        int64_t old = p.buffers[ws].bytes;
        p.buffers[ws].bytes += extra;
        for (Instr &in : p.instrs)
          for (Ref &ref : in.buffers)
            if (ref.buffer == ws && ref.bytes == old)
              ref.bytes = old + extra;
      }
      writeProgram(programOps[pi], p);
    }
  }
};

} // namespace
