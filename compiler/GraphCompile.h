//===- GraphCompile.h - config -> verified graph IR -------------*- C++ -*-===//

#ifndef FERRY_COMPILER_GRAPHCOMPILE_H
#define FERRY_COMPILER_GRAPHCOMPILE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace ferry {
struct Config;

// "configs/bert-tiny.yaml" -> "bert_tiny": the module's symbol name.
std::string moduleNameForConfig(const std::string &configPath);

// Builds the BERT graph IR for `config`, verifies it and runs the graph
// clean-up pipeline. Diagnostics go to the context's handler; returns null on
// failure (a failure here is a bug in ferry, reported as such).
mlir::OwningOpRef<mlir::ModuleOp> compileGraph(mlir::MLIRContext &context,
                                               const Config &config,
                                               const std::string &name);

} // namespace ferry

#endif // FERRY_COMPILER_GRAPHCOMPILE_H
