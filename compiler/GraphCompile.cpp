//===- GraphCompile.cpp - config -> verified graph IR ---------------------===//

#include "compiler/GraphCompile.h"

#include "models/bert/BertBuilder.h"
#include "passes/Pipelines.h"
#include "runtime/config/Config.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cctype>

using namespace mlir;

std::string ferry::moduleNameForConfig(const std::string &configPath) {
  std::string stem = configPath;
  if (size_t slash = stem.find_last_of('/'); slash != std::string::npos)
    stem = stem.substr(slash + 1);
  if (size_t dot = stem.find('.'); dot != std::string::npos)
    stem = stem.substr(0, dot);
  for (char &c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  if (stem.empty() || std::isdigit(static_cast<unsigned char>(stem[0])))
    stem = "model_" + stem;
  return stem;
}

OwningOpRef<ModuleOp> ferry::compileGraph(MLIRContext &context,
                                          const Config &config,
                                          const std::string &name) {
  OwningOpRef<ModuleOp> module = bert::buildBertGraph(context, config, name);
  if (failed(verify(*module))) {
    emitError(module->getLoc())
        << "internal error: the BERT builder produced invalid graph IR for "
        << config.source << "; this is a bug in ferry, please report it";
    return nullptr;
  }
  PassManager pm(&context);
  buildGraphCleanupPipeline(pm);
  if (failed(pm.run(*module)))
    return nullptr;
  return module;
}
