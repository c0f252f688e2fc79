//===- RtInterfaces.td - what every typed kernel op answers -*- tablegen -*-===//
//
// The interface every op generated from a kernel record implements
// (RtKernelBase.td attaches it): its index in the executable, which the
// writer encodes and the generic accessors of RtKernelCall.h key the
// record's signature on, so that no pass or writer looks a kernel up by
// its name.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_RTINTERFACES_TD
#define FERRY_DIALECTS_RT_RTINTERFACES_TD

include "mlir/IR/OpBase.td"

def Rt_KernelCallOpInterface : OpInterface<"KernelCallOpInterface"> {
  let cppNamespace = "::ferry::rt";
  let description = [{
    A call of one kernel of dialects/rt/kernels: its !rt.range operands are
    the record's buffers in order, its named attributes the record's
    integers (register-affine) and floats, and `bf16` the mask of the
    buffers stored as bf16. RtKernelCall.h reads and builds any of them in
    the record's order, which is the executable's encoding.
  }];
  let methods = [
    InterfaceMethod<"The kernel's index in the executable (its record's id).",
      "unsigned", "getKernelIndex", (ins), [{}],
      [{ return ConcreteOp::kKernelIndex; }]>,
  ];
  // The bf16 mask names only buffers whose record allows bf16 storage, and
  // the optional integers are given as a prefix (the encoding is a list).
  let verify = [{ return ::ferry::rt::verifyKernelCall($_op); }];
}

#endif // FERRY_DIALECTS_RT_RTINTERFACES_TD
