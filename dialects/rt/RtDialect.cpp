//===- RtDialect.cpp - the `rt` dialect -----------------------------------===//

#include "dialects/rt/RtDialect.h"

#include "runtime/executable/KernelTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

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
  std::optional<kernels::Kernel> kernel =
      kernels::kernelByName(getKernel().str());
  if (!kernel)
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
  // The calling convention of Kernels.def: at least the required operands.
  const kernels::Signature &sig = kernels::signature(*kernel);
  if (getBuffers().size() < sig.minBuffers || getInts().size() < sig.minInts ||
      getFloats().size() < sig.minFloats)
    return emitOpError() << "kernel '" << getKernel() << "' takes at least "
                         << sig.minBuffers << " buffers, " << sig.minInts
                         << " ints and " << sig.minFloats << " floats, given "
                         << getBuffers().size() << ", " << getInts().size()
                         << " and " << getFloats().size()
                         << " (docs/kernels.md)";
  return success();
}
