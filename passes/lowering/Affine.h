//===- Affine.h - register-affine integers and arena alignment --*- C++ -*-===//
//
// The lowering's one kind of integer: `c + sum coeffs[r] * register r`, an
// address or a kernel parameter that one compiled loop body evaluates per
// iteration (a layer's weights at `layer * entry`). Slices hold their
// offsets and kernel ops their integers in this form (as `array<i64: c,
// a0, a1, ...>`, dialects/rt/RtBase.td); this is the arithmetic the passes
// do on them. Also the arena's alignment, which every planned buffer
// starts at a multiple of.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_LOWERING_AFFINE_H
#define FERRY_PASSES_LOWERING_AFFINE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

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

// An fp32 byte offset as a bf16 one (half): whether every term is a whole
// fp32 element (a multiple of 4), and the halved expression.
bool halvable(const Affine &a);
Affine halved(const Affine &a);

} // namespace ferry::lowering

#endif // FERRY_PASSES_LOWERING_AFFINE_H
