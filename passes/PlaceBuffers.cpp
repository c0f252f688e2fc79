//===- PlaceBuffers.cpp - device or host memory for each state, under a budget
//-===//
//
// ferry-place-buffers decides, for a phased module, which states live in
// host memory (remote buffers, staged through device buffers by phases)
// and how much prefetch the budget allows. It owns the device budget
// (execution.device_memory_limit, or the target's memory) for the whole
// compile: every candidate is judged by the plan it leads to (staging and
// arena layout run on a copy), this is where a budget the plan cannot meet
// is refused, for resident and phased modules alike, saying what to change,
// and every heuristic about the budget is defined here (DeviceBudget.h).
//
// The decision is recorded in the IR: `host` on each remote rt.state, and on
// the module `rt.prefetch_levels` (what ferry-stage-remote-buffers
// double-buffers) and `rt.prefetch` (the note `ferry plan` shows).
// It also sizes the GEMMs' cuBLASLt scratch under the budget. Modules
// without phases are otherwise left as they are.
//
//===----------------------------------------------------------------------===//

#include "dialects/rt/RtAttributes.h"
#include "passes/DeviceBudget.h"
#include "passes/Passes.h"
#include "passes/UserError.h"

#include "passes/lowering/ArenaLayout.h"
#include "passes/lowering/Staging.h"
#include "runtime/ByteSize.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

