//===- RtKernelBase.td - what a kernel record holds -------*- tablegen -*-===//
//
// The kernel calling convention, declared once: one record per kernel, in
// the file of its op family (Memory.td, Elementwise.td, ...; Kernels.td
// includes them all). ferry-tblgen (tools/ferry-tblgen) generates from the
// records the runtime's kernel table (runtime/executable/KernelRows.inc:
// the enum, names, signatures, checks, extents, access and bf16 rules both
// backends and the lowering use), each kernel's typed arguments and their
// decoding (runtime/executable/KernelArgs.h), the run() declarations the
// backends implement (KernelRuns.inc) and the reference docs/kernels.md.
// Adding a kernel means writing its record, its CPU body (runtime/cpu), its
// CUDA body (runtime/cuda) and its lowering (passes/), then regenerating.
//
// The executable stores a kernel as its index, the `id` of its record:
// indices are 0..N-1 without gaps, and a kernel's index never changes
// (append new kernels; a reorder is a format version change). Within a
// kernel the order of `ints`, `floats` and `buffers` is the encoding too.
//
// A record sets:
//   kernelEnum  the C++ enumerator (Kernel::Gemm)
//   doc         what it computes (one line, no trailing period)
//   ints        RtInt<name, doc[, arity[, perStep]]>: integer parameters.
//               An optional one trails and reads 0 when absent; a rest
//               one (last) takes any number more. perStep marks the ints
//               that change every step (a dropout's sample_offset, an
//               optimizer's step): CUDA graphs read them on the device.
//   floats      RtFloat<name, doc>
//   buffers     RtBuffer<name, role, type, elements, doc[, arity]>: byte
//               ranges. Role RtIn (read), RtOut (written) or RtInOut;
//               type RtF32, RtI32 or RtBytes (elements of 4, 4 and 1
//               bytes). `elements` is how many the buffer must hold, a C++
//               expression over the integer parameters by name ("0": not
//               checked). A rest int is a list in expressions
//               (`counts[i]`, `counts.size()`), and in a rest buffer's
//               expression `i` is the position within the rest list.
//   checks      RtCheck<condition, message>: the call is refused unless it
//               holds.
//   accessIf    RtAccessIf<buffer, condition, role>: another role while the
//               condition holds (gemm's c is read too when it accumulates).
//   disjoint    RtDisjoint<written, other>: `written` may not overlap
//               `other` (the kernel writes it while other threads still
//               read the other: it cannot run in place). Other buffers may
//               alias.
//   bf16        RtBf16<buffer, condition>: while the condition holds, the
//               f32 buffer may be stored as bf16, 2 bytes an element; the
//               call's bf16 mask (bit b for buffer b) says whether it is.
//               Both backends read it as fp32 and round what they write to
//               nearest even (ferry-plan-bf16-storage decides).
//
// The classes also describe each kernel as an MLIR op of the rt dialect
// (operands for buffers with their memory effects, attributes for the
// parameters): the typed ops the lowering will emit.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_KERNELS_RTKERNELBASE_TD
#define FERRY_DIALECTS_RT_KERNELS_RTKERNELBASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/rt/RtBase.td"
include "dialects/rt/RtInterfaces.td"


class RtRole<list<OpVariableDecorator> effects_, string docName_> {
  list<OpVariableDecorator> effects = effects_;
  string docName = docName_;
}
def RtIn : RtRole<[MemRead], "read">;
def RtOut : RtRole<[MemWrite], "write">;
def RtInOut : RtRole<[MemRead, MemWrite], "read-write">;

class RtElem<string docName_, string cType_, int bytes_> {
  string docName = docName_;
  string cType = cType_;
  int bytes = bytes_;
}
def RtF32 : RtElem<"f32", "float", 4>;
def RtI32 : RtElem<"i32", "int32_t", 4>;
def RtBytes : RtElem<"bytes", "char", 1>;

class RtArity<int kind_, string docSuffix_> {
  int kind = kind_;
  string docSuffix = docSuffix_;
}
def RtRequired : RtArity<0, "">;
def RtOptional : RtArity<1, " (optional)">;
def RtRest : RtArity<2, " (any number)">;

