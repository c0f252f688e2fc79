// The kernel calling convention as the kernel records declare it: signatures,
// access resolved against parameters, extents, checks and disjoint pairs.
#include "runtime/executable/KernelTable.h"

#include <gtest/gtest.h>

#include <iterator>

using namespace ferry::kernels;

namespace {

std::vector<int64_t> gemmInts(int64_t accumulate) {
  // batch, m, n, k, transA, transB, strideA, strideB, strideC, accumulate
  return {2, 3, 4, 5, 0, 0, 100, 200, 300, accumulate};
}

TEST(KernelTable, NamesRoundTripAndUnknownNamesAreRefused) {
  for (uint16_t k = 0; k < kKernelCount; ++k) {
    std::optional<Kernel> back = kernelByName(kernelName(k));
    ASSERT_TRUE(back.has_value()) << kernelName(k);
    EXPECT_EQ(static_cast<uint16_t>(*back), k);
  }
  EXPECT_FALSE(kernelByName("conv2d").has_value());
  EXPECT_STREQ(kernelName(kKernelCount), "?");
}

TEST(KernelTable, EveryKernelIsDocumented) {
  for (uint16_t k = 0; k < kKernelCount; ++k) {
    const Signature &s = signature(static_cast<Kernel>(k));
    EXPECT_GT(std::string(s.doc).size(), 8u) << s.name;
    for (const BufferParameter &b : s.buffers)
      EXPECT_GT(std::string(b.doc).size(), 2u) << s.name << " " << b.name;
    for (const Parameter &p : s.ints)
      EXPECT_GT(std::string(p.doc).size(), 2u) << s.name << " " << p.name;
  }
}

// The append-only order the executable format depends on: every kernel's
// index, as the records' ids give them (a record that moves fails here).
TEST(KernelTable, IndicesOfTheFormatAreStable) {
  const char *const inFormatOrder[] = {"copy",
                                       "fill",
                                       "gemm",
                                       "iota",
                                       "attention_mask",
                                       "embedding",
                                       "embedding_grad",
                                       "gather_positions",
                                       "gather_positions_grad",
                                       "take",
                                       "take_grad",
                                       "bias_add",
                                       "add",
                                       "sub",
                                       "mul",
                                       "div",
                                       "accumulate",
                                       "scale",
                                       "gelu",
                                       "gelu_grad",
                                       "tanh",
                                       "tanh_grad",
                                       "layer_norm",
                                       "layer_norm_grad",
                                       "softmax",
                                       "softmax_grad",
                                       "dropout",
                                       "transpose",
                                       "reduce",
                                       "broadcast",
                                       "softmax_cross_entropy",
                                       "softmax_cross_entropy_grad",
                                       "argmax_correct",
                                       "global_norm",
                                       "learning_rate",
                                       "optimizer_update",
                                       "load",
                                       "store",
                                       "wait",
                                       "phase_begin",
                                       "phase_end",
                                       "softmax_dropout",
                                       "dropout_softmax_grad",
                                       "gemm_epilogue",
                                       "residual_layer_norm",
                                       "fill_i32",
                                       "all_reduce",
                                       "reduce_scatter",
                                       "all_gather",
                                       "lamb_moments",
                                       "lamb_apply",
                                       "attention",
                                       "attention_grad",
                                       "class_max",
                                       "class_stats",
                                       "class_stats_grad",
                                       "cross_entropy_of_stats",
                                       "cross_entropy_of_stats_grad",
                                       "class_argmax",
                                       "index_correct",
                                       "part_of_group"};
  ASSERT_EQ(std::size(inFormatOrder), static_cast<size_t>(kKernelCount));
  for (uint16_t k = 0; k < kKernelCount; ++k)
    EXPECT_STREQ(kernelName(k), inFormatOrder[k]) << "index " << k;
  EXPECT_EQ(static_cast<int>(Kernel::Gemm), 2);
  EXPECT_EQ(static_cast<int>(Kernel::ResidualLayerNorm), 44);
}

TEST(KernelTable, ArityCountsRequiredOperandsOnly) {
  const Signature &gemm = signature(Kernel::Gemm);
  EXPECT_EQ(gemm.minBuffers, 3u); // the workspace is optional
  EXPECT_EQ(gemm.minInts, 10u);   // precision is optional
  EXPECT_EQ(gemm.minFloats, 1u);
  const Signature &norm = signature(Kernel::GlobalNorm);
  EXPECT_EQ(norm.minBuffers, 1u);
  EXPECT_TRUE(norm.restBuffers);
  EXPECT_TRUE(norm.restInts);
}

TEST(KernelTable, GemmReadsItsResultOnlyWhenAccumulating) {
  Resolved overwrite = resolve(Kernel::Gemm, gemmInts(0), 4);
  EXPECT_TRUE(overwrite.buffers[0].reads);
  EXPECT_FALSE(overwrite.buffers[0].writes);
  EXPECT_FALSE(overwrite.buffers[2].reads);
  EXPECT_TRUE(overwrite.buffers[2].writes);
  EXPECT_TRUE(overwrite.buffers[3].writes); // workspace
  EXPECT_FALSE(overwrite.buffers[3].reads);
  Resolved accumulate = resolve(Kernel::Gemm, gemmInts(1), 3);
  EXPECT_TRUE(accumulate.buffers[2].reads);
  EXPECT_TRUE(accumulate.buffers[2].writes);
  // Extents: (batch - 1) * stride + the matrix.
  EXPECT_EQ(overwrite.buffers[0].elements, 100 + 3 * 5);
  EXPECT_EQ(overwrite.buffers[1].elements, 200 + 5 * 4);
  EXPECT_EQ(overwrite.buffers[2].elements, 300 + 3 * 4);
  ASSERT_EQ(overwrite.disjoint.size(), 2u);
  EXPECT_EQ(overwrite.disjoint[0], (std::pair<size_t, size_t>{2, 0}));
}

TEST(KernelTable, GemmEpilogueVectorIsWrittenForABiasGradient) {
  std::vector<int64_t> ints = gemmInts(0);
  ints[0] = 1;       // batch 1
  ints[4] = 1;       // transA
  ints.push_back(0); // precision
  ints.push_back(1); // epilogue: bias
  Resolved bias = resolve(Kernel::GemmEpilogue, ints, 4);
  EXPECT_TRUE(bias.buffers[3].reads);
  EXPECT_FALSE(bias.buffers[3].writes);
  EXPECT_EQ(bias.buffers[3].elements, 4); // n
  ints.back() = 2;                        // bias gradient
  Resolved grad = resolve(Kernel::GemmEpilogue, ints, 4);
  EXPECT_FALSE(grad.buffers[3].reads);
  EXPECT_TRUE(grad.buffers[3].writes);
  EXPECT_EQ(grad.buffers[3].elements, 3); // m
  EXPECT_EQ(grad.failedCheck, nullptr);
  ints[4] = 0; // a bias gradient needs a transposed A
  EXPECT_STREQ(resolve(Kernel::GemmEpilogue, ints, 4).failedCheck,
               "a bias gradient needs one transposed A (batch 1)");
}

TEST(KernelTable, RestListsSizeEachTensorFromItsCount) {
  Resolved r = resolve(Kernel::GlobalNorm, {7, 9, 11}, 4);
  ASSERT_EQ(r.buffers.size(), 4u);
  EXPECT_EQ(r.buffers[0].elements, 7);
  EXPECT_EQ(r.buffers[2].elements, 11);
  EXPECT_TRUE(r.buffers[2].reads);
  EXPECT_EQ(r.buffers[3].elements, 1);
  EXPECT_TRUE(r.buffers[3].writes);
  EXPECT_FALSE(r.buffers[3].reads);
}

TEST(KernelTable, TransposeChecksItsShapeAndPermutation) {
  Resolved ok = resolve(Kernel::Transpose, {3, 2, 3, 4, 2, 0, 1}, 2);
  EXPECT_EQ(ok.failedCheck, nullptr);
  EXPECT_EQ(ok.buffers[0].elements, 24);
  EXPECT_STREQ(resolve(Kernel::Transpose, {3, 2, 3, 4, 2, 2, 1}, 2).failedCheck,
               "a permutation that is not one");
  EXPECT_STREQ(resolve(Kernel::Transpose, {7}, 2).failedCheck,
               "malformed shape");
  EXPECT_STREQ(resolve(Kernel::Transpose, {2, 5, 6}, 2).failedCheck,
               "malformed shape");
}

TEST(KernelTable, OverflowingParametersSizeAsMinusOne) {
  int64_t huge = int64_t{1} << 40;
  Resolved r = resolve(Kernel::LayerNorm, {huge, huge}, 4);
  EXPECT_EQ(r.buffers[0].elements, -1);
  EXPECT_EQ(r.buffers[1].elements, huge);
  // A check over an overflowed product fails rather than passing by wrap.
  EXPECT_NE(
      resolve(Kernel::DropoutSoftmaxGrad, {huge, huge, 0, 1, 2, 3, 4, 5}, 3)
          .failedCheck,
      nullptr);
}

TEST(KernelTable, OptionalParametersReadZeroWhenAbsent) {
  Resolved r = resolve(Kernel::EmbeddingGrad, {4, 8, 16}, 3);
  EXPECT_FALSE(r.buffers[2].reads); // no accumulate: dtable overwritten
  Resolved acc = resolve(Kernel::EmbeddingGrad, {4, 8, 16, 1}, 3);
  EXPECT_TRUE(acc.buffers[2].reads);
  EXPECT_EQ(acc.buffers[2].elements, 16 * 8);
}

} // namespace
