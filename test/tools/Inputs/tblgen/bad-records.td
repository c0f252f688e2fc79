// Kernel records ferry-tblgen refuses, one per -D case (ferry-tblgen.test).
include "dialects/rt/kernels/RtKernelBase.td"

def Rt_FirstOp : RtKernel<"first", 0, "Memory"> {
  let kernelEnum = "First";
  let doc = "dst = src";
  let ints = [RtInt<"bytes", "bytes">];
  let buffers = [RtBuffer<"src", RtIn, RtBytes, "bytes", "source">,
                 RtBuffer<"dst", RtOut, RtBytes, "bytes", "destination">];
#ifdef BAD_RULE
  let disjoint = [RtDisjoint<"dst", "source">];
#endif
#ifdef BAD_ORDER
  let ints = [RtInt<"bytes", "bytes", RtOptional>, RtInt<"more", "more">];
#endif
#ifdef SAME_NAME
  let floats = [RtFloat<"src", "a float named as a buffer">];
#endif
}

#ifdef GAP
def Rt_ThirdOp : RtKernel<"third", 2, "Memory"> {
#else
def Rt_SecondOp : RtKernel<"second", 1, "Memory"> {
#endif
  let kernelEnum = "Second";
  let doc = "dst[e] = 0";
  let ints = [RtInt<"count", "elements">];
  let buffers = [RtBuffer<"dst", RtOut, RtF32, "count", "filled">];
}