class RtAccessIf<string buffer_, string condition_, RtRole role_> {
  string buffer = buffer_;
  string condition = condition_;
  RtRole role = role_;
}
class RtBf16<string buffer_, string condition_> {
  string buffer = buffer_;
  string condition = condition_;
}
class RtCheck<string condition_, string message_> {
  string condition = condition_;
  string message = message_;
}
class RtDisjoint<string written_, string other_> {
  string written = written_;
  string other = other_;
}

class RtBuffer<string name_, RtRole role_, RtElem type_, string elements_,
               string doc_, RtArity arity_ = RtRequired> {
  string name = name_;
  RtRole role = role_;
  RtElem type = type_;
  string elements = elements_;
  string doc = doc_;
  RtArity arity = arity_;
  Constraint base = !cond(!eq(arity_.kind, 0) : Rt_RangeType,
                          !eq(arity_.kind, 1) : Optional<Rt_RangeType>,
                          true : Variadic<Rt_RangeType>);
}
class RtInt<string name_, string doc_, RtArity arity_ = RtRequired,
            bit perStep_ = 0> {
  string name = name_;
  string doc = doc_;
  RtArity arity = arity_;
  bit perStep = perStep_;
  Attr attr = !cond(!eq(arity_.kind, 0) : Rt_AffineAttr,
                    !eq(arity_.kind, 1) : OptionalAttr<Rt_AffineAttr>,
                    true : TypedArrayAttrBase<Rt_AffineAttr, "affine list">);
}
class RtFloat<string name_, string doc_> {
  string name = name_;
  string doc = doc_;
}

class RtKernel<string mnemonic, int id, string family, list<Trait> props = []>
    : Rt_Op<mnemonic, props> {
  int kernelId = id;
  string kernelFamily = family;
  string kernelEnum = ?;
  string doc = ?;
  list<RtInt> ints = [];
  list<RtFloat> floats = [];
  list<RtBuffer> buffers = [];
  list<RtCheck> checks = [];
  list<RtAccessIf> accessIf = [];
  list<RtDisjoint> disjoint = [];
  list<RtBf16> bf16 = [];
  // Every kernel runs in both backends as run(Context &, const XArgs &) in
  // its family's file, through the generated dispatch (KernelArgs.h), but
  // one the backend carries out itself, in its own schedule (the Transfer
  // family: copies on its copy queue, waits, phase marks): KernelArgs.h
  // decodes its arguments, but no run() is declared for it and
  // dispatchKernel leaves it to the backend (backendOwned(kernel) says so).
  bit backendOwned = 0;

  let summary = doc;
  let extraClassDeclaration =
      "static constexpr unsigned kKernelIndex = " # id # ";";
  let traits = !listconcat(props, [Rt_KernelCallOpInterface],
      !if(!gt(!size(!filter(b, buffers, !ne(b.arity.kind, 0))), 1),
          [AttrSizedOperandSegments], []));
  // A buffer with an access rule gets both effects: the sound superset.
  let arguments = !con(
      !dag(ins, !foreach(b, buffers,
                         Arg<b.base, b.doc,
                             !if(!empty(!filter(r, accessIf,
                                                !eq(r.buffer, b.name))),
                                 b.role.effects, [MemRead, MemWrite])>),
           !foreach(b, buffers, b.name)),
      !dag(ins, !foreach(i, ints, i.attr), !foreach(i, ints, i.name)),
      !dag(ins, !foreach(f, floats, F64Attr), !foreach(f, floats, f.name)),
      (ins OptionalAttr<I64Attr>:$bf16));
  let assemblyFormat = !interleave(!foreach(b, buffers, !cond(
      !ne(b.arity.kind, 0) : "(`" # b.name # "` `(` $" # b.name # "^ `)`)?",
      true : "`" # b.name # "` `(` $" # b.name # " `)`")), " ") # " attr-dict";
}

#endif // FERRY_DIALECTS_RT_KERNELS_RTKERNELBASE_TD
