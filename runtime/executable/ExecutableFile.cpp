// Reading and writing .fxe files: header, checksum, FlatBuffer verification.
#include "runtime/executable/ExecutableFile.h"

#include "runtime/AtomicFile.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>
#include <fstream>
#include <iterator>

using namespace ferry;

namespace {
constexpr char kMagic[8] = {'F', 'E', 'R', 'R', 'Y', 'F', 'X', 'E'};
constexpr size_t kHeaderBytes = 32;

// FlatBuffers' verifier accepts absent fields; the runtime needs these.
void requireFields(const fxe::Executable &exe, const std::string &path) {
  auto missing = [&](const std::string &what) {
    return ExecutableError(fmt::format(
        "'{}' has no {}; it was not written by ferry compile: recompile it",
        path, what));
  };
  if (!exe.compiler_version() || !exe.config_yaml() || !exe.backend())
    throw missing("compiler version, config or backend");
  if (!exe.states() || !exe.programs())
    throw missing("states or programs");
  // FlatBuffers' verifier checks a vector's length field but not that its
  // 8-byte elements are 8-byte aligned, which ferry's writer always makes
  // them; a damaged file could make every later read a misaligned load.
  auto misaligned = [](const auto *vector) {
    return vector && vector->size() > 0 &&
           reinterpret_cast<uintptr_t>(vector->data()) % alignof(int64_t) != 0;
  };
  auto damaged = [&](const std::string &what) {
    return ExecutableError(fmt::format(
        "'{}' is damaged: {} is not 8-byte aligned, as ferry compile writes "
        "it; recompile it",
        path, what));
  };
  auto checkAffine = [&](const fxe::Affine *a) {
    if (a && misaligned(a->coeffs()))
      throw damaged("an instruction's address or parameter");
  };
  for (const fxe::State *s : *exe.states()) {
    if (!s->name() || !s->shape() || !s->hf_name())
      throw missing("name, shape or HF name for a state");
    if (misaligned(s->shape()))
      throw damaged("the shape of state " + s->name()->str());
  }
  for (const fxe::Program *p : *exe.programs()) {
    if (!p->name() || !p->instrs() || !p->inputs())
      throw missing("name, inputs or instructions for a program");
    for (const fxe::Instr *in : *p->instrs()) {
      if (in->loop_count() <= 0 && (!in->buffers() || !in->ints()))
        throw missing("buffers or parameters for a kernel call");
      if (misaligned(in->floats()))
        throw damaged("an instruction's float parameters");
      if (in->ints())
        for (const fxe::Affine *a : *in->ints())
          checkAffine(a);
      if (in->buffers())
        for (const fxe::Ref *r : *in->buffers())
          checkAffine(r ? r->offset() : nullptr);
    }
  }
}

template <typename T> void put(std::string &out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T)); // x86-64 and aarch64: little-endian
  out.append(bytes, sizeof(T));
}
template <typename T> T get(const std::string &in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  return v;
}
} // namespace

void ferry::writeExecutableFile(const std::string &path,
                                const std::vector<uint8_t> &payload) {
  std::string out;
  out.reserve(kHeaderBytes + payload.size());
  out.append(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kExecutableFormatVersion);
  put<uint32_t>(out, 0);
  put<uint64_t>(out, payload.size());
  put<uint64_t>(out, XXH64(payload.data(), payload.size(), 0));
  out.append(reinterpret_cast<const char *>(payload.data()), payload.size());
  if (std::optional<std::string> error = writeFileAtomically(path, out))
    throw ExecutableError(*error);
}

ExecutableFile ExecutableFile::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ExecutableError(fmt::format("cannot open executable '{}': {}", path,
                                      std::strerror(errno)));
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (data.size() < kHeaderBytes || std::memcmp(data.data(), kMagic, 8) != 0)
    throw ExecutableError(fmt::format(
        "'{}' is not a ferry executable (no FERRYFXE header); compile one "
        "with `ferry compile CONFIG -o FILE.fxe`",
        path));
  auto version = get<uint32_t>(data, 8);
  if (version != kExecutableFormatVersion)
    throw ExecutableError(fmt::format(
        "'{}' has executable format version {}, this ferry reads version "
        "{}; recompile it with this ferry (`ferry compile CONFIG -o {}`)",
        path, version, kExecutableFormatVersion, path));
  auto size = get<uint64_t>(data, 16);
  if (data.size() - kHeaderBytes != size)
    throw ExecutableError(fmt::format(
        "'{}' is truncated or has trailing bytes: the header says {} payload "
        "bytes, the file has {}; recompile it",
        path, size, data.size() - kHeaderBytes));
  auto expected = get<uint64_t>(data, 24);
  uint64_t found = XXH64(data.data() + kHeaderBytes, size, 0);
  if (found != expected)
    throw ExecutableError(fmt::format(
        "'{}' is corrupted: checksum {:016x} does not match the header's "
        "{:016x}; recompile it",
        path, found, expected));
  ExecutableFile file;
  file.path_ = path;
  file.checksum_ = found;
  file.payload_.assign(data.begin() + kHeaderBytes, data.end());
  flatbuffers::Verifier verifier(file.payload_.data(), file.payload_.size());
  if (!fxe::VerifyExecutableBuffer(verifier))
    throw ExecutableError(fmt::format(
        "'{}' passed its checksum but its program does not verify; it was "
        "written by an incompatible ferry: recompile it",
        path));
  requireFields(file.root(), path);
  return file;
}

ExecutableFile ExecutableFile::fromPayload(std::vector<uint8_t> payload,
                                           const std::string &name) {
  ExecutableFile file;
  file.path_ = name;
  file.checksum_ = XXH64(payload.data(), payload.size(), 0);
  file.payload_ = std::move(payload);
  flatbuffers::Verifier verifier(file.payload_.data(), file.payload_.size());
  if (!fxe::VerifyExecutableBuffer(verifier))
    throw ExecutableError("the executable compiled for " + name +
                          " does not verify; this is a bug in ferry");
  requireFields(file.root(), name);
  return file;
}
