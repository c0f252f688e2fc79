// The CPU backend's replay: affine addresses over loop registers, and the
// checks that turn a damaged program into an error naming the kernel instead
// of an out-of-bounds access.
#include "runtime/cpu/CpuBackend.h"

#include <gtest/gtest.h>

using namespace ferry;

namespace {

// Kernel indices in Kernels.def order.
enum : uint16_t {
#define FERRY_KERNEL(Enum, name, doc) k##Enum,
#include "runtime/executable/Kernels.def"
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
      std::vector<int64_t> ints, std::vector<double> floats = {}) {
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
    instrs.push_back(b.Finish());
  }
  void loop(int64_t count, int32_t body, int32_t reg) {
    fxe::InstrBuilder b(fbb);
    b.add_loop_count(count);
    b.add_loop_body(body);
    b.add_loop_register(reg);
    instrs.push_back(b.Finish());
  }
  const fxe::Executable &finish(int64_t arena, int32_t registers) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> inputs;
    auto program = fxe::CreateProgram(fbb, fbb.CreateString("p"), registers,
                                      fbb.CreateVector(inputs), 0,
                                      fbb.CreateVector(instrs));
    std::vector<flatbuffers::Offset<fxe::Program>> programs = {program};
    std::vector<flatbuffers::Offset<fxe::State>> states;
    auto root = fxe::CreateExecutable(
        fbb, fbb.CreateString("test"), fbb.CreateString(""),
        fbb.CreateString("cpu"), arena, 0, 64, 0, fbb.CreateVector(states),
        fbb.CreateVector(programs));
    fbb.Finish(root);
    return *fxe::GetExecutable(fbb.GetBufferPointer());
  }
};

// The message of the RuntimeError running program "p" throws ("" if none).
std::string runError(const fxe::Executable &exe) {
  CpuBackend backend(exe, std::nullopt);
  try {
    backend.run("p", {});
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(CpuBackend, LoopRegistersAddressEntries) {
  // for r0 in 0..4: fill the 4 floats at byte 16 * r0. The last entry ends
  // at byte 64, which the measured peak shows was reached.
  ProgramBuilder p;
  p.loop(4, 1, 0);
  p.kernel(kFill, {{0, 16, {16}}}, {4}, {2.0});
  const fxe::Executable &exe = p.finish(64, 1);
  CpuBackend backend(exe, std::nullopt);
  backend.run("p", {});
  EXPECT_EQ(backend.peakBytes(), 64u);
}

TEST(CpuBackend, GemmReachingPastItsBufferIsRefused) {
  ProgramBuilder p;
  // C = A B with m = n = k = 4 needs 64 bytes per operand; C is given 32.
  p.kernel(kGemm, {{0, 64, {}}, {64, 64, {}}, {128, 32, {}}},
           {1, 4, 4, 4, 0, 0, 16, 16, 16, 0}, {1.0});
  EXPECT_EQ(runError(p.finish(192, 0)),
            "kernel gemm needs 64 bytes in buffer 2 but was given 32; "
            "the executable is damaged or was edited: recompile it");
}

TEST(CpuBackend, AddressOutsideTheArenaIsRefused) {
  ProgramBuilder p;
  p.loop(3, 1, 0);
  p.kernel(kFill, {{0, 32, {32}}}, {8}, {0.0}); // third entry ends at 96 > 64
  EXPECT_EQ(runError(p.finish(64, 1)),
            "kernel fill addresses bytes [64, 96) outside the 64-byte arena");
}

TEST(CpuBackend, MalformedLoopAndUnknownKernelAreRefusedOnLoad) {
  {
    ProgramBuilder p;
    p.loop(2, 5, 0); // body runs past the end
    const fxe::Executable &exe = p.finish(64, 1);
    EXPECT_THROW(CpuBackend(exe, std::nullopt), RuntimeError);
  }
  {
    ProgramBuilder p;
    p.kernel(999, {{0, 4, {}}}, {1});
    const fxe::Executable &exe = p.finish(64, 0);
    try {
      CpuBackend backend(exe, std::nullopt);
      FAIL() << "expected an error";
    } catch (const RuntimeError &e) {
      EXPECT_NE(std::string(e.what()).find("unknown kernel 999"),
                std::string::npos);
    }
  }
}

TEST(CpuBackend, MemoryLimitIsEnforced) {
  ProgramBuilder p;
  const fxe::Executable &exe = p.finish(1 << 20, 0);
  try {
    CpuBackend backend(exe, uint64_t(1) << 19);
    FAIL() << "expected an error";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "needs 1.00 MiB of device memory (1048576 bytes) but "
                  "execution.device_memory_limit is 512.00 KiB"),
              std::string::npos)
        << e.what();
  }
}
