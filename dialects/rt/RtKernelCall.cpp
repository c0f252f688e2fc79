//===- RtKernelCall.cpp - any typed kernel op, in record order ------------===//

#include "dialects/rt/RtKernelCall.h"
#include "dialects/rt/RtKernelOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"

using namespace mlir;
using namespace ferry;
using namespace ferry::rt;

#include "dialects/rt/RtInterfaces.cpp.inc"

namespace {

using kernels::Parameter;

// Every kernel op's mask of bf16 buffers (RtKernelBase.td's `$bf16`).
constexpr llvm::StringLiteral kBf16Attr = "bf16";

// How many of `given` buffers each declared buffer takes: a required one
// takes one, optional ones (they trail) one each while some are left, a rest
// list what the others leave (the runtime decodes them the same way).
SmallVector<int32_t> bufferSegments(const kernels::Signature &sig,
                                    size_t given) {
  SmallVector<int32_t> sizes;
  size_t fixed = 0;
  for (const kernels::BufferParameter &p : sig.buffers)
    fixed += p.kind != Parameter::Rest;
  size_t rest = given > fixed ? given - fixed : 0;
  size_t left = given;
  for (const kernels::BufferParameter &p : sig.buffers) {
    int32_t n = p.kind == Parameter::Rest       ? static_cast<int32_t>(rest)
                : p.kind == Parameter::Required ? 1
                                                : (left > 0 ? 1 : 0);
    sizes.push_back(n);
    left -= std::min<size_t>(left, static_cast<size_t>(n));
  }
  return sizes;
}

} // namespace

kernels::Kernel rt::kernelOf(KernelCallOpInterface op) {
  return static_cast<kernels::Kernel>(op.getKernelIndex());
}

KernelCallParts rt::kernelCallParts(KernelCallOpInterface op) {
  KernelCallParts parts;
  parts.kernel = kernelOf(op);
  const kernels::Signature &sig = kernels::signature(parts.kernel);
  Operation *o = op.getOperation();
  parts.buffers.assign(o->operand_begin(), o->operand_end());
  for (const Parameter &p : sig.ints) {
    Attribute a = o->getAttr(p.name);
    if (!a)
      break; // absent optional ones trail
    if (auto list = dyn_cast<ArrayAttr>(a)) {
      for (Attribute e : list)
        parts.ints.emplace_back(cast<DenseI64ArrayAttr>(e).asArrayRef());
      continue;
    }
    parts.ints.emplace_back(cast<DenseI64ArrayAttr>(a).asArrayRef());
  }
  for (const Parameter &p : sig.floats)
    if (auto f = o->getAttrOfType<FloatAttr>(p.name))
      parts.floats.push_back(f.getValueAsDouble());
  parts.bf16 = bf16MaskOf(op);
  return parts;
}

namespace {

// The op of `kernel` with its buffers: `state` gets them, with the operand
// segments when the record has more than one optional or rest buffer.
// False when the buffers cannot be the record's.
bool kernelOpState(OpBuilder &b, OperationState &state, kernels::Kernel kernel,
                   ValueRange buffers) {
  const kernels::Signature &sig = kernels::signature(kernel);
  state.addOperands(buffers);
  SmallVector<int32_t> segments = bufferSegments(sig, buffers.size());
  int64_t covered = 0;
  for (int32_t n : segments)
    covered += n;
  std::optional<RegisteredOperationName> name = state.name.getRegisteredInfo();
  if (covered != static_cast<int64_t>(buffers.size()) ||
      buffers.size() < sig.minBuffers || !name)
    return false;
  if (name->hasTrait<OpTrait::AttrSizedOperandSegments>())
    state.addAttribute("operandSegmentSizes", b.getDenseI32ArrayAttr(segments));
  return true;
}

OperationState stateOf(Location loc, kernels::Kernel kernel) {
  return OperationState(loc,
                        (Twine("rt.") + kernels::signature(kernel).name).str());
}

} // namespace

KernelCallOpInterface rt::createKernelOp(OpBuilder &b, Location loc,
                                         kernels::Kernel kernel,
                                         ValueRange buffers) {
  OperationState state = stateOf(loc, kernel);
  if (!kernelOpState(b, state, kernel, buffers))
    emitError(loc) << "ferry internal error: a call of kernel '"
                   << kernels::signature(kernel).name << "' with "
                   << buffers.size() << " buffers does not match its record";
  return cast<KernelCallOpInterface>(b.create(state));
}

