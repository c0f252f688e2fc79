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
#define GET_ATTRDEF_CLASSES
#include "dialects/graph/GraphAttrs.h.inc"
#include "dialects/graph/GraphInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

namespace ferry::graph {
// "8x128x128" for diagnostics; "scalar" for rank 0.
std::string shapeString(llvm::ArrayRef<int64_t> shape);
// "0, 2, 1" for attribute lists in diagnostics.
std::string listString(llvm::ArrayRef<int64_t> values);
// The verifiers' shared checks (GraphOps.cpp): a value's ranked tensor
// type; every named value with the element type of the first one; a
// result's shape; the graph.parameter or graph.variable `name` refers to
// (its type and whether it is stacked).
mlir::RankedTensorType tensorOf(mlir::Value v);
mlir::LogicalResult verifySameElementType(
    mlir::Operation *op,
    llvm::ArrayRef<std::pair<llvm::StringRef, mlir::Value>> named);
mlir::LogicalResult verifyResultShape(mlir::Operation *op,
                                      llvm::ArrayRef<int64_t> expected,
                                      mlir::Value result);
mlir::LogicalResult lookupDeclaration(mlir::Operation *user,
                                      mlir::FlatSymbolRefAttr name,
                                      mlir::SymbolTableCollection &symbolTable,
                                      mlir::RankedTensorType &type,
                                      bool &stacked);
// Checks an optional `sequence_ids` operand (packed rows): absent, or i32
// [batch, seq]. Shared by the softmax and attention verifiers.
mlir::LogicalResult verifySequenceIds(mlir::Operation *op, mlir::Value ids,
                                      int64_t batch, int64_t seq);
// Checks an optional `dropout_keys` operand (packed rows): absent, or i32
// [batch, seq, 2] over a [batch, seq, ...] or [batch, heads, seq, seq] input.
mlir::LogicalResult verifyDropoutKeys(mlir::Operation *op, mlir::Value keys,
                                      mlir::RankedTensorType type);
// Checks a vocabulary-parallel embedding's optional tensor_row_stride
// against its table [rows, width]: absent, or the rows (GraphClassSplit.cpp).
mlir::LogicalResult verifyTensorRowStride(mlir::Operation *op,
                                          std::optional<uint64_t> stride,
                                          mlir::RankedTensorType table);
// The module's #graph.mesh (`op` is the module or inside it), or null.
MeshAttr meshOf(mlir::Operation *op);
// Checks a declaration's optional sharding against its type and the
// module's mesh (GraphMesh.cpp).
mlir::LogicalResult verifyDeclarationSharding(mlir::Operation *decl,
                                              mlir::RankedTensorType type,
                                              bool stacked,
                                              ShardingAttr sharding);
} // namespace ferry::graph

#endif // FERRY_DIALECTS_GRAPH_GRAPHOPS_H
