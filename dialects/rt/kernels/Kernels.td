//===- Kernels.td - every kernel record ---------------------*- tablegen -*-===//
//
// All kernel families: what ferry-tblgen reads (RtKernelBase.td).
//
//===----------------------------------------------------------------------===//

include "dialects/rt/kernels/Memory.td"
include "dialects/rt/kernels/Elementwise.td"
include "dialects/rt/kernels/Layout.td"
include "dialects/rt/kernels/Gemm.td"
include "dialects/rt/kernels/Indexed.td"
include "dialects/rt/kernels/Row.td"
include "dialects/rt/kernels/Attention.td"
include "dialects/rt/kernels/Reduction.td"
include "dialects/rt/kernels/Collective.td"
include "dialects/rt/kernels/Transfer.td"
include "dialects/rt/kernels/ClassSplit.td"
