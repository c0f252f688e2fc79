//===- RtProgram.h - rt programs on virtual buffers, as data ----*- C++ -*-===//
//
// The lowering passes (ferry-select-kernels to ferry-layout-arena) hand each
// other rt IR: typed kernel calls on rt.slices of rt.state_ref / rt.alloc
// buffers, in rt.loops. Their algorithms (buffer forwarding, liveness,
// staging) still work on positions in a flat instruction list, as the
// runtime replays it; this header is that list and the round trip between
// it and the IR (issue 31 moves the passes onto the IR itself):
//
//   * Affine: `c + sum coeffs[r] * register r`, an address or a parameter;
//   * Ref: a byte range of one buffer (a state or a temporary);
//   * Instr: a kernel call or a loop header whose body is the next
//     `loopBody` instructions;
//   * Program: one rt.program, read with readProgram, written back with
//     writeProgram (slices of the program's buffers) or writeArenaProgram
//     (slices of rt.arena, what the executable encodes).
//
// Buffer ids: the module's rt.state ops in declaration order come first,
// then the program's rt.allocs in order.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_RTPROGRAM_H
#define FERRY_PASSES_LOWERING_RTPROGRAM_H

#include "dialects/rt/RtDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::lowering {

// Every buffer the plan places starts at a multiple of this.
constexpr int64_t kAlignment = 64;
inline int64_t alignUp(int64_t v) {
  return (v + kAlignment - 1) / kAlignment * kAlignment;
}

// c + sum coeffs[r] * register r.
struct Affine {
  int64_t c = 0;
  llvm::SmallVector<int64_t> coeffs;

  static Affine constant(int64_t v) { return Affine{v, {}}; }
  static Affine reg(unsigned r);
  Affine operator+(const Affine &o) const;
  Affine operator*(int64_t k) const;
  bool isConstant() const;
  bool operator==(const Affine &o) const; // equal as functions
  int64_t coeff(int64_t r) const {
    return r < static_cast<int64_t>(coeffs.size()) ? coeffs[r] : 0;
  }
  bool usesRegister(int64_t r) const { return coeff(r) != 0; }
  // The same expression with register r fixed to `value`.
  Affine withRegister(int64_t r, int64_t value) const;
  // array<i64: [prefix...,] c, coeffs...>
  mlir::DenseI64ArrayAttr attr(mlir::Builder &b,
                               llvm::ArrayRef<int64_t> prefix = {}) const;
  static Affine fromArray(llvm::ArrayRef<int64_t> v); // c, coeffs...
};

// A byte range: buffer id (a state or a temporary), offset within it, size.
struct Ref {
  int buffer = -1;
  Affine offset;
  int64_t bytes = 0;
};

struct Buffer {
  int64_t bytes = 0;
  bool isState = false;
  int64_t first = INT64_MAX, last = -1; // live range (instruction positions)
  std::string label;   // for budget errors: what a temporary holds
  int64_t scratch = 0; // a GEMM workspace's trailing cuBLASLt scratch bytes
  bool bf16 = false;   // holds bf16 values (ferry-plan-bf16-storage)
  int64_t address = 0; // after the layout: in the arena or in host memory
};

struct Instr {
  std::string kernel; // empty for a loop header
  llvm::SmallVector<Ref> buffers;
  llvm::SmallVector<Affine> ints;
  llvm::SmallVector<double> floats;
  int64_t loopCount = 0, loopRegister = 0, loopBody = 0;
  int64_t parityRegister = -1; // a loop's counter & 1 (prefetch halves)
  uint64_t bf16 = 0; // bit b: buffer b holds bf16 (the `bf16` attribute)
  bool isLoop() const { return kernel.empty(); }
};

// What the lowering keeps of an rt.state.
struct StateInfo {
  std::string name, role;
  int64_t bytes = 0;
  bool host = false; // a remote buffer (phased execution)
};

struct Program {
  std::string name;
  std::vector<Buffer> buffers; // states first, then temporaries by id
  std::vector<Instr> instrs;
  int64_t registers = 0;
  std::vector<std::string> phaseNames; // by phase id (rt.phase_names)
};

// The module's rt.state ops in declaration order.
std::vector<StateInfo> readStates(mlir::ModuleOp module);

// Reads a program before the arena layout (rt.state_ref, rt.alloc,
// rt.slice, kernel calls, rt.loop).
mlir::FailureOr<Program> readProgram(rt::ProgramOp op,
                                     const std::vector<StateInfo> &states);

// Replaces the body of `op` with `p` before the layout and sets its
// registers and phase names: an rt.state_ref per state used, an rt.alloc
// per temporary used (unused ones are dropped), and each call preceded by
// the slices it takes.
void writeProgram(rt::ProgramOp op, const Program &p);

// Replaces the body of `op` with its calls on slices of rt.arena (device)
// or rt.arena host: each buffer at its `address`.
void writeArenaProgram(rt::ProgramOp op, const Program &p);

// An fp32 byte offset as a bf16 one (half): whether every term is a whole
// fp32 element (a multiple of 4), and the halved expression.
bool halvable(const Affine &a);
Affine halved(const Affine &a);

// Whether instruction `in` reads / writes its buffer `b`: the roles
// kernel records declare, resolved against the call's constant parameters.
void accessOf(const Instr &in, size_t b, bool &reads, bool &writes);

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_RTPROGRAM_H
