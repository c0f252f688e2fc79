//===- ferry-opt.cpp - MlirOptMain with ferry's dialects ------------------===//

#include "compiler/Registration.h"
#include "passes/Pipelines.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  ferry::registerFerryDialects(registry);
  mlir::registerTransformsPasses(); // canonicalize, cse, symbol-dce, ...
  ferry::registerFerryPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "ferry optimizer driver\n", registry));
}
