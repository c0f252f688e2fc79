//===- RtKernelCall.h - any typed kernel op, in record order ----*- C++ -*-===//
//
// Every op generated from a kernel record implements KernelCallOpInterface
// (RtInterfaces.td). What the generic code around the kernels needs of them
// (the executable writer, the lowering's bookkeeping) is here: a call's
// buffers, integers and floats in the record's order, which is the
// executable's encoding, and the builders of a kernel's typed op: from all
// of them (createKernelCall), or from its buffers only, its parameters then
// set by name (createKernelOp, what kernel selection uses). All use the
// kernel's signature (KernelTable.h), keyed on its index, never its name.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_RTKERNELCALL_H
#define FERRY_DIALECTS_RT_RTKERNELCALL_H

#include "dialects/rt/RtDialect.h"
#include "runtime/executable/KernelTable.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

namespace ferry::rt {

// The interface's verifier (RtInterfaces.td).
mlir::LogicalResult verifyKernelCall(mlir::Operation *op);

} // namespace ferry::rt

#include "dialects/rt/RtInterfaces.h.inc"

namespace ferry::rt {

// A register-affine integer: c, a0, a1, ...
using AffineArray = llvm::SmallVector<int64_t, 4>;

// One call's parameters in record order: the !rt.range operands, the
// integers (a rest list flattened at the end, absent optional ones left
// out) and the floats, as the executable lists them.
struct KernelCallParts {
  kernels::Kernel kernel = kernels::Kernel::Count;
  llvm::SmallVector<mlir::Value> buffers;
  llvm::SmallVector<AffineArray> ints;
  llvm::SmallVector<double> floats;
  uint64_t bf16 = 0; // bit b: buffer b is stored as bf16
};

kernels::Kernel kernelOf(KernelCallOpInterface op);

// The mask of the call's buffers stored as bf16 (its `bf16` attribute), and
// setting it (0 removes the attribute).
uint64_t bf16MaskOf(KernelCallOpInterface op);
void setBf16Mask(KernelCallOpInterface op, uint64_t mask);
KernelCallParts kernelCallParts(KernelCallOpInterface op);

// Creates the typed op of `parts.kernel` at `b`'s insertion point. The
// parts must match the record (required entries present, optional ones a
// prefix): a mismatch is the caller's bug, reported at `loc` and returned
// as failure.
mlir::FailureOr<KernelCallOpInterface>
createKernelCall(mlir::OpBuilder &b, mlir::Location loc,
                 const KernelCallParts &parts);

// Creates the typed op of `kernel` with only its buffers (in record order);
// the caller then sets its integers and floats with the op's named
// setters (`gemm.setM(...)`), before the op is verified. Buffers that
// cannot be the record's are the caller's bug: reported at `loc`, and the
// op (created all the same) fails verification.
KernelCallOpInterface createKernelOp(mlir::OpBuilder &b, mlir::Location loc,
                                     kernels::Kernel kernel,
                                     mlir::ValueRange buffers);

} // namespace ferry::rt

#endif // FERRY_DIALECTS_RT_RTKERNELCALL_H
