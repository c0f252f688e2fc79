// What the kernel records declare, as C++: the kernel enum and names, each
// kernel's signature (its parameters and buffers with their roles), and the
// resolution of one call's buffers against its integer parameters: which
// buffers it reads and writes, how many elements each must hold, which may
// not overlap. The compiler (access for the lowering) and both backends
// (executable validation) use this one table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferry::kernels {

enum class Kernel : uint16_t {
#define FERRY_KERNEL(Enum, name, doc) Enum,
#include "runtime/executable/KernelRows.inc"
#undef FERRY_KERNEL
  Count
};

constexpr uint16_t kKernelCount = static_cast<uint16_t>(Kernel::Count);

// "?" for an index past the table.
const char *kernelName(uint16_t kernel);
inline const char *kernelName(Kernel k) {
  return kernelName(static_cast<uint16_t>(k));
}
std::optional<Kernel> kernelByName(std::string_view name);

enum class Role : uint8_t { In, Out, InOut };
enum class ElementType : uint8_t { F32, I32, Bytes };
int64_t elementBytes(ElementType type);
const char *roleName(Role role);

// A parameter or buffer as declared (for docs and messages).
struct Parameter {
  const char *name, *doc;
  enum Kind : uint8_t { Required, Optional, Rest } kind;
};
struct BufferParameter {
  const char *name, *doc;
  Role role;
  ElementType type;
  Parameter::Kind kind;
  const char *elements; // the expression, as written
  // FERRY_BF16: may be stored as bf16 while this holds (null: never).
  const char *bf16If = nullptr;
};

struct Signature {
  const char *name, *doc;
  std::vector<Parameter> ints, floats;
  std::vector<BufferParameter> buffers;
  // Minimum counts (required entries only) and whether more may follow.
  size_t minBuffers = 0, minInts = 0, minFloats = 0;
  bool restBuffers = false, restInts = false;
  // Conditions as written: (condition, message), and the access rules
  // (buffer, condition, role) and disjoint pairs (written, other) by name.
  std::vector<std::pair<const char *, const char *>> checks;
  struct AccessRule {
    const char *buffer, *condition;
    Role role;
  };
  std::vector<AccessRule> accessRules;
  std::vector<std::pair<const char *, const char *>> disjoint;
};
const Signature &signature(Kernel k);

// One call's buffers, resolved against its integer parameters.
struct BufferUse {
  bool reads = false, writes = false;
  ElementType type = ElementType::F32;
  int64_t elements = 0; // the buffer must hold this many (-1: overflow)
  bool bf16 = false;    // may be stored as bf16 (FERRY_BF16 holds)
};
struct Resolved {
  std::vector<BufferUse> buffers;                  // one per buffer given
  std::vector<std::pair<size_t, size_t>> disjoint; // (written, other)
  const char *failedCheck = nullptr; // the message of a failing check
};
// `ints` are the call's integer parameters (absent optional ones read 0),
// `buffers` how many buffers it was given. Callers check the arity first.
Resolved resolve(Kernel k, const std::vector<int64_t> &ints, size_t buffers);

} // namespace ferry::kernels
