// Hand-built executables for the backend tests (CpuBackendTest.cpp,
// CudaBackendTest.cpp): kernel calls on arena byte ranges, loops, states,
// one program "p", without the compiler; and the error running it gives.
#pragma once

#include "runtime/backend/Backend.h"
#include "runtime/executable/ExecutableFile.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

namespace ferry::test {

// Kernel indices in kernel-record order.
enum : uint16_t {
#define FERRY_KERNEL(Enum, name, doc) k##Enum,
#include "runtime/executable/KernelRows.inc"
#undef FERRY_KERNEL
};

struct ProgramBuilder {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<fxe::Instr>> instrs;

  flatbuffers::Offset<fxe::Affine> affine(int64_t c,
                                          std::vector<int64_t> coeffs = {}) {
    return fxe::CreateAffine(fbb, c, fbb.CreateVector(coeffs));
  }
  void kernel(
      uint16_t k,
      std::vector<std::tuple<int64_t, int64_t, std::vector<int64_t>>> buffers,
      std::vector<int64_t> ints, std::vector<double> floats = {},
      uint64_t bf16 = 0) {
    std::vector<flatbuffers::Offset<fxe::Ref>> refs;
    for (auto &[offset, bytes, coeffs] : buffers)
      refs.push_back(fxe::CreateRef(fbb, affine(offset, coeffs), bytes));
    std::vector<flatbuffers::Offset<fxe::Affine>> is;
    for (int64_t v : ints)
      is.push_back(affine(v));
    auto r = fbb.CreateVector(refs);
    auto i = fbb.CreateVector(is);
    auto f = fbb.CreateVector(floats);
    fxe::InstrBuilder b(fbb);
    b.add_kernel(k);
    b.add_buffers(r);
    b.add_ints(i);
    b.add_floats(f);
    b.add_bf16_buffers(bf16);
    instrs.push_back(b.Finish());
  }
  void loop(int64_t count, int32_t body, int32_t reg, int32_t parity = -1) {
    fxe::InstrBuilder b(fbb);
    b.add_loop_count(count);
    b.add_loop_body(body);
    b.add_loop_register(reg);
    b.add_loop_parity_register(parity);
    instrs.push_back(b.Finish());
  }
  // A remote buffer of `floats` f32 at `offset` in host memory.
  std::vector<flatbuffers::Offset<fxe::State>> states;
  int64_t hostBytes = 0;
  void hostState(const std::string &name, int64_t offset, int64_t floats) {
    std::vector<int64_t> shape = {floats};
    states.push_back(fxe::CreateState(
        fbb, fbb.CreateString(name), fxe::Role_Stash, offset, floats * 4,
        fbb.CreateVector(shape), fxe::DType_F32, fxe::Init_Zeros, 0.0,
        fbb.CreateString(name), false, false, 0, /*host=*/true));
    hostBytes = std::max(hostBytes, offset + floats * 4);
  }
  // An i32 device state of `count` elements at `offset` in the arena.
  void deviceIntState(const std::string &name, int64_t offset, int64_t count) {
    std::vector<int64_t> shape = {count};
    states.push_back(fxe::CreateState(
        fbb, fbb.CreateString(name), fxe::Role_Input, offset, count * 4,
        fbb.CreateVector(shape), fxe::DType_I32, fxe::Init_Zeros, 0.0,
        fbb.CreateString(name), false, false, 0, /*host=*/false));
    stateBytes = std::max(stateBytes, offset + count * 4);
  }
  // A bf16 device state of `count` elements at `offset` in the arena.
  void deviceBf16State(const std::string &name, int64_t offset, int64_t count) {
    std::vector<int64_t> shape = {count};
    states.push_back(fxe::CreateState(
        fbb, fbb.CreateString(name), fxe::Role_Stash, offset, count * 2,
        fbb.CreateVector(shape), fxe::DType_BF16, fxe::Init_Zeros, 0.0,
        fbb.CreateString(name), false, false, 0, /*host=*/false));
    stateBytes = std::max(stateBytes, offset + count * 2);
  }
  int64_t stateBytes = 0;
  const fxe::Executable &finish(int64_t arena, int32_t registers,
                                const char *backend = "cpu") {
    std::vector<flatbuffers::Offset<flatbuffers::String>> inputs;
    auto program = fxe::CreateProgram(fbb, fbb.CreateString("p"), registers,
                                      fbb.CreateVector(inputs), 0,
                                      fbb.CreateVector(instrs));
    std::vector<flatbuffers::Offset<fxe::Program>> programs = {program};
    auto root = fxe::CreateExecutable(
        fbb, fbb.CreateString("test"), fbb.CreateString(""),
        fbb.CreateString(backend), arena, stateBytes, 64, 0,
        fbb.CreateVector(states), fbb.CreateVector(programs), hostBytes);
    fbb.Finish(root);
    return *fxe::GetExecutable(fbb.GetBufferPointer());
  }
};

// The message of the RuntimeError running program "p" throws ("" if none).
inline std::string runError(Backend &backend) {
  try {
    backend.run("p", {});
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

} // namespace ferry::test
