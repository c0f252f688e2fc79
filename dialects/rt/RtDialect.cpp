//===- RtDialect.cpp - the `rt` dialect -----------------------------------===//

#include "dialects/rt/RtDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace ferry::rt;

#include "dialects/rt/RtDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/rt/RtOps.cpp.inc"

void RtDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/rt/RtOps.cpp.inc"
      >();
}

LogicalResult KernelOp::verify() {
  bool known = llvm::StringSwitch<bool>(getKernel())
#define FERRY_KERNEL(Enum, name, doc) .Case(name, true)
#include "runtime/executable/Kernels.def"
#undef FERRY_KERNEL
                   .Default(false);
  if (!known)
    return emitOpError() << "unknown kernel '" << getKernel()
                         << "' (runtime/executable/Kernels.def lists them)";
  for (Attribute a : getBuffers()) {
    auto ref = dyn_cast<DenseI64ArrayAttr>(a);
    if (!ref || ref.size() < 2 || ref[0] <= 0)
      return emitOpError() << "buffers must be array<i64: bytes, offset, "
                              "coefficients...> with bytes > 0, found "
                           << a;
  }
  for (Attribute a : getInts()) {
    auto v = dyn_cast<DenseI64ArrayAttr>(a);
    if (!v || v.size() < 1)
      return emitOpError() << "ints must be array<i64: constant, "
                              "coefficients...>, found "
                           << a;
  }
  return success();
}
