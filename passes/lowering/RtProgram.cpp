//===- RtProgram.cpp - rt programs on virtual buffers, as data ------------===//

#include "passes/lowering/RtProgram.h"
#include "dialects/rt/RtAttributes.h"

#include "runtime/executable/KernelTable.h"

#include "mlir/IR/Builders.h"

#include <algorithm>

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

Affine Affine::reg(unsigned r) {
  Affine a;
  a.coeffs.assign(r + 1, 0);
  a.coeffs[r] = 1;
  return a;
}

Affine Affine::operator+(const Affine &o) const {
  Affine r = *this;
  r.c += o.c;
  if (r.coeffs.size() < o.coeffs.size())
    r.coeffs.resize(o.coeffs.size(), 0);
  for (size_t i = 0; i < o.coeffs.size(); ++i)
    r.coeffs[i] += o.coeffs[i];
  return r;
}

Affine Affine::operator*(int64_t k) const {
  Affine r = *this;
  r.c *= k;
  for (int64_t &v : r.coeffs)
    v *= k;
  return r;
}

bool Affine::isConstant() const {
  return llvm::all_of(coeffs, [](int64_t v) { return v == 0; });
}

bool Affine::operator==(const Affine &o) const {
  if (c != o.c)
    return false;
  size_t n = std::max(coeffs.size(), o.coeffs.size());
  for (size_t i = 0; i < n; ++i)
    if (coeff(i) != o.coeff(i))
      return false;
  return true;
}

Affine Affine::withRegister(int64_t r, int64_t value) const {
  Affine a = *this;
  if (int64_t k = coeff(r); k != 0) {
    a.c += k * value;
    a.coeffs[r] = 0;
  }
  return a;
}

DenseI64ArrayAttr Affine::attr(Builder &b, ArrayRef<int64_t> prefix) const {
  SmallVector<int64_t> v(prefix.begin(), prefix.end());
  v.push_back(c);
  v.append(coeffs.begin(), coeffs.end());
  return b.getDenseI64ArrayAttr(v);
}

Affine Affine::fromArray(ArrayRef<int64_t> v) {
  Affine a;
  a.c = v.front();
  a.coeffs.assign(v.begin() + 1, v.end());
  return a;
}

std::vector<StateInfo> lowering::readStates(ModuleOp module) {
  std::vector<StateInfo> states;
  for (auto s : module.getOps<rt::StateOp>())
    states.push_back(StateInfo{s.getSymName().str(), s.getRole().str(),
                               static_cast<int64_t>(s.getBytes()),
                               s->hasAttr("host")});
  return states;
}

namespace {

LogicalResult readBlock(Block &block, Program &p) {
  for (Operation &op : block) {
    if (auto buffer = dyn_cast<rt::BufferOp>(op)) {
      auto id = static_cast<size_t>(buffer.getId());
      if (id < p.buffers.size() &&
          (p.buffers[id].isState || p.buffers[id].bytes > 0))
        return buffer.emitOpError() << "declares buffer " << id
                                    << ", which is a state or declared before";
      if (id >= p.buffers.size())
        p.buffers.resize(id + 1);
      p.buffers[id].bytes = static_cast<int64_t>(buffer.getBytes());
      if (auto label = buffer.getLabel())
        p.buffers[id].label = label->str();
      if (auto scratch = buffer.getScratch())
        p.buffers[id].scratch = static_cast<int64_t>(*scratch);
      p.buffers[id].bf16 = buffer->hasAttr("bf16");
      continue;
    }
    if (auto loop = dyn_cast<rt::LoopOp>(op)) {
      size_t header = p.instrs.size();
      Instr in;
      in.loopCount = static_cast<int64_t>(loop.getCount());
      in.loopRegister = static_cast<int64_t>(loop.getRegisterIndex());
      if (auto parity = loop.getParityRegister())
        in.parityRegister = static_cast<int64_t>(*parity);
      p.instrs.push_back(in);
      if (failed(readBlock(loop.getBody().front(), p)))
        return failure();
      p.instrs[header].loopBody =
          static_cast<int64_t>(p.instrs.size() - header - 1);
      continue;
    }
    auto call = dyn_cast<rt::CallOp>(op);
    if (!call)
      return op.emitOpError() << "is not part of a program on virtual "
                                 "buffers (rt.buffer, rt.call, rt.loop)";
    Instr in;
    in.kernel = call.getKernel().str();
    for (Attribute a : call.getBuffers()) {
      ArrayRef<int64_t> v = cast<DenseI64ArrayAttr>(a).asArrayRef();
      in.buffers.push_back(Ref{static_cast<int>(v[0]),
                               Affine::fromArray(v.drop_front(2)), v[1]});
    }
    for (Attribute a : call.getInts())
      in.ints.push_back(
          Affine::fromArray(cast<DenseI64ArrayAttr>(a).asArrayRef()));
    in.floats.assign(call.getFloats().begin(), call.getFloats().end());
    if (auto mask = call->getAttrOfType<IntegerAttr>("bf16"))
      in.bf16 = static_cast<uint64_t>(mask.getInt());
    p.instrs.push_back(std::move(in));
  }
  return success();
}

} // namespace

