//===- UserError.h - errors the user fixes, not compiler bugs ---*- C++ -*-===//
//
// Most pass failures are bugs in ferry: the driver leaves a reproducer for
// them (compiler/CompileSession.h). Some are the user's to fix: a device
// budget no plan fits. A pass reports those with emitUserError, which marks
// the module; the driver then prints the message and its fix alone, without
// MLIR's "Failures have been detected while processing an MLIR pass
// pipeline" and without a reproducer.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_USERERROR_H
#define FERRY_PASSES_USERERROR_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

namespace ferry {

// The module attribute that marks a user error.
inline constexpr llvm::StringLiteral kUserErrorAttr = "ferry.user_error";

inline mlir::InFlightDiagnostic emitUserError(mlir::ModuleOp module) {
  module->setAttr(kUserErrorAttr, mlir::UnitAttr::get(module.getContext()));
  return module.emitError();
}

} // namespace ferry

#endif // FERRY_PASSES_USERERROR_H
