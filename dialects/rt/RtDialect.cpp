//===- RtDialect.cpp - the `rt` dialect -----------------------------------===//

#include "dialects/rt/RtDialect.h"
#include "dialects/rt/RtKernelOps.h"

#include "runtime/executable/KernelTable.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::rt;

#include "dialects/rt/RtDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/rt/RtOps.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/rt/RtTypes.cpp.inc"

void RtDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/rt/RtTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/rt/RtOps.cpp.inc"
      >();
  // The typed kernel ops (RtKernelOps.h), registered shard by shard.
  registerRtDialectOperations(this);
}

namespace {

// The checks rt.kernel and rt.call share: a kernel with a record in
// dialects/rt/kernels, buffers of
// at least `refHeader` + 1 entries with bytes (at `bytesAt`) > 0, and at
// least the operands the kernel's signature requires.
LogicalResult verifyCall(Operation *op, StringRef name, ArrayAttr buffers,
                         ArrayAttr ints, size_t floats, size_t bytesAt,
                         StringRef refForm) {
  std::optional<kernels::Kernel> kernel = kernels::kernelByName(name.str());
  if (!kernel)
    return op->emitOpError() << "unknown kernel '" << name
                             << "' (dialects/rt/kernels/*.td lists them)";
  for (Attribute a : buffers) {
    auto ref = dyn_cast<DenseI64ArrayAttr>(a);
    if (!ref || ref.size() < static_cast<int64_t>(bytesAt) + 2 ||
        ref[bytesAt] <= 0 ||
        (bytesAt > 0 && (ref[0] < 0 || ref[0] >= (int64_t{1} << 24))))
      return op->emitOpError()
             << "buffers must be " << refForm << " with bytes > 0, found " << a;
  }
  for (Attribute a : ints) {
    auto v = dyn_cast<DenseI64ArrayAttr>(a);
    if (!v || v.size() < 1)
      return op->emitOpError() << "ints must be array<i64: constant, "
                                  "coefficients...>, found "
                               << a;
  }
  // The kernel's calling convention: at least the required operands.
  const kernels::Signature &sig = kernels::signature(*kernel);
  // bf16 storage: a mask over the buffers, each marked one declared
  // FERRY_BF16 (its condition is the runtime's to check).
  if (Attribute a = op->getAttr("bf16")) {
    auto mask = dyn_cast<IntegerAttr>(a);
    if (!mask || mask.getInt() <= 0)
      return op->emitOpError()
             << "bf16 must be a positive integer (a mask of the buffers "
                "stored as bf16), found "
             << a;
    auto bits = static_cast<uint64_t>(mask.getInt());
    for (size_t b = 0; b < 64; ++b) {
      if (!(bits >> b & 1))
        continue;
      size_t declared = std::min(b, sig.buffers.size() - 1);
      if (b >= buffers.size() || sig.buffers.empty() ||
          (b >= sig.buffers.size() &&
           sig.buffers.back().kind != kernels::Parameter::Rest) ||
          !sig.buffers[declared].bf16If)
        return op->emitOpError()
               << "stores buffer " << b << " as bf16, which kernel '" << name
               << "' cannot take (its record in dialects/rt/kernels has no RtBf16 rule for it)";
    }
  }
  if (buffers.size() < sig.minBuffers || ints.size() < sig.minInts ||
      floats < sig.minFloats)
    return op->emitOpError()
           << "kernel '" << name << "' takes at least " << sig.minBuffers
           << " buffers, " << sig.minInts << " ints and " << sig.minFloats
           << " floats, given " << buffers.size() << ", " << ints.size()
           << " and " << floats << " (docs/kernels.md)";
  return success();
}

} // namespace

LogicalResult KernelOp::verify() {
  return verifyCall(*this, getKernel(), getBuffers(), getInts(),
                    getFloats().size(), 0,
                    "array<i64: bytes, offset, coefficients...>");
}

LogicalResult BufferOp::verify() {
  // Ids index a table of the program's buffers: keep them plausible.
  constexpr int64_t kMaxId = 1 << 24;
  auto id = static_cast<int64_t>(getId());
  auto bytes = static_cast<int64_t>(getBytes());
  if (id < 0 || id >= kMaxId)
    return emitOpError() << "id must be in [0, " << kMaxId << "), found " << id;
  if (bytes <= 0)
    return emitOpError() << "size must be positive, found " << bytes;
  if (auto scratch = getScratch()) {
    auto s = static_cast<int64_t>(*scratch);
    if (s < 0 || s > bytes)
      return emitOpError() << "scratch must be in [0, size], found " << s;
  }
  return success();
}

LogicalResult CallOp::verify() {
  return verifyCall(*this, getKernel(), getBuffers(), getInts(),
                    getFloats().size(), 1,
                    "array<i64: buffer id, bytes, offset, coefficients...>");
}
