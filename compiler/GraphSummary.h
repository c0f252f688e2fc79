//===- GraphSummary.h - a human-readable summary of graph IR ----*- C++ -*-===//

#ifndef FERRY_COMPILER_GRAPHSUMMARY_H
#define FERRY_COMPILER_GRAPHSUMMARY_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace ferry {
struct Config;

// What `ferry compile --summary` prints: the model, the batch split, the
// parameters (declared and at the configured vocabulary), each function's op
// count, the layer loop and the tied decoder, and the IR's size.
std::string summarizeGraph(mlir::ModuleOp module, const Config &config);

} // namespace ferry

#endif // FERRY_COMPILER_GRAPHSUMMARY_H
