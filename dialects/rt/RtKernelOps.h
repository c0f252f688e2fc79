//===- RtKernelOps.h - one typed rt op per kernel ---------------*- C++ -*-===//
//
// The ops generated from the kernel records (dialects/rt/kernels/*.td):
// rt.gemm, rt.layer_norm, ..., whose buffers are !rt.range operands with
// their memory effects and whose integers and floats are named attributes.
// Kept out of RtDialect.h: most passes need only the structural ops, and
// these headers are large.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_RTKERNELOPS_H
#define FERRY_DIALECTS_RT_RTKERNELOPS_H

#include "dialects/rt/RtDialect.h"
#include "dialects/rt/RtKernelCall.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/rt/RtKernelOps.h.inc"

#endif // FERRY_DIALECTS_RT_RTKERNELOPS_H
