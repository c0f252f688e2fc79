//===- GraphOps.h - ops of the `graph` dialect ------------------*- C++ -*-===//

#ifndef FERRY_DIALECTS_GRAPH_GRAPHOPS_H
#define FERRY_DIALECTS_GRAPH_GRAPHOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/graph/GraphDialect.h"

#include "dialects/graph/GraphEnums.h.inc"
#include "dialects/graph/GraphInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

namespace ferry::graph {
// Checks an optional `sequence_ids` operand (packed rows): absent, or i32
// [batch, seq]. Shared by the softmax and attention verifiers.
mlir::LogicalResult verifySequenceIds(mlir::Operation *op, mlir::Value ids,
                                      int64_t batch, int64_t seq);
// Checks an optional `dropout_keys` operand (packed rows): absent, or i32
// [batch, seq, 2] over a [batch, seq, ...] or [batch, heads, seq, seq] input.
mlir::LogicalResult verifyDropoutKeys(mlir::Operation *op, mlir::Value keys,
                                      mlir::RankedTensorType type);
} // namespace ferry::graph

#endif // FERRY_DIALECTS_GRAPH_GRAPHOPS_H
