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

#endif // FERRY_DIALECTS_GRAPH_GRAPHOPS_H
