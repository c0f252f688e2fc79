//===- RtDialect.h - the `rt` dialect ---------------------------*- C++ -*-===//
//
// The runtime stage of ferry's pipeline; see RtOps.td and docs/dialects/rt.md.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_RTDIALECT_H
#define FERRY_DIALECTS_RT_RTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"

#include "dialects/rt/RtDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/rt/RtTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/rt/RtOps.h.inc"

#endif // FERRY_DIALECTS_RT_RTDIALECT_H
