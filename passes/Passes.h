//===- Passes.h - ferry's passes --------------------------------*- C++ -*-===//
//
// One pass per file in passes/, declared in Passes.td with its options; each
// has its lit test in test/passes/. Pipelines that combine them live in
// Pipelines.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_PASSES_H
#define FERRY_PASSES_PASSES_H

#include "dialects/graph/GraphDialect.h"
#include "dialects/rt/RtDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "passes/PassOptions.h"

#include <memory>
#include <string>

namespace ferry {

// The pass bases, options structs (e.g. SelectKernelsPassOptions), create
// functions (createSelectKernelsPass(options)) and registerFerryPasses(), all
// generated from passes/Passes.td, which documents each pass.
#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace ferry

#endif // FERRY_PASSES_PASSES_H