FailureOr<Program> lowering::readProgram(rt::ProgramOp op,
                                         const std::vector<StateInfo> &states) {
  Program p;
  p.name = op.getSymName().str();
  p.registers = static_cast<int64_t>(op.getRegisters());
  if (auto names = op->getAttrOfType<ArrayAttr>(rt::attrs::kPhaseNames))
    for (Attribute a : names) {
      auto name = dyn_cast<StringAttr>(a);
      if (!name)
        return op.emitOpError()
               << "rt.phase_names must hold strings, found " << a;
      p.phaseNames.push_back(name.str());
    }
  for (const StateInfo &s : states) {
    Buffer b;
    b.bytes = s.bytes;
    b.isState = true;
    p.buffers.push_back(b);
  }
  if (failed(readBlock(op.getBody().front(), p)))
    return failure();
  for (const Instr &in : p.instrs) {
    bool marker = in.kernel == "phase_begin" || in.kernel == "phase_end";
    if (marker &&
        (in.ints.empty() || !in.ints[0].isConstant() || in.ints[0].c < 0 ||
         in.ints[0].c >= static_cast<int64_t>(p.phaseNames.size())))
      return op.emitOpError()
             << "has a '" << in.kernel
             << "' whose phase is not a constant index of rt.phase_names";
    for (const Ref &r : in.buffers)
      if (r.buffer >= static_cast<int>(p.buffers.size()) ||
          p.buffers[r.buffer].bytes == 0)
        return op.emitOpError()
               << "calls '" << in.kernel << "' on buffer " << r.buffer
               << ", which is neither a state nor an "
                  "rt.buffer of the program";
  }
  return p;
}

namespace {

// Emits instructions [begin, end) of `p` at the end of `block`.
template <typename EmitCall>
size_t writeInstrs(Block *block, const Program &p, size_t begin, size_t end,
                   Location loc, EmitCall emitCall) {
  size_t q = begin;
  while (q < end) {
    const Instr &in = p.instrs[q];
    OpBuilder b = OpBuilder::atBlockEnd(block);
    if (!in.isLoop()) {
      emitCall(b, in);
      ++q;
      continue;
    }
    auto loop = rt::LoopOp::create(b, loc, in.loopRegister, in.loopCount,
                                   in.parityRegister >= 0
                                       ? b.getI64IntegerAttr(in.parityRegister)
                                       : IntegerAttr());
    Block *body = b.createBlock(&loop.getBody());
    q = writeInstrs(body, p, q + 1, q + 1 + in.loopBody, loc, emitCall);
  }
  return q;
}

Block *resetBody(rt::ProgramOp op) {
  Region &region = op.getBody();
  region.getBlocks().clear();
  OpBuilder b(op.getContext());
  return b.createBlock(&region);
}

void setProgramAttrs(rt::ProgramOp op, const Program &p) {
  Builder b(op.getContext());
  op.setRegisters(static_cast<uint64_t>(p.registers));
  if (!p.phaseNames.empty()) {
    SmallVector<StringRef> names(p.phaseNames.begin(), p.phaseNames.end());
    op->setAttr(rt::attrs::kPhaseNames, b.getStrArrayAttr(names));
  }
}

} // namespace

