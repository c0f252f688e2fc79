//===- DebugFail.cpp - a pass that always fails ---------------------------===//
//
// ferry-debug-fail: stands in for a compiler bug so the tests can check the
// reproducer path end to end (compiler/GraphCompile.cpp appends it when
// FERRY_DEBUG_FAIL_PASS=1).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

namespace ferry {
#define GEN_PASS_DEF_DEBUGFAILPASS
#include "passes/Passes.h.inc"
} // namespace ferry

namespace {

struct DebugFailPass : public ferry::impl::DebugFailPassBase<DebugFailPass> {
  void runOnOperation() override {
    getOperation().emitError() << "ferry-debug-fail: failing on request";
    signalPassFailure();
  }
};

} // namespace
