//===- GraphCompile.cpp - config -> verified graph IR ---------------------===//

#include "compiler/GraphCompile.h"

#include "compiler/CompileSession.h"
#include "compiler/ExecutableWriter.h"
#include "compiler/PipelineOptionsFor.h"
#include "models/bert/BertBuilder.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "passes/UserError.h"
#include "training/config/Config.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cctype>
#include <cstdlib>

using namespace mlir;

namespace {

// Runs `pm` on `module`, holding its diagnostics back until it ends. A
// failure a pass marked as the user's (passes/UserError.h) prints its
// message alone: MLIR's "Failures have been detected ..." error, which
// points at the reproducer, is dropped with the reproducer itself. Any other
// failure prints everything, as MLIR would have.
LogicalResult runPipeline(PassManager &pm, ModuleOp module,
                          ferry::CompileSession *session) {
  MLIRContext *context = module.getContext();
  std::vector<Diagnostic> held;
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler hold(context, [&](Diagnostic &diagnostic) {
      held.push_back(std::move(diagnostic));
      return success();
    });
    result = pm.run(module);
  }
  bool userError = failed(result) && module->hasAttr(ferry::kUserErrorAttr);
  for (Diagnostic &diagnostic : held) {
    if (userError && StringRef(diagnostic.str()).starts_with(
                         "Failures have been detected while processing"))
      continue;
    context->getDiagEngine().emit(std::move(diagnostic));
  }
  if (userError && session)
    session->discardReproducer();
  return result;
}

} // namespace

OwningOpRef<ModuleOp> ferry::compileGraph(MLIRContext &context,
                                          const Config &config,
                                          const std::string &name,
                                          CompileSession *session) {
  OwningOpRef<ModuleOp> module = bert::buildBertGraph(context, config, name);
  if (failed(verify(*module))) {
    emitError(module->getLoc())
        << "internal error: the BERT builder produced invalid graph IR for "
        << config.source << "; this is a bug in ferry, please report it";
    return nullptr;
  }
  if (session)
    session->dumpStage("bert-builder", *module);
  PassManager pm(&context);
  if (session)
    session->instrument(pm);
  buildGraphCleanupPipeline(pm);
  if (failed(runPipeline(pm, *module, session)))
    return nullptr;
  return module;
}

LogicalResult ferry::lowerGraph(ModuleOp module, const Config &config,
                                const std::vector<std::string> &programs,
                                const std::string &stopAfter,
                                CompileSession *session) {
  if (stopAfter == "graph")
    return success();
  // Every option both pipelines take, derived from the config in one place
  // (the cache key hashes the same struct).
  PipelineOptions options = pipelineOptionsFor(config, programs);
  PassManager pm(module.getContext());
  if (session)
    session->instrument(pm);
  buildTrainingPipeline(pm, options);
  if (failed(runPipeline(pm, module, session)))
    return failure();
  if (stopAfter == "training")
    return success();
  PassManager lower(module.getContext());
  if (session)
    session->instrument(lower);
  // ferry-place-buffers checks the plan against the device budget, for
  // resident and phased modules alike. The machine that compiles is not
  // the target: whether the plan fits the machine that runs it is the
  // runtime's check.
  buildLoweringPipeline(lower, options);
  // A stand-in for a compiler bug, for the reproducer tests (DebugFail.cpp).
  if (const char *fail = std::getenv("FERRY_DEBUG_FAIL_PASS");
      fail && std::string(fail) == "1")
    lower.addPass(createDebugFailPass());
  return runPipeline(lower, module, session);
}

std::vector<uint8_t> ferry::compileExecutable(
    MLIRContext &context, const Config &config, const std::string &name,
    const std::vector<std::string> &programs, CompileSession *session) {
  OwningOpRef<ModuleOp> module = compileGraph(context, config, name, session);
  if (!module || failed(lowerGraph(*module, config, programs, "rt", session)))
    return {};
  return serializeExecutable(*module, config);
}
