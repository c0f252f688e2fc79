//===- Registration.cpp - ferry's dialects in one registry ----------------===//

#include "compiler/Registration.h"

#include "dialects/graph/GraphDialect.h"
#include "dialects/rt/RtDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

void ferry::registerFerryDialects(mlir::DialectRegistry &registry) {
  registry.insert<ferry::graph::GraphDialect, ferry::rt::RtDialect,
                  mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::scf::SCFDialect>();
}