namespace ferry {
#define GEN_PASS_DEF_PLACEBUFFERSPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

ByteBudget ferry::carryRowBudget(ByteBudget device) {
  if (!device)
    return std::nullopt;
  return *device / 3;
}

int64_t ferry::gemmScratchCap(uint64_t device) {
  // At least one aligned slot: a workspace never shrinks to nothing (a
  // budget that small fails the plan anyway).
  return std::max<int64_t>(static_cast<int64_t>(device / 32), kAlignment);
}

namespace {

// A placement and the plan it leads to, judged on copies of the programs:
// the real staging and layout run on them, and they are dropped after.
struct Candidate {
  std::vector<StateInfo> states; // with the candidate's host flags
  StateLayout stateLayout;
  std::vector<OwningOpRef<rt::ProgramOp>> programs; // staged copies
  std::vector<ProgramLayout> layouts;
  int64_t maxTransient = 0; // the largest program's temporaries
  size_t peakProgram = 0;
  std::string error; // staging failed
  int64_t peak() const { return stateLayout.deviceStateBytes + maxTransient; }
};

Candidate evaluate(ArrayRef<rt::ProgramOp> programs,
                   std::vector<StateInfo> states, const std::vector<bool> &host,
                   PrefetchLevels levels) {
  Candidate c;
  for (size_t i = 0; i < states.size(); ++i)
    states[i].host = host[i];
  c.states = std::move(states);
  c.stateLayout = layoutStates(c.states);
  for (auto [k, original] : llvm::enumerate(programs)) {
    OwningOpRef<rt::ProgramOp> copy = cast<rt::ProgramOp>(original->clone());
    StagingResult staged = stageProgram(*copy, c.states, levels);
    if (!staged.error.empty()) {
      c.error = staged.error;
      return c;
    }
    ProgramLayout layout = layoutProgram(*copy, c.stateLayout);
    if (layout.plan.peakBytes > c.maxTransient) {
      c.maxTransient = layout.plan.peakBytes;
      c.peakProgram = k;
    }
    c.programs.push_back(std::move(copy));
    c.layouts.push_back(std::move(layout));
  }
  return c;
}

// How the budget's errors name it and the way to raise it: an explicit
// execution.device_memory_limit, or the memory of execution.target.
struct BudgetWords {
  std::string name, raise;
};
FailureOr<BudgetWords> budgetWords(StringRef source) {
  if (source == "limit")
    return BudgetWords{"execution.device_memory_limit",
                       "raise execution.device_memory_limit"};
  if (source.consume_front("target:") && !source.empty())
    return BudgetWords{("the memory of execution.target " + source).str(),
                       "name a target with more memory"};
  return failure();
}

// Says why the smallest plan does not fit, what is largest at its peak, and
// what to change.
std::string budgetError(const Candidate &p, int64_t limit, bool recomputing,
                        const BudgetWords &budget) {
  const std::vector<StateInfo> &states = p.states;
  auto size = [](int64_t bytes) {
    return formatByteSize(static_cast<uint64_t>(bytes));
  };
  rt::ProgramOp program = *p.programs[p.peakProgram];
  const ProgramLayout &layout = p.layouts[p.peakProgram];
  int64_t peakPosition = layout.peakPosition;
  std::vector<std::string> phaseNames = phaseNamesOf(program);
  std::string phase = "outside any phase";
  for (int64_t q = 0; q <= peakPosition; ++q) {
    Operation *op = layout.instructions.ops[q];
    if (auto begin = dyn_cast<rt::PhaseBeginOp>(op))
      phase = "phase " + phaseNames[begin.getPhase()[0]];
    else if (isa<rt::PhaseEndOp>(op))
      phase = "outside any phase";
  }
  std::vector<std::pair<int64_t, std::string>> consumers;
  int64_t unlabeled = 0, count = 0;
  for (const TempLayout &t : layout.temps) {
    if (t.first > peakPosition || t.last < peakPosition)
      continue;
    rt::AllocOp alloc = t.alloc;
    auto bytes = static_cast<int64_t>(alloc.getBytes());
    if (std::optional<StringRef> label = alloc.getLabel()) {
      consumers.push_back({bytes, label->str()});
    } else {
      unlabeled += bytes;
      ++count;
    }
  }
  consumers.push_back(
      {unlabeled, llvm::formatv("{0} activations and temporaries", count)});
  int64_t residentBytes = 0;
  for (size_t i = 0; i < states.size(); ++i)
    if (!states[i].host)
      residentBytes += states[i].bytes;
  consumers.push_back({residentBytes,
                       "states kept on the device (small or used outside "
                       "phases)"});
  std::sort(consumers.rbegin(), consumers.rend());
  std::string largest;
  for (size_t i = 0; i < consumers.size() && i < 5; ++i)
    largest +=
        (i ? ", " : "") + consumers[i].second + " " + size(consumers[i].first);
  return llvm::formatv(
             "the phased plan needs {0} of device memory ({1} bytes) at its "
             "peak ({2} of @{3}) but {7} is {4}, even with every remote "
             "buffer in host memory; largest there: {5}. Lower "
             "execution.micro_batch_size, {6}or {8}",
             size(p.peak()), p.peak(), phase, program.getSymName(), size(limit),
             largest, recomputing ? "" : "set execution.recompute: layer, ",
             budget.name, budget.raise)
      .str();
}
struct PlaceBuffersPass
    : public ferry::impl::PlaceBuffersPassBase<PlaceBuffersPass> {
  using PlaceBuffersPassBase::PlaceBuffersPassBase;
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

void PlaceBuffersPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::vector<StateInfo> states = readStates(module);
  llvm::StringMap<size_t> stateIndex;
  for (auto [i, s] : llvm::enumerate(states))
    stateIndex[s.name] = i;
  SmallVector<rt::ProgramOp> programs(module.getOps<rt::ProgramOp>());
  for (rt::ProgramOp program : programs) {
    if (failed(checkBeforeLayout(program)))
      return signalPassFailure();
    eraseUnusedBuffers(program); // nothing to place or resize
  }

  // cuBLASLt's scratch: one GEMM runs at a time, so the plan reuses one
  // region; NVIDIA recommends 32 MiB on Hopper (what ferry-select-kernels
  // is given), but under a small budget at most a 32nd of it. Workspaces
  // are used whole.
  if (deviceBudget) {
    auto cap = static_cast<uint64_t>(gemmScratchCap(*deviceBudget));
    for (rt::ProgramOp program : programs)
      for (auto alloc : program.getBody().front().getOps<rt::AllocOp>()) {
        std::optional<uint64_t> scratch = alloc.getScratch();
        if (!scratch || *scratch <= cap)
          continue;
        alloc.setBytes(alloc.getBytes() - (*scratch - cap));
        alloc.setScratch(cap);
        for (Operation *user : alloc->getUsers())
          cast<rt::SliceOp>(user).setBytes(alloc.getBytes());
      }
  }

  // In phased programs a state only phases touch may live in host memory
  // (a remote buffer); small ones (biases, metrics) stay on the device,
  // where they cost nothing worth a transfer.
  constexpr int64_t kSmallState = 64 * 1024;
  std::vector<bool> eligible(states.size(), false);
  bool phased = false;
  {
    std::vector<bool> outside(states.size(), false);
    for (rt::ProgramOp program : programs) {
      int depth = 0;
      for (rt::KernelCallOpInterface call : kernelsInOrder(program)) {
        bool begin = isa<rt::PhaseBeginOp>(call.getOperation());
        depth += begin ? 1 : 0;
        depth -= isa<rt::PhaseEndOp>(call.getOperation()) ? 1 : 0;
        phased |= begin;
        if (depth == 0)
          for (Value range : call->getOperands())
            if (StringAttr state = stateOf(bufferOf(range)))
              outside[stateIndex.lookup(state)] = true;
      }
    }
    for (size_t i = 0; i < states.size(); ++i)
      eligible[i] = phased && !outside[i] && states[i].bytes >= kSmallState;
  }
  FailureOr<BudgetWords> budget = budgetWords(budgetSource);
  if (failed(budget)) {
    module.emitError() << "ferry-place-buffers: budget-source '" << budgetSource
                       << "' is neither `limit` nor `target:NAME`";
    return signalPassFailure();
  }
  // The budget as a signed byte count for the comparisons below (0: none).
  int64_t limit =
      deviceBudget
          ? static_cast<int64_t>(std::min<uint64_t>(*deviceBudget, INT64_MAX))
          : 0;
  if (!phased) {
    // Everything stays on the device: the plan is the arena layout, checked
    // here (on a copy) so a resident module is refused where a phased one
    // is, before staging and layout run for real.
    if (limit <= 0)
      return;
    Candidate resident =
        evaluate(programs, states, eligible, PrefetchLevels::none());
    if (resident.peak() > limit) {
      emitUserError(module)
          << "the plan needs " << formatByteSize(resident.peak())
          << " of device memory (" << resident.peak() << " bytes) but "
          << budget->name << " is " << formatByteSize(limit) << "; "
          << (budgetSource == "limit" ? std::string("raise the limit")
                                      : budget->raise)
          << ", lower execution.micro_batch_size, set "
             "execution.recompute: layer, or use execution.mode: phased "
             "(weights, optimizer state and activations streamed through "
             "host memory)";
      return signalPassFailure();
    }
    return;
  }

  // Prefetching doubles staging buffers; under a tight budget keep what
  // fits: both kinds, the layers' only, the micro-batches' only, none.
  PrefetchLevels levels =
      prefetch ? PrefetchLevels::all() : PrefetchLevels::none();
  std::string note = prefetch ? "" : "off (execution.prefetch: false)";
  Candidate best = evaluate(programs, states, eligible, levels);
  if (!best.error.empty()) {
    module.emitError() << "ferry-place-buffers: " << best.error;
    return signalPassFailure();
  }
  if (limit > 0 && best.peak() > limit && levels.any()) {
    int64_t full = best.peak();
    for (PrefetchLevels fewer :
         {PrefetchLevels{true, true, false}, PrefetchLevels{true, false, false},
          PrefetchLevels{false, true, false}, PrefetchLevels::none()}) {
      Candidate c = evaluate(programs, states, eligible, fewer);
      if (!c.error.empty())
        continue;
      best = std::move(c);
      levels = fewer;
      if (best.peak() <= limit)
        break;
    }
    if (best.peak() <= limit)
      note = llvm::formatv(
          "reduced to {0}: double-buffering everything needs {1} bytes at "
          "the peak, over the {2}-byte budget",
          levels.describe(), full, limit);
  }
  if (limit > 0 && best.peak() > limit) {
    emitUserError(module) << budgetError(
        best, limit, module->hasAttr(rt::attrs::kRecompute), *budget);
    return signalPassFailure();
  }

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
  int64_t device = best.stateLayout.deviceStateBytes,
          transient = best.maxTransient;
  for (size_t i : order)
    if (limit <= 0 || device + alignUp(states[i].bytes) + transient <= limit) {
      host[i] = false;
      device += alignUp(states[i].bytes);
    }
  if (host != eligible) {
    best = evaluate(programs, states, host, levels);
    if (!best.error.empty()) {
      module.emitError() << "ferry-place-buffers: " << best.error;
      return signalPassFailure();
    }
  }

  // The decision, in the IR.
  Builder b(module.getContext());
  bool anyHost = false;
  for (auto [i, op] : llvm::enumerate(module.getOps<rt::StateOp>())) {
    if (best.states[i].host)
      op->setAttr("host", b.getUnitAttr());
    else
      op->removeAttr("host");
    anyHost |= best.states[i].host;
  }
  if (!anyHost)
    return;
  std::vector<std::string> names = levels.names();
  SmallVector<StringRef> levelNames(names.begin(), names.end());
  module->setAttr(rt::attrs::kPrefetchLevels, b.getStrArrayAttr(levelNames));
  if (note.empty())
    note = llvm::formatv("on ({0})", levels.describe());
  module->setAttr(rt::attrs::kPrefetch, b.getStringAttr(note));
}

} // namespace
