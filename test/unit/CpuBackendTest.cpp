// The CPU backend's replay: affine addresses over loop registers, and the
// checks that turn a damaged program into an error naming the kernel instead
// of an out-of-bounds access.
#include "runtime/cpu/CpuBackend.h"
#include "runtime/cpu/Bf16Staging.h"
#include "runtime/cpu/CpuKernels.h"

#include "ProgramBuilder.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>

using namespace ferry;
using namespace ferry::test;

namespace {

// runError on the CPU backend.
std::string runError(const fxe::Executable &exe) {
  CpuBackend backend(exe, std::nullopt);
  return test::runError(backend);
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

TEST(CpuBackend, KernelsThatCannotRunInPlaceRefuseAliasedBuffers) {
  // layer_norm_grad writes dx while other threads still read x and dy
  // (its kernel record's RtDisjoint): dx at x's bytes is refused on
  // both backends; separate buffers run.
  auto program = [](int64_t dxOffset) {
    auto p = std::make_unique<ProgramBuilder>();
    // [x 2x4, scale 4, dy 2x4, dx 2x4, dscale 4, dbias 4] floats.
    p->kernel(kLayerNormGrad,
              {{0, 32, {}},
               {32, 16, {}},
               {48, 32, {}},
               {dxOffset, 32, {}},
               {112, 16, {}},
               {128, 16, {}}},
              {2, 4}, {1e-5});
    return p;
  };
  auto aliased = program(0);
  EXPECT_EQ(runError(aliased->finish(144, 0)),
            "kernel layer_norm_grad writes buffer 3 (bytes [0, 32)) "
            "overlapping its buffer 0 (bytes [0, 32)), which it cannot do in "
            "place; the executable is damaged or was edited: recompile it");
  auto separate = program(80);
  EXPECT_EQ(runError(separate->finish(144, 0)), "");
}

// fill_i32 (a splat integer constant) writes its count of int32 values and
// refuses a value that does not fit (the kernel record's check).
TEST(CpuBackend, FillI32WritesIntegersAndRefusesValuesPastInt32) {
  ProgramBuilder p;
  p.deviceIntState("ids", 0, 6);
  p.kernel(kFillI32, {{0, 16, {}}}, {4, -123456789});
  const fxe::Executable &exe = p.finish(64, 0);
  CpuBackend backend(exe, std::nullopt);
  backend.run("p", {});
  const int32_t *ids = backend.i32(backend.state("ids"));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(ids[i], -123456789);
  EXPECT_EQ(ids[4], 0); // past the count: untouched
  ProgramBuilder q;
  q.kernel(kFillI32, {{0, 16, {}}}, {4, int64_t{1} << 40});
  EXPECT_EQ(runError(q.finish(64, 0)),
            "fill_i32: a value outside the int32 range; the executable is "
            "damaged: recompile it");
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
                  "needs 1 MiB of device memory (1048576 bytes) but "
                  "execution.device_memory_limit is 512 KiB"),
              std::string::npos)
        << e.what();
  }
}

// Phased execution's transfers: a remote buffer in host memory is loaded
// into the arena, changed by a kernel, stored back; the copies run on the
// copy thread and `wait` orders them with the kernels.
TEST(CpuBackend, LoadComputeStoreThroughHostMemory) {
  ProgramBuilder p;
  p.hostState("remote", 0, 8);
  // for r0 in 0..2: load remote[4 r0 .. +4] -> arena[0..16), wait,
  //   scale by 3 into arena[16..32), store it back to remote[4 r0], wait.
  p.loop(2, 5, 0);
  p.kernel(kLoad, {{0, 16, {16}}, {0, 16, {}}}, {16, 1});
  p.kernel(kWait, {}, {1});
  p.kernel(kScale, {{0, 16, {}}, {16, 16, {}}}, {4}, {3.0});
  p.kernel(kStore, {{16, 16, {}}, {0, 16, {16}}}, {16, 2});
  p.kernel(kWait, {}, {2});
  const fxe::Executable &exe = p.finish(32, 1);
  CpuBackend backend(exe, std::nullopt);
  ASSERT_EQ(backend.hostBytes(), 32u);
  float *remote = backend.f32(backend.state("remote"));
  for (int i = 0; i < 8; ++i)
    remote[i] = 0.5f + static_cast<float>(i); // on the host, not the arena
  backend.run("p", {});
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(remote[i], 3.0f * (0.5f + static_cast<float>(i))) << i;
  EXPECT_EQ(backend.hostLinkBytes(), 64u); // 2 x (16 in + 16 out)
  EXPECT_EQ(backend.peakBytes(), 32u);
}

