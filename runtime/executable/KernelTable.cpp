// the kernel records expanded: the names, the signatures, and the resolution of one
// call's buffers (roles, extents, checks, disjoint pairs) against its
// integer parameters.
#include "runtime/executable/KernelTable.h"

#include <limits>
#include <string_view>

using namespace ferry::kernels;

namespace {

// An integer of a kernel record's expression. The parameters of a damaged
// executable can be anything, so every operation checks for overflow; an
// overflowed value compares unequal to everything and sizes as -1.
struct Int {
  int64_t v = 0;
  bool bad = false;
  Int(int64_t value) : v(value) {} // NOLINT: expressions mix in literals
  Int(int value) : v(value) {}     // NOLINT
  Int(size_t value)                // NOLINT
      : v(static_cast<int64_t>(value)),
        bad(value > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {}
  static Int overflow() {
    Int r(0);
    r.bad = true;
    return r;
  }
};
Int operator+(Int a, Int b) {
  int64_t r;
  return a.bad || b.bad || __builtin_add_overflow(a.v, b.v, &r)
             ? Int::overflow()
             : Int(r);
}
Int operator-(Int a, Int b) {
  int64_t r;
  return a.bad || b.bad || __builtin_sub_overflow(a.v, b.v, &r)
             ? Int::overflow()
             : Int(r);
}
Int operator*(Int a, Int b) {
  int64_t r;
  return a.bad || b.bad || __builtin_mul_overflow(a.v, b.v, &r)
             ? Int::overflow()
             : Int(r);
}
Int operator/(Int a, Int b) { // truncating; by zero (or overflowing): bad
  return a.bad || b.bad || b.v == 0 ||
                 (b.v == -1 && a.v == std::numeric_limits<int64_t>::min())
             ? Int::overflow()
             : Int(a.v / b.v);
}
bool operator==(Int a, Int b) { return !a.bad && !b.bad && a.v == b.v; }
bool operator!=(Int a, Int b) { return !(a == b); }
bool operator<(Int a, Int b) { return !a.bad && !b.bad && a.v < b.v; }
bool operator<=(Int a, Int b) { return !a.bad && !b.bad && a.v <= b.v; }
bool operator>=(Int a, Int b) { return b <= a; }

// The parameters after the named ones (FERRY_INT_REST).
struct RestInts {
  const std::vector<int64_t> *ints;
  size_t begin;
  size_t size() const { return ints->size() - begin; }
  Int operator[](Int i) const {
    if (i.bad || i.v < 0 || static_cast<size_t>(i.v) >= size())
      return Int(0);
    return Int((*ints)[begin + static_cast<size_t>(i.v)]);
  }
};

// Helpers the expressions of the kernel records call.
Int productOf(const RestInts &list, Int first, Int count) {
  Int p(1);
  for (Int i = first; i < first + count; i = i + 1)
    p = p * list[i];
  return p;
}
// Whether list[first, first + count) is a permutation of [0, count).
bool isPermutation(const RestInts &list, Int first, Int count) {
  if (count.bad || count.v < 0 || count.v > 64)
    return false;
  bool seen[64] = {};
  for (int64_t d = 0; d < count.v; ++d) {
    Int p = list[first + d];
    if (p.bad || p.v < 0 || p.v >= count.v || seen[p.v])
      return false;
    seen[p.v] = true;
  }
  return true;
}

bool readsIn(Role r) { return r != Role::Out; }
bool writesIn(Role r) { return r != Role::In; }

// Walks one call's parameters and buffers in declaration order.
struct Cursor {
  const std::vector<int64_t> &ints;
  Resolved &resolved;
  size_t restBuffers; // how many a FERRY_BUFFER_REST covers
  size_t nextInt = 0, nextBuffer = 0;