FailureOr<KernelCallOpInterface>
rt::createKernelCall(OpBuilder &b, Location loc, const KernelCallParts &parts) {
  const kernels::Signature &sig = kernels::signature(parts.kernel);
  auto mismatch = [&](StringRef what) {
    emitError(loc) << "ferry internal error: a call of kernel '" << sig.name
                   << "' with " << what << " does not match its record";
    return failure();
  };
  OperationState state = stateOf(loc, parts.kernel);
  if (!kernelOpState(b, state, parts.kernel, parts.buffers))
    return mismatch(std::to_string(parts.buffers.size()) + " buffers");
  size_t next = 0;
  for (const Parameter &p : sig.ints) {
    if (p.kind == Parameter::Rest) {
      SmallVector<Attribute> list;
      for (; next < parts.ints.size(); ++next)
        list.push_back(b.getDenseI64ArrayAttr(parts.ints[next]));
      state.addAttribute(p.name, b.getArrayAttr(list));
      continue;
    }
    if (next == parts.ints.size()) {
      if (p.kind == Parameter::Required)
        return mismatch(std::to_string(parts.ints.size()) + " integers");
      break;
    }
    state.addAttribute(p.name, b.getDenseI64ArrayAttr(parts.ints[next++]));
  }
  if (next != parts.ints.size())
    return mismatch(std::to_string(parts.ints.size()) + " integers");
  if (parts.floats.size() != sig.floats.size())
    return mismatch(std::to_string(parts.floats.size()) + " floats");
  for (auto [p, v] : llvm::zip(sig.floats, parts.floats))
    state.addAttribute(p.name, b.getF64FloatAttr(v));
  if (parts.bf16)
    state.addAttribute(kBf16Attr,
                       b.getI64IntegerAttr(static_cast<int64_t>(parts.bf16)));
  return cast<KernelCallOpInterface>(b.create(state));
}

LogicalResult rt::verifyKernelCall(Operation *op) {
  auto call = cast<KernelCallOpInterface>(op);
  const kernels::Signature &sig = kernels::signature(kernelOf(call));
  // Optional integers are encoded as a list: a later one needs the earlier.
  bool absent = false;
  for (const Parameter &p : sig.ints) {
    bool present = op->getAttr(p.name) != nullptr;
    if (present && absent)
      return op->emitOpError()
             << "has '" << p.name
             << "' but not an optional integer before it (the executable "
                "lists integers in the record's order)";
    absent |= !present;
  }
  // bf16 storage: a mask over the buffers, each one whose record declares
  // RtBf16 (the condition is the runtime's to check).
  Attribute a = op->getAttr(kBf16Attr);
  if (!a)
    return success();
  auto mask = dyn_cast<IntegerAttr>(a);
  if (!mask || mask.getInt() <= 0)
    return op->emitOpError()
           << "bf16 must be a positive integer (a mask of the buffers "
              "stored as bf16), found "
           << a;
  auto bits = static_cast<uint64_t>(mask.getInt());
  SmallVector<int32_t> segments = bufferSegments(sig, op->getNumOperands());
  SmallVector<const kernels::BufferParameter *> declared;
  for (auto [p, n] : llvm::zip(sig.buffers, segments))
    for (int32_t i = 0; i < n; ++i)
      declared.push_back(&p);
  for (size_t b = 0; b < 64; ++b)
    if ((bits >> b & 1) && (b >= declared.size() || !declared[b]->bf16If))
      return op->emitOpError()
             << "stores buffer " << b << " as bf16, which kernel '" << sig.name
             << "' cannot take (its record in dialects/rt/kernels has no "
                "RtBf16 rule for it)";
  return success();
}

uint64_t rt::bf16MaskOf(KernelCallOpInterface op) {
  auto mask = op->getAttrOfType<IntegerAttr>(kBf16Attr);
  return mask ? static_cast<uint64_t>(mask.getInt()) : 0;
}

void rt::setBf16Mask(KernelCallOpInterface op, uint64_t mask) {
  if (mask == 0) {
    op->removeAttr(kBf16Attr);
    return;
  }
  Builder b(op->getContext());
  op->setAttr(kBf16Attr, b.getI64IntegerAttr(static_cast<int64_t>(mask)));
}