// A prefetch alternates halves on the parity register and skips the load
// past the last iteration (its guard); the data arrives in order.
TEST(CpuBackend, GuardedPrefetchIntoParityHalves) {
  ProgramBuilder p;
  p.hostState("rows", 0, 12); // 3 rows of 4 floats
  p.hostState("sums", 64, 3);
  // Before the loop: row 0 into half 0 (arena [0, 16)).
  p.kernel(kLoad, {{0, 16, {}}, {0, 16, {}}}, {16, 1});
  // for r0 in 0..3 (parity r1): wait; prefetch row r0+1 into the other half
  // (16 - 16 r1) if r0 + 1 < 3; reduce this half into arena[32 + 4 r0].
  p.loop(3, 3, 0, 1);
  p.kernel(kWait, {}, {1});
  {
    // ints: bytes, event, guard = r0 + 1, limit 3.
    std::vector<flatbuffers::Offset<fxe::Ref>> refs = {
        fxe::CreateRef(p.fbb, p.affine(16, {16}), 16),
        fxe::CreateRef(p.fbb, p.affine(16, {0, -16}), 16)};
    std::vector<flatbuffers::Offset<fxe::Affine>> ints = {
        p.affine(16), p.affine(1), p.affine(1, {1}), p.affine(3)};
    auto r = p.fbb.CreateVector(refs);
    auto i = p.fbb.CreateVector(ints);
    fxe::InstrBuilder b(p.fbb);
    b.add_kernel(kLoad);
    b.add_buffers(r);
    b.add_ints(i);
    p.instrs.push_back(b.Finish());
  }
  // reduce kind 0 (sum) over 4 elements of this half (offset 16 r1).
  p.kernel(kReduce, {{0, 16, {0, 16}}, {32, 4, {4}}}, {0, 1, 4, 1});
  p.kernel(kStore, {{32, 12, {}}, {64, 12, {}}}, {12, 2});
  p.kernel(kWait, {}, {2});
  const fxe::Executable &exe = p.finish(48, 2);
  CpuBackend backend(exe, std::nullopt);
  float *rows = backend.f32(backend.state("rows"));
  for (int i = 0; i < 12; ++i)
    rows[i] = static_cast<float>(i);
  backend.run("p", {});
  float *sums = backend.f32(backend.state("sums"));
  EXPECT_EQ(sums[0], 0.0f + 1 + 2 + 3);
  EXPECT_EQ(sums[1], 4.0f + 5 + 6 + 7);
  EXPECT_EQ(sums[2], 8.0f + 9 + 10 + 11);
  // 3 rows loaded (the 4th prefetch was guarded off) + 12 bytes stored.
  EXPECT_EQ(backend.hostLinkBytes(), 3u * 16 + 12);
}

TEST(CpuBackend, TransferOutsideHostMemoryIsRefused) {
  ProgramBuilder p;
  p.hostState("remote", 0, 4);
  p.kernel(kLoad, {{8, 16, {}}, {0, 16, {}}}, {16, 1}); // ends at 24 > 16
  std::string error = runError(p.finish(16, 0));
  EXPECT_NE(error.find("load of 16 bytes between host [8, +16) and device "
                       "[0, +16) is outside the 16-byte host memory"),
            std::string::npos)
      << error;
}

