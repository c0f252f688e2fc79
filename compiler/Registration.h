//===- Registration.h - ferry's dialects in one registry --------*- C++ -*-===//

#ifndef FERRY_COMPILER_REGISTRATION_H
#define FERRY_COMPILER_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace ferry {

// ferry's dialects and the upstream ones its IR uses (func, scf, arith).
void registerFerryDialects(mlir::DialectRegistry &registry);

} // namespace ferry

#endif // FERRY_COMPILER_REGISTRATION_H
