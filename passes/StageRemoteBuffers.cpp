//===- StageRemoteBuffers.cpp - phases load and store their remote ranges -===//
//
// ferry-stage-remote-buffers applies what ferry-place-buffers decided: each
// phase stages the byte ranges of remote buffers (rt.state with `host`) it
// touches through new device temporaries (passes/lowering/Staging.h), with
// the module's `rt.prefetch_levels` saying which are double-buffered. It
// adds to the `rt.prefetch` note how many ranges are staged each way.
//
//===----------------------------------------------------------------------===//

#include "dialects/rt/RtAttributes.h"
#include "passes/Passes.h"

#include "passes/lowering/Staging.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

namespace ferry {
#define GEN_PASS_DEF_STAGEREMOTEBUFFERSPASS
#include "passes/Passes.h.inc"
} // namespace ferry

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

struct StageRemoteBuffersPass
    : public ferry::impl::StageRemoteBuffersPassBase<StageRemoteBuffersPass> {
  using StageRemoteBuffersPassBase::StageRemoteBuffersPassBase;
  StringRef getName() const override { return getArgument(); }
  void runOnOperation() override;
};

void StageRemoteBuffersPass::runOnOperation() {
  ModuleOp module = getOperation();
  PrefetchLevels levels = PrefetchLevels::none();
  if (auto attr =
          module->getAttrOfType<ArrayAttr>(rt::attrs::kPrefetchLevels)) {
    std::vector<std::string> names;
    for (Attribute a : attr)
      if (auto s = dyn_cast<StringAttr>(a))
        names.push_back(s.str());
    std::optional<PrefetchLevels> parsed = PrefetchLevels::fromNames(names);
    if (!parsed || names.size() != attr.size()) {
      module.emitError() << "rt.prefetch_levels must list next-layer, "
                            "next-micro-batch or first-layer-early, found "
                         << attr;
      return signalPassFailure();
    }
    levels = *parsed;
    module->removeAttr(rt::attrs::kPrefetchLevels);
  }
  std::vector<StateInfo> states = readStates(module);
  if (llvm::none_of(states, [](const StateInfo &s) { return s.host; }))
    return;
  int64_t doubled = 0, single = 0;
  for (auto op : module.getOps<rt::ProgramOp>()) {
    if (failed(checkBeforeLayout(op)))
      return signalPassFailure();
    StagingResult staged = stageProgram(op, states, levels);
    if (!staged.error.empty()) {
      module.emitError() << "ferry-stage-remote-buffers: " << staged.error;
      return signalPassFailure();
    }
    doubled += staged.prefetchedGroups;
    single += staged.syncGroups;
  }
  auto note = module->getAttrOfType<StringAttr>(rt::attrs::kPrefetch);
  std::string text = note ? note.str() : "on (" + levels.describe() + ")";
  text += llvm::formatv(
      "; {0} staged ranges double-buffered (loaded while the previous "
      "layer or micro-batch computes), {1} loaded when their phase starts",
      doubled, single);
  module->setAttr(rt::attrs::kPrefetch,
                  StringAttr::get(module.getContext(), text));
}

} // namespace