// The collective kernels on one process: an all-reduce (in place, or into
// another buffer) and a reduce-scatter / all-gather over 1 replica are
// copies, and a part of a group of one is all of it; a damaged call (an
// all-reduce whose input and output partly overlap, a padded
// reduce-scatter without its workspace) is refused by name before any
// communication, and a replica count other than the group's (a part's too)
// says how to start the run.
TEST(CpuBackend, CollectivesOnOneProcess) {
  const auto allReduce = kAllReduce;
  const auto reduceScatter = kReduceScatter;
  const auto allGather = kAllGather;
  {
    ProgramBuilder p;
    // One f32 state over the whole arena, to read the results.
    std::vector<int64_t> shape = {64};
    p.states.push_back(fxe::CreateState(
        p.fbb, p.fbb.CreateString("all"), fxe::Role_Stash, 0, 256,
        p.fbb.CreateVector(shape), fxe::DType_F32, fxe::Init_Zeros, 0.0,
        p.fbb.CreateString("all"), false, false, 0, false));
    p.stateBytes = 256;
    const auto fill = kFill;
    p.kernel(fill, {{0, 16, {}}}, {4}, {2.5});
    p.kernel(allReduce, {{0, 16, {}}, {0, 16, {}}}, {4, 1});
    p.kernel(allReduce, {{0, 16, {}}, {64, 16, {}}}, {4, 1});
    p.kernel(reduceScatter, {{64, 16, {}}, {128, 16, {}}}, {4, 4, 1});
    p.kernel(allGather, {{128, 16, {}}, {192, 16, {}}}, {4, 4, 1});
    const auto partOfGroup = kPartOfGroup;
    p.kernel(partOfGroup, {{192, 16, {}}, {208, 16, {}}}, {4, 1});
    const fxe::Executable &exe = p.finish(256, 0);
    CpuBackend backend(exe, std::nullopt);
    backend.run("p", {});
    std::vector<float> got(64);
    backend.read(backend.state("all"), 0, got.data(), 256);
    for (int64_t at : {0, 16, 32, 48, 52})
      for (int64_t i = 0; i < 4; ++i)
        EXPECT_EQ(got[at + i], 2.5f) << "float " << at + i;
    EXPECT_EQ(backend.collectiveBytes(), 0u); // one replica sends nothing
  }
  {
    ProgramBuilder p;
    p.kernel(allReduce, {{0, 16, {}}, {8, 16, {}}}, {4, 1});
    EXPECT_EQ(runError(p.finish(64, 0)),
              "all_reduce: its input and output overlap without being the "
              "same range; the executable is damaged: recompile it");
  }
  {
    ProgramBuilder p;
    p.kernel(reduceScatter, {{0, 12, {}}, {64, 8, {}}}, {3, 2, 2});
    EXPECT_EQ(runError(p.finish(128, 0)),
              "reduce_scatter of 3 elements in shards of 2 over 2 replicas "
              "needs its padding workspace, which the call lacks; the "
              "executable is damaged: recompile it");
  }
  {
    ProgramBuilder p;
    p.kernel(allReduce, {{0, 16, {}}, {0, 16, {}}}, {4, 2});
    EXPECT_EQ(runError(p.finish(64, 0)),
              "the executable was compiled for execution.data_parallel 2, "
              "but this run has 1 process; start it with `mpirun -np 2` or "
              "recompile with --set execution.data_parallel=1");
  }
  {
    ProgramBuilder p;
    p.kernel(kPartOfGroup, {{0, 32, {}}, {32, 16, {}}}, {4, 2});
    EXPECT_EQ(runError(p.finish(64, 0)),
              "the executable was compiled for execution.data_parallel 2, "
              "but this run has 1 process; start it with `mpirun -np 2` or "
              "recompile with --set execution.data_parallel=1");
  }
}

