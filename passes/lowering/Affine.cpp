//===- Affine.cpp - register-affine integers ------------------------------===//

#include "passes/lowering/Affine.h"

#include "llvm/ADT/STLExtras.h"

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