  Int take() {
    size_t i = nextInt++;
    return i < ints.size() ? Int(ints[i]) : Int(0);
  }
  RestInts rest() {
    RestInts r{&ints, std::min(nextInt, ints.size())};
    nextInt = ints.size();
    return r;
  }
  size_t buffer(Role role, ElementType type, Int elements) {
    size_t b = nextBuffer++;
    if (b < resolved.buffers.size())
      resolved.buffers[b] = {readsIn(role), writesIn(role), type,
                             elements.bad ? -1 : elements.v};
    return b;
  }
  void setRole(size_t b, Role role) {
    if (b < resolved.buffers.size()) {
      resolved.buffers[b].reads = readsIn(role);
      resolved.buffers[b].writes = writesIn(role);
    }
  }
  void allowBf16(size_t b) {
    if (b < resolved.buffers.size())
      resolved.buffers[b].bf16 = true;
  }
  void disjoint(size_t written, size_t other) {
    if (written < resolved.buffers.size() && other < resolved.buffers.size())
      resolved.disjoint.push_back({written, other});
  }
};

std::vector<Signature> buildTable() {
  std::vector<Signature> t(kKernelCount);
  auto at = [&](Kernel k) -> Signature & { return t[static_cast<size_t>(k)]; };
  auto addInt = [](Signature &s, const char *name, const char *doc,
                   Parameter::Kind kind) {
    s.ints.push_back({name, doc, kind});
    s.minInts += kind == Parameter::Required;
    s.restInts |= kind == Parameter::Rest;
  };
  auto addBuffer = [](Signature &s, const char *name, Role role,
                      ElementType type, const char *elements, const char *doc,
                      Parameter::Kind kind) {
    s.buffers.push_back({name, doc, role, type, kind, elements});
    s.minBuffers += kind == Parameter::Required;
    s.restBuffers |= kind == Parameter::Rest;
  };
#define FERRY_KERNEL(E, n, d)                                                  \
  at(Kernel::E).name = n;                                                      \
  at(Kernel::E).doc = d;
#define FERRY_INT(E, n, d) addInt(at(Kernel::E), #n, d, Parameter::Required);
#define FERRY_INT_OPTIONAL(E, n, d)                                            \
  addInt(at(Kernel::E), #n, d, Parameter::Optional);
#define FERRY_INT_REST(E, n, d) addInt(at(Kernel::E), #n, d, Parameter::Rest);
#define FERRY_FLOAT(E, n, d)                                                   \
  at(Kernel::E).floats.push_back({#n, d, Parameter::Required});                \
  ++at(Kernel::E).minFloats;
#define FERRY_CHECK(E, condition, message)                                     \
  at(Kernel::E).checks.push_back({#condition, message});
#define FERRY_BUFFER(E, n, role, type, elements, d)                            \
  addBuffer(at(Kernel::E), #n, Role::role, ElementType::type, #elements, d,    \
            Parameter::Required);
#define FERRY_BUFFER_OPTIONAL(E, n, role, type, elements, d)                   \
  addBuffer(at(Kernel::E), #n, Role::role, ElementType::type, #elements, d,    \
            Parameter::Optional);
#define FERRY_BUFFER_REST(E, n, role, type, elements, d)                       \
  addBuffer(at(Kernel::E), #n, Role::role, ElementType::type, #elements, d,    \
            Parameter::Rest);
#define FERRY_ACCESS_IF(E, buffer, condition, role)                            \
  at(Kernel::E).accessRules.push_back({#buffer, #condition, Role::role});
#define FERRY_DISJOINT(E, written, other)                                      \
  at(Kernel::E).disjoint.push_back({#written, #other});
#define FERRY_BF16(E, buffer, condition)                                       \
  for (BufferParameter & p : at(Kernel::E).buffers)                            \
    if (std::string_view(p.name) == #buffer)                                   \
      p.bf16If = #condition;
#include "runtime/executable/KernelRows.inc"
#undef FERRY_KERNEL
#undef FERRY_INT
#undef FERRY_INT_OPTIONAL
#undef FERRY_INT_REST
#undef FERRY_FLOAT
#undef FERRY_CHECK
#undef FERRY_BUFFER
#undef FERRY_BUFFER_OPTIONAL
#undef FERRY_BUFFER_REST
#undef FERRY_ACCESS_IF
#undef FERRY_DISJOINT
#undef FERRY_BF16
  return t;
}

} // namespace

const char *ferry::kernels::kernelName(uint16_t kernel) {
  return kernel < kKernelCount ? signature(static_cast<Kernel>(kernel)).name
                               : "?";
}

std::optional<Kernel> ferry::kernels::kernelByName(std::string_view name) {
  for (uint16_t k = 0; k < kKernelCount; ++k)
    if (name == kernelName(k))
      return static_cast<Kernel>(k);
  return std::nullopt;
}

int64_t ferry::kernels::elementBytes(ElementType type) {
  return type == ElementType::Bytes ? 1 : 4;
}

const char *ferry::kernels::roleName(Role role) {
  switch (role) {
  case Role::In:
    return "read";
  case Role::Out:
    return "write";
  case Role::InOut:
    return "read-write";
  }
  return "?";
}

const Signature &ferry::kernels::signature(Kernel k) {
  static const std::vector<Signature> table = buildTable();
  return table.at(static_cast<size_t>(k));
}

// Each kernel's rows become one case: its integer parameters are bound to
// their names, its checks run, and each buffer gets its role and extent.
Resolved ferry::kernels::resolve(Kernel kernel,
                                 const std::vector<int64_t> &ints,
                                 size_t buffers) {
  Resolved ferry_resolved_;
  ferry_resolved_.buffers.resize(buffers);
  const Signature &sig = signature(kernel);
  size_t rest = buffers > sig.minBuffers ? buffers - sig.minBuffers : 0;
  Cursor ferry_cursor_{ints, ferry_resolved_, rest};
  switch (kernel) {
  default: {
#define FERRY_KERNEL(E, n, d)                                                  \
  }                                                                            \
  break;                                                                       \
  case Kernel::E: {
#define FERRY_INT(E, n, d) [[maybe_unused]] const Int n = ferry_cursor_.take();
#define FERRY_INT_OPTIONAL(E, n, d) FERRY_INT(E, n, d)
#define FERRY_INT_REST(E, n, d)                                                \
  [[maybe_unused]] const RestInts n = ferry_cursor_.rest();
#define FERRY_CHECK(E, condition, message)                                     \
  if (!(condition)) {                                                          \
    ferry_resolved_.failedCheck = message;                                     \
    return ferry_resolved_;                                                    \
  }
#define FERRY_BUFFER(E, n, role, type, elements, d)                            \
  [[maybe_unused]] const size_t n##_buffer =                                   \
      ferry_cursor_.buffer(Role::role, ElementType::type, Int(elements));
#define FERRY_BUFFER_OPTIONAL(E, n, role, type, elements, d)                   \
  FERRY_BUFFER(E, n, role, type, elements, d)
#define FERRY_BUFFER_REST(E, n, role, type, elements, d)                       \
  for (size_t i = 0; i < ferry_cursor_.restBuffers; ++i)                       \
    ferry_cursor_.buffer(Role::role, ElementType::type, Int(elements));
#define FERRY_ACCESS_IF(E, buffer, condition, role)                            \
  if (condition)                                                               \
    ferry_cursor_.setRole(buffer##_buffer, Role::role);
#define FERRY_DISJOINT(E, written, other)                                      \
  ferry_cursor_.disjoint(written##_buffer, other##_buffer);
#define FERRY_BF16(E, buffer, condition)                                       \
  if (condition)                                                               \
    ferry_cursor_.allowBf16(buffer##_buffer);
#include "runtime/executable/KernelRows.inc"
#undef FERRY_KERNEL
#undef FERRY_INT
#undef FERRY_INT_OPTIONAL
#undef FERRY_INT_REST
#undef FERRY_CHECK
#undef FERRY_BUFFER
#undef FERRY_BUFFER_OPTIONAL
#undef FERRY_BUFFER_REST
#undef FERRY_ACCESS_IF
#undef FERRY_DISJOINT
#undef FERRY_BF16
  } break;
  }
  return ferry_resolved_;
}