void lowering::writeProgram(rt::ProgramOp op, const Program &p) {
  setProgramAttrs(op, p);
  Block *block = resetBody(op);
  std::vector<bool> used(p.buffers.size(), false);
  for (const Instr &in : p.instrs)
    for (const Ref &r : in.buffers)
      used[r.buffer] = true;
  OpBuilder b = OpBuilder::atBlockEnd(block);
  for (auto [id, buf] : llvm::enumerate(p.buffers)) {
    if (buf.isState || !used[id])
      continue;
    auto decl = rt::BufferOp::create(
        b, op.getLoc(), id, buf.bytes,
        buf.label.empty() ? StringAttr() : b.getStringAttr(buf.label),
        buf.scratch > 0 ? b.getI64IntegerAttr(buf.scratch) : IntegerAttr());
    if (buf.bf16)
      decl->setAttr("bf16", b.getUnitAttr());
  }
  writeInstrs(block, p, 0, p.instrs.size(), op.getLoc(),
              [&](OpBuilder &ib, const Instr &in) {
                SmallVector<Attribute> bufs, ints;
                for (const Ref &r : in.buffers)
                  bufs.push_back(r.offset.attr(ib, {r.buffer, r.bytes}));
                for (const Affine &a : in.ints)
                  ints.push_back(a.attr(ib));
                auto call = rt::CallOp::create(
                    ib, op.getLoc(), in.kernel, ib.getArrayAttr(bufs),
                    ib.getArrayAttr(ints), ib.getDenseF64ArrayAttr(in.floats));
                if (in.bf16)
                  call->setAttr("bf16", ib.getI64IntegerAttr(
                                            static_cast<int64_t>(in.bf16)));
              });
}

void lowering::writeArenaProgram(rt::ProgramOp op, const Program &p) {
  setProgramAttrs(op, p);
  Block *block = resetBody(op);
  writeInstrs(
      block, p, 0, p.instrs.size(), op.getLoc(),
      [&](OpBuilder &ib, const Instr &in) {
        SmallVector<Attribute> bufs, ints;
        for (const Ref &r : in.buffers) {
          Affine a = r.offset + Affine::constant(p.buffers[r.buffer].address);
          bufs.push_back(a.attr(ib, {r.bytes}));
        }
        for (const Affine &a : in.ints)
          ints.push_back(a.attr(ib));
        auto call = rt::KernelOp::create(
            ib, op.getLoc(), in.kernel, ib.getArrayAttr(bufs),
            ib.getArrayAttr(ints), ib.getDenseF64ArrayAttr(in.floats));
        if (in.bf16)
          call->setAttr("bf16",
                        ib.getI64IntegerAttr(static_cast<int64_t>(in.bf16)));
      });
}

bool lowering::halvable(const Affine &a) {
  if (a.c % 4 != 0)
    return false;
  for (int64_t c : a.coeffs)
    if (c % 4 != 0)
      return false;
  return true;
}

Affine lowering::halved(const Affine &a) {
  Affine h = a;
  h.c /= 2;
  for (int64_t &c : h.coeffs)
    c /= 2;
  return h;
}

void lowering::accessOf(const Instr &in, size_t b, bool &reads, bool &writes) {
  std::optional<kernels::Kernel> kernel = kernels::kernelByName(in.kernel);
  if (!kernel || b >= in.buffers.size()) { // not a call: assume both
    reads = writes = true;
    return;
  }
  std::vector<int64_t> ints;
  for (const Affine &a : in.ints)
    ints.push_back(a.c);
  kernels::Resolved r = kernels::resolve(*kernel, ints, in.buffers.size());
  reads = r.buffers[b].reads;
  writes = r.buffers[b].writes;
}