// bf16 words: round to nearest, ties to even; NaN to the canonical quiet
// NaN the GPU's conversion gives (0x7fff); infinities and signs kept.
TEST(Bf16Storage, WordsRoundToNearestEven) {
  auto word = [](float f) {
    uint16_t w;
    cpu::toBf16Words(&f, &w, 1);
    return w;
  };
  EXPECT_EQ(word(1.0f), 0x3f80);
  EXPECT_EQ(word(1.0f + 0x1p-8f), 0x3f80);     // a tie: to the even 1.0
  EXPECT_EQ(word(1.0f + 3 * 0x1p-8f), 0x3f82); // a tie: to the even above
  EXPECT_EQ(word(1.0f + 0x1p-8f + 0x1p-12f), 0x3f81); // above half: up
  EXPECT_EQ(word(-2.5f), 0xc020);
  EXPECT_EQ(word(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(word(std::numeric_limits<float>::quiet_NaN()), 0x7fff);
  EXPECT_EQ(word(-std::numeric_limits<float>::quiet_NaN()), 0x7fff);
  uint16_t w = 0xbf40;
  float back;
  cpu::fromBf16Words(&w, &back, 1);
  EXPECT_EQ(back, -0.75f);
}

// A call with bf16 buffers computes in fp32 on their values and rounds what
// it writes: gelu from a bf16 x into a bf16 y equals rounding the fp32 gelu
// of x's values; accumulate into a bf16 accumulator in place reads it first.
TEST(Bf16Storage, CpuKernelsReadAndRoundBf16Buffers) {
  const int64_t n = 11; // not a multiple of any vector width
  ProgramBuilder p;
  p.deviceBf16State("x", 0, n);
  p.deviceBf16State("y", 64, n);
  p.kernel(kGelu, {{0, 2 * n, {}}, {64, 2 * n, {}}}, {n}, {}, 3);
  p.kernel(kAccumulate, {{0, 2 * n, {}}, {64, 2 * n, {}}}, {n}, {}, 3);
  const fxe::Executable &exe = p.finish(128, 0);
  CpuBackend backend(exe, std::nullopt);
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = 0.37f * static_cast<float>(i) - 1.9f;
  std::vector<uint16_t> xw(n), yw(n);
  cpu::toBf16Words(x.data(), xw.data(), n);
  backend.write(exe.states()->Get(0), 0, xw.data(), 2 * n);
  backend.run("p", {});
  backend.read(exe.states()->Get(1), 0, yw.data(), 2 * n);
  std::vector<float> xv(n), g(n), want(n);
  cpu::fromBf16Words(xw.data(), xv.data(), n);
  cpu::gelu(xv.data(), g.data(), n);
  std::vector<uint16_t> gw(n), ww(n);
  cpu::toBf16Words(g.data(), gw.data(), n);
  std::vector<float> gv(n);
  cpu::fromBf16Words(gw.data(), gv.data(), n);
  for (int64_t i = 0; i < n; ++i)
    want[i] = gv[i] + xv[i];
  cpu::toBf16Words(want.data(), ww.data(), n);
  EXPECT_EQ(yw, ww);
}

// A bf16 mask on a buffer its kernel record has no RtBf16 rule for is a
// damaged executable, and so is a bf16 buffer sized for fp32's half.
TEST(Bf16Storage, MasksTheKernelTableForbidsAreRefused) {
  ProgramBuilder p;
  p.kernel(kFill, {{0, 16, {}}}, {8}, {1.0}, 1);
  EXPECT_NE(runError(p.finish(64, 0)).find("which it cannot take there"),
            std::string::npos);
  ProgramBuilder q;
  q.kernel(kGelu, {{0, 32, {}}, {32, 8, {}}}, {8}, {}, 2);
  EXPECT_NE(runError(q.finish(64, 0)).find("needs 16 bytes in buffer 1"),
            std::string::npos);
}
