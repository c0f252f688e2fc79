//===- RtProgram.cpp - rt programs on virtual buffers, as data ------------===//

#include "passes/lowering/RtProgram.h"
#include "dialects/rt/RtAttributes.h"
#include "dialects/rt/RtKernelCall.h"

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

// What readBlock needs besides the program: the buffer id of each
// rt.alloc / rt.state_ref value, and the states' ids by name.
struct ReadState {
  llvm::DenseMap<Value, int> bufferIds;
  llvm::StringMap<int> stateIds;
};

LogicalResult readBlock(Block &block, Program &p, ReadState &rs) {
  for (Operation &op : block) {
    if (auto alloc = dyn_cast<rt::AllocOp>(op)) {
      Buffer b;
      b.bytes = static_cast<int64_t>(alloc.getBytes());
      if (auto label = alloc.getLabel())
        b.label = label->str();
      if (auto scratch = alloc.getScratch())
        b.scratch = static_cast<int64_t>(*scratch);
      b.bf16 = alloc.getBf16();
      rs.bufferIds[alloc.getResult()] = static_cast<int>(p.buffers.size());
      p.buffers.push_back(std::move(b));
      continue;
    }
    if (auto ref = dyn_cast<rt::StateRefOp>(op)) {
      auto it = rs.stateIds.find(ref.getState());
      if (it == rs.stateIds.end())
        return ref.emitOpError() << "names no rt.state of the module";
      rs.bufferIds[ref.getResult()] = it->second;
      continue;
    }
    if (isa<rt::SliceOp>(op))
      continue; // read with the call that takes it
    if (auto loop = dyn_cast<rt::LoopOp>(op)) {
      size_t header = p.instrs.size();
      Instr in;
      in.loopCount = static_cast<int64_t>(loop.getCount());
      in.loopRegister = static_cast<int64_t>(loop.getRegisterIndex());
      if (auto parity = loop.getParityRegister())
        in.parityRegister = static_cast<int64_t>(*parity);
      p.instrs.push_back(in);
      if (failed(readBlock(loop.getBody().front(), p, rs)))
        return failure();
      p.instrs[header].loopBody =
          static_cast<int64_t>(p.instrs.size() - header - 1);
      continue;
    }
    auto call = dyn_cast<rt::KernelCallOpInterface>(op);
    if (!call)
      return op.emitOpError()
             << "is not part of a program before the arena layout "
                "(rt.alloc, rt.state_ref, rt.slice, kernel calls, rt.loop)";
    rt::KernelCallParts parts = rt::kernelCallParts(call);
    Instr in;
    in.kernel = kernels::kernelName(parts.kernel);
    for (Value v : parts.buffers) {
      auto slice = v.getDefiningOp<rt::SliceOp>();
      auto id =
          slice ? rs.bufferIds.find(slice.getSource()) : rs.bufferIds.end();
      if (id == rs.bufferIds.end())
        return op.emitOpError()
               << "takes a range that is not an rt.slice of an rt.alloc or "
                  "rt.state_ref of the program";
      in.buffers.push_back(Ref{id->second, Affine::fromArray(slice.getOffset()),
                               static_cast<int64_t>(slice.getBytes())});
    }
    for (const rt::AffineArray &a : parts.ints)
      in.ints.push_back(Affine::fromArray(a));
    in.floats = std::move(parts.floats);
    in.bf16 = parts.bf16;
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
  ReadState rs;
  for (const StateInfo &s : states) {
    Buffer b;
    b.bytes = s.bytes;
    b.isState = true;
    rs.stateIds[s.name] = static_cast<int>(p.buffers.size());
    p.buffers.push_back(b);
  }
  if (failed(readBlock(op.getBody().front(), p, rs)))
    return failure();
  for (const Instr &in : p.instrs) {
    bool marker = in.kernel == "phase_begin" || in.kernel == "phase_end";
    if (marker &&
        (in.ints.empty() || !in.ints[0].isConstant() || in.ints[0].c < 0 ||
         in.ints[0].c >= static_cast<int64_t>(p.phaseNames.size())))
      return op.emitOpError()
             << "has a '" << in.kernel
             << "' whose phase is not a constant index of rt.phase_names";
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

namespace {

// Emits `in` at `b`: one rt.slice per buffer of the call, right before it,
// then the kernel's typed op. `sourceOf` gives the buffer a Ref slices.
template <typename SourceOf>
void emitCall(OpBuilder &b, Location loc, const Program &p, const Instr &in,
              SourceOf sourceOf) {
  rt::KernelCallParts parts;
  parts.kernel = *kernels::kernelByName(in.kernel);
  for (const Ref &r : in.buffers) {
    auto [source, offset] = sourceOf(r);
    parts.buffers.push_back(rt::SliceOp::create(
        b, loc, b.getType<rt::RangeType>(), source, offset.attr(b), r.bytes));
  }
  for (const Affine &a : in.ints) {
    rt::AffineArray v{a.c};
    v.append(a.coeffs.begin(), a.coeffs.end());
    parts.ints.push_back(std::move(v));
  }
  parts.floats.assign(in.floats.begin(), in.floats.end());
  parts.bf16 = in.bf16;
  (void)rt::createKernelCall(b, loc, parts);
}

} // namespace

void lowering::writeProgram(rt::ProgramOp op, const Program &p) {
  setProgramAttrs(op, p);
  std::vector<StateInfo> states = readStates(op->getParentOfType<ModuleOp>());
  Block *block = resetBody(op);
  std::vector<bool> used(p.buffers.size(), false);
  for (const Instr &in : p.instrs)
    for (const Ref &r : in.buffers)
      used[r.buffer] = true;
  OpBuilder b = OpBuilder::atBlockEnd(block);
  Type bufferType = b.getType<rt::BufferType>();
  // The buffers: the states the program uses, then its temporaries (those
  // no call uses are dropped: how forwarding frees them).
  std::vector<Value> values(p.buffers.size());
  for (auto [id, buf] : llvm::enumerate(p.buffers))
    if (buf.isState && used[id])
      values[id] =
          rt::StateRefOp::create(b, op.getLoc(), bufferType, states[id].name);
  for (auto [id, buf] : llvm::enumerate(p.buffers)) {
    if (buf.isState || !used[id])
      continue;
    values[id] = rt::AllocOp::create(
        b, op.getLoc(), bufferType, buf.bytes,
        buf.label.empty() ? StringAttr() : b.getStringAttr(buf.label),
        buf.scratch > 0 ? b.getI64IntegerAttr(buf.scratch) : IntegerAttr(),
        buf.bf16);
  }
  writeInstrs(block, p, 0, p.instrs.size(), op.getLoc(),
              [&](OpBuilder &ib, const Instr &in) {
                emitCall(ib, op.getLoc(), p, in, [&](const Ref &r) {
                  return std::make_pair(values[r.buffer], r.offset);
                });
              });
}

void lowering::writeArenaProgram(rt::ProgramOp op, const Program &p) {
  setProgramAttrs(op, p);
  std::vector<StateInfo> states = readStates(op->getParentOfType<ModuleOp>());
  Block *block = resetBody(op);
  OpBuilder b = OpBuilder::atBlockEnd(block);
  auto isHost = [&](const Ref &r) {
    return p.buffers[r.buffer].isState && states[r.buffer].host;
  };
  Value arena =
      rt::ArenaOp::create(b, op.getLoc(), b.getType<rt::BufferType>(), false);
  Value host;
  for (const Instr &in : p.instrs)
    for (const Ref &r : in.buffers)
      if (!host && isHost(r))
        host = rt::ArenaOp::create(b, op.getLoc(), b.getType<rt::BufferType>(),
                                   true);
  writeInstrs(block, p, 0, p.instrs.size(), op.getLoc(),
              [&](OpBuilder &ib, const Instr &in) {
                emitCall(ib, op.getLoc(), p, in, [&](const Ref &r) {
                  return std::make_pair(
                      isHost(r) ? host : arena,
                      r.offset + Affine::constant(p.buffers[r.buffer].address));
                });
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
