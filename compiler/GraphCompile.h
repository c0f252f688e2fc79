//===- GraphCompile.h - config -> verified graph IR -------------*- C++ -*-===//

#ifndef FERRY_COMPILER_GRAPHCOMPILE_H
#define FERRY_COMPILER_GRAPHCOMPILE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ferry {

class CompileSession;
struct Config;

// Builds the BERT graph IR for `config`, verifies it and runs the graph
// clean-up pipeline. Diagnostics go to the context's handler; returns null on
// failure (a failure here is a bug in ferry, reported as such).
mlir::OwningOpRef<mlir::ModuleOp>
compileGraph(mlir::MLIRContext &context, const Config &config,
             const std::string &name, CompileSession *session = nullptr);

// The pipeline after the builder, as `ferry compile` runs it (passes/
// Pipelines.cpp): training passes, then lowering of `programs` to rt with the
// memory plan. `stopAfter` = "graph" returns right after the builder,
// "training" after the training passes, "rt" at the end. The options derive
// from the config once (PipelineOptionsFor.h); ferry-place-buffers checks
// the plan against the device budget. Returns failure after emitting
// diagnostics.
mlir::LogicalResult lowerGraph(mlir::ModuleOp module, const Config &config,
                               const std::vector<std::string> &programs,
                               const std::string &stopAfter = "rt",
                               CompileSession *session = nullptr);

// config -> graph -> training passes -> rt -> the executable's payload
// (ExecutableWriter), with `programs` (default: train_step and eval_step).
// Returns an empty vector after emitting diagnostics.
std::vector<uint8_t> compileExecutable(
    mlir::MLIRContext &context, const Config &config, const std::string &name,
    const std::vector<std::string> &programs = {"train_step", "eval_step"},
    CompileSession *session = nullptr);

} // namespace ferry

#endif // FERRY_COMPILER_GRAPHCOMPILE_H
