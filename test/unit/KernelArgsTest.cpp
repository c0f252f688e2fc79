// The generated typed kernel arguments (runtime/executable/KernelArgs.h,
// from dialects/rt/kernels/*.td): each field decoded from its position,
// optional integers and buffers absent or present, rest lists sized by what
// the others leave, per-step integers with their index, and the dispatch
// reaching run() for every kernel but the transfers (`backendOwned`).
#include "runtime/executable/KernelArgs.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace ferry::kernels;

namespace {

// A call as a backend presents it: integers, floats, buffer addresses and a
// bf16 mask.
struct FakeCall {
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<char *> bufs;
  uint64_t bf16Mask = 0;

  int64_t integer(size_t k) const { return k < ints.size() ? ints[k] : 0; }
  StepInt stepInteger(size_t k) const {
    return {integer(k), static_cast<uint32_t>(k)};
  }
  IntList integers(size_t first) const {
    return {ints.data() + first, ints.size() - first};
  }
  size_t integerCount() const { return ints.size(); }
  double real(size_t k) const { return floats.at(k); }
  char *buffer(size_t b) const { return b < bufs.size() ? bufs[b] : nullptr; }
  char *const *buffers() const { return bufs.data(); }
  size_t bufferCount() const { return bufs.size(); }
  bool bf16(size_t b) const { return (bf16Mask >> b & 1) != 0; }
  int64_t bufferBytes(size_t b) const {
    return b < bufs.size() ? 100 + static_cast<int64_t>(b) : 0;
  }
};

char storage[64];
char *at(int i) { return storage + i; }

TEST(KernelArgs, GemmDecodesEveryFieldAndItsOptionalPrecision) {
  FakeCall call{
      {2, 3, 4, 5, 1, 0, 12, 20, 12, 1}, {0.5}, {at(0), at(1), at(2)}, 0b100};
  GemmArgs a = decodeGemm(call);
  EXPECT_EQ(a.batch, 2);
  EXPECT_EQ(a.m, 3);
  EXPECT_EQ(a.n, 4);
  EXPECT_EQ(a.k, 5);
  EXPECT_EQ(a.trans_a, 1);
  EXPECT_EQ(a.trans_b, 0);
  EXPECT_EQ(a.stride_a, 12);
  EXPECT_EQ(a.stride_b, 20);
  EXPECT_EQ(a.accumulate, 1);
  EXPECT_FALSE(a.has_precision);
  EXPECT_EQ(a.precision, 0);
  EXPECT_EQ(a.alpha, 0.5);
  EXPECT_EQ(reinterpret_cast<const char *>(a.a.data), at(0));
  EXPECT_EQ(reinterpret_cast<const char *>(a.b.data), at(1));
  EXPECT_EQ(reinterpret_cast<char *>(a.c.data), at(2));
  EXPECT_FALSE(a.a.bf16);
  EXPECT_TRUE(a.c.bf16);
  EXPECT_FALSE(a.workspace); // optional, not given
  EXPECT_EQ(a.c.bytes, 102); // the call's planned bytes of buffer 2
  EXPECT_EQ(a.workspace.bytes, 0);

  call.ints.push_back(1); // precision bf16
  call.bufs.push_back(at(3));
  a = decodeGemm(call);
  EXPECT_TRUE(a.has_precision);
  EXPECT_EQ(a.precision, 1);
  EXPECT_EQ(reinterpret_cast<char *>(a.workspace.data), at(3));
  EXPECT_EQ(a.workspace.bytes, 103);
}

TEST(KernelArgs, RestListsTakeWhatTheOtherOperandsLeave) {
  // global_norm: counts (rest ints), then tensors (rest buffers) before out.
  FakeCall call{{7, 8, 9}, {}, {at(0), at(1), at(2), at(3)}, 0};
  GlobalNormArgs a = decodeGlobalNorm(call);
  ASSERT_EQ(a.counts.size, 3u);
  EXPECT_EQ(a.counts[2], 9);
  ASSERT_EQ(a.tensors.size, 3u);
  EXPECT_EQ(reinterpret_cast<const char *>(a.tensors[2]), at(2));
  EXPECT_EQ(reinterpret_cast<char *>(a.out.data), at(3));
}

TEST(KernelArgs, PerStepIntegersCarryTheirIndex) {
  // dropout: count, per_sample, seed, purpose, layer, sample_offset.
  FakeCall call{{64, 16, 1, 2, 3, 40}, {0.1}, {at(0), at(8)}, 0};
  DropoutArgs a = decodeDropout(call);
  EXPECT_EQ(a.sample_offset.value, 40);
  EXPECT_EQ(a.sample_offset.index, 5u);
  EXPECT_FALSE(a.has_key_layout);
  EXPECT_FALSE(a.dropout_keys);
  EXPECT_EQ(a.p, 0.1);
}

// Records which typed body ran: copy, fill and scale by name, any other
// kernel as "other".
struct RecordingContext {
  std::vector<std::string> ran;
};
template <class Args> void run(RecordingContext &cx, const Args &) {
  cx.ran.push_back("other");
}
void run(RecordingContext &cx, const CopyArgs &a) {
  cx.ran.push_back("copy " + std::to_string(a.bytes));
}
void run(RecordingContext &cx, const FillArgs &a) {
  cx.ran.push_back("fill " + std::to_string(a.count));
}
void run(RecordingContext &cx, const ScaleArgs &a) {
  cx.ran.push_back("scale " + std::to_string(a.count));
}

TEST(KernelArgs, DispatchRunsEveryKernelButTheTransfers) {
  RecordingContext cx;
  EXPECT_TRUE(
      dispatchKernel(cx, Kernel::Copy, FakeCall{{12}, {}, {at(0), at(16)}, 0}));
  EXPECT_TRUE(
      dispatchKernel(cx, Kernel::Fill, FakeCall{{4}, {1.5}, {at(0)}, 0}));
  EXPECT_TRUE(dispatchKernel(cx, Kernel::Scale,
                             FakeCall{{4}, {2.0}, {at(0), at(16)}, 0}));
  // load is carried out by the backend itself: it has no run() to dispatch.
  EXPECT_TRUE(backendOwned(Kernel::Load));
  EXPECT_FALSE(backendOwned(Kernel::Copy));
  EXPECT_FALSE(dispatchKernel(cx, Kernel::Load,
                              FakeCall{{16, 3}, {}, {at(0), at(16)}, 0}));
  EXPECT_EQ(cx.ran,
            (std::vector<std::string>{"copy 12", "fill 4", "scale 4"}));
}

TEST(KernelArgs, TransfersDecodeTheirGuard) {
  // load: bytes, event, guard, limit (a prefetch's, optional).
  LoadArgs a = decodeLoad(FakeCall{{256, 7}, {}, {at(0), at(8)}, 0});
  EXPECT_EQ(a.bytes, 256);
  EXPECT_EQ(a.event, 7);
  EXPECT_FALSE(a.has_limit);
  a = decodeLoad(FakeCall{{256, 7, 3, 4}, {}, {at(0), at(8)}, 0});
  EXPECT_TRUE(a.has_guard);
  EXPECT_EQ(a.guard, 3);
  EXPECT_EQ(a.limit, 4);
}

} // namespace
