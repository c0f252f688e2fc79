// Packed rows (training/data/PackedRows): samples packed into rows with their
// masked slots and NSP labels, the fields derived from sequence ids and
// their checks, and packed HDF5 and TFRecord files read back, or refused by
// a model that takes one sequence a row.
#include "training/data/PackedRows.h"
#include "test/unit/MlperfDataTestUtil.h"

using namespace ferry::test::mlperf;
using ferry::data::completePackedRow;
using ferry::data::packRows;
using ferry::data::sampleLength;
using ferry::data::widenToPacks;

namespace {

// Sample i of `in` equals the k-th sequence of row r of `out` (tokens,
// segments, positions restarting at 0, masked slots shifted by its start,
// NSP label and weight, [CLS] position, sample index).
void expectSequence(const HostBatch &in, int64_t i, const HostBatch &out,
                    int64_t r, int64_t k, int64_t start, int64_t firstSlot) {
  int64_t length = sampleLength(in, i);
  for (int64_t t = 0; t < length; ++t) {
    int64_t at = r * out.seq + start + t;
    EXPECT_EQ(out.inputIds[at], in.inputIds[i * in.seq + t]) << t;
    EXPECT_EQ(out.segmentIds[at], in.segmentIds[i * in.seq + t]) << t;
    EXPECT_EQ(out.inputMask[at], 1);
    EXPECT_EQ(out.sequenceIds[at], k + 1);
    EXPECT_EQ(out.positionIds[at], t);
  }
  int64_t slot = firstSlot;
  for (int64_t j = 0; j < in.predictions; ++j) {
    if (in.maskedWeights[i * in.predictions + j] == 0.0f)
      break;
    int64_t at = r * out.predictions + slot++;
    EXPECT_EQ(out.maskedPositions[at],
              in.maskedPositions[i * in.predictions + j] + start);
    EXPECT_EQ(out.maskedIds[at], in.maskedIds[i * in.predictions + j]);
    EXPECT_EQ(out.maskedWeights[at], 1.0f);
  }
  EXPECT_EQ(out.nspLabels[r * out.packs + k], in.nspLabels[i]);
  EXPECT_EQ(out.nspWeights[r * out.packs + k], 1.0f);
  EXPECT_EQ(out.clsPositions[r * out.packs + k], start);
  EXPECT_EQ(out.sampleIndex[r * out.packs + k], i);
}

} // namespace

TEST(PackedRows, PackRowsConcatenatesSamplesAndShiftsTheirSlots) {
  // Samples of 8..16 tokens in rows of 32: two a row fit; kShape's 4
  // masked slots a row may not, then a group continues in a new row.
  HostBatch in = makeBatch(6, 500); // 16 tokens, 4 slots a sample
  HostBatch wide;
  wide.resize(6, 32, 8);
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t t = 0; t < in.seq; ++t) {
      wide.inputIds[i * 32 + t] = in.inputIds[i * in.seq + t];
      wide.segmentIds[i * 32 + t] = in.segmentIds[i * in.seq + t];
      wide.inputMask[i * 32 + t] = in.inputMask[i * in.seq + t];
    }
    for (int64_t j = 0; j < in.predictions; ++j) {
      wide.maskedPositions[i * 8 + j] = in.maskedPositions[i * 4 + j];
      wide.maskedIds[i * 8 + j] = in.maskedIds[i * 4 + j];
      wide.maskedWeights[i * 8 + j] = in.maskedWeights[i * 4 + j];
    }
    wide.nspLabels[i] = in.nspLabels[i];
    wide.nspWeights[i] = 1.0f;
  }
  HostBatch out = packRows(wide, {{0, 1}, {2, 3}, {4}, {5}}, 3);
  ASSERT_EQ(out.samples, 4);
  EXPECT_EQ(out.packs, 3);
  expectSequence(wide, 0, out, 0, 0, 0, 0);
  int64_t firstSlots = 0; // sample 0's counted slots
  for (int64_t j = 0; j < 8; ++j)
    firstSlots += wide.maskedWeights[j] != 0.0f;
  expectSequence(wide, 1, out, 0, 1, sampleLength(wide, 0), firstSlots);
  expectSequence(wide, 4, out, 2, 0, 0, 0);
  // Past the last sequence: padding, NSP weight 0, sample index -1.
  int64_t used = sampleLength(wide, 4);
  EXPECT_EQ(out.sequenceIds[2 * 32 + used], 0);
  EXPECT_EQ(out.inputMask[2 * 32 + used], 0);
  EXPECT_EQ(out.nspWeights[2 * 3 + 1], 0.0f);
  EXPECT_EQ(out.sampleIndex[2 * 3 + 1], -1);
  EXPECT_EQ(out.realSequences(), 6.0);
  EXPECT_EQ(out.countedSlots(), wide.countedSlots());
  EXPECT_EQ(out.realTokens(), wide.realTokens());

  // More than `predictions` masked slots together: the group takes two rows.
  HostBatch narrow = wide;
  narrow.resize(6, 32, 4);
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t t = 0; t < 32; ++t) {
      narrow.inputIds[i * 32 + t] = wide.inputIds[i * 32 + t];
      narrow.inputMask[i * 32 + t] = wide.inputMask[i * 32 + t];
    }
    for (int64_t j = 0; j < 4; ++j) { // 3 counted slots each
      narrow.maskedPositions[i * 4 + j] = j < 3 ? 1 + j : 0;
      narrow.maskedWeights[i * 4 + j] = j < 3 ? 1.0f : 0.0f;
    }
    narrow.nspWeights[i] = 1.0f;
  }
  HostBatch split = packRows(narrow, {{0, 1}}, 2);
  ASSERT_EQ(split.samples, 2);
  EXPECT_EQ(split.nspWeights[0 * 2 + 1], 0.0f);
  EXPECT_EQ(split.sampleIndex[1 * 2 + 0], 1);

  EXPECT_THROW(packRows(wide, {{0, 1, 2, 3}}, 3), std::invalid_argument);
  EXPECT_THROW(packRows(wide, {{0, 9}}, 3), std::invalid_argument);
  EXPECT_THROW(packRows(wide, {{0, 1}}, 1), std::invalid_argument);
}

TEST(PackedRows, CompleteDerivesPositionsClsAndWeights) {
  HostBatch b;
  b.resize(1, 10, 2, 3);
  const int32_t ids[10] = {1, 1, 1, 2, 2, 2, 2, 0, 0, 0};
  for (int t = 0; t < 10; ++t) {
    b.sequenceIds[t] = ids[t];
    b.inputMask[t] = ids[t] != 0;
  }
  b.nspLabels = {1, 0, 1}; // the third is past the last sequence
  completePackedRow("row", b, 0, /*packedFile=*/true);
  EXPECT_EQ(b.positionIds, (std::vector<int32_t>{0, 1, 2, 0, 1, 2, 3, 0, 0, 0}));
  EXPECT_EQ(b.clsPositions, (std::vector<int32_t>{0, 3, 0}));
  EXPECT_EQ(b.nspWeights, (std::vector<float>{1, 1, 0}));
  EXPECT_EQ(b.nspLabels, (std::vector<int32_t>{1, 0, 0}));

  // An unpacked file's row: one sequence, its input mask's tokens.
  HostBatch u;
  u.resize(1, 6, 2, 2);
  u.inputMask = {1, 1, 1, 1, 0, 0};
  u.nspLabels = {1, 0};
  completePackedRow("row", u, 0, /*packedFile=*/false);
  EXPECT_EQ(u.sequenceIds, (std::vector<int32_t>{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(u.positionIds, (std::vector<int32_t>{0, 1, 2, 3, 0, 0}));
  EXPECT_EQ(u.nspWeights, (std::vector<float>{1, 0}));
}

TEST(PackedRows, CompleteRefusesMalformedSequenceIds) {
  auto attempt = [](std::vector<int32_t> ids, std::vector<int32_t> mask) {
    HostBatch b;
    b.resize(1, static_cast<int64_t>(ids.size()), 2, 3);
    b.sequenceIds = ids;
    b.inputMask = mask;
    try {
      completePackedRow("f.hdf5: sample 4", b, 0, true);
    } catch (const DataError &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(attempt({1, 1, 3, 3}, {1, 1, 1, 1}),
              HasSubstr("f.hdf5: sample 4: sequence_ids[2] is 3 after 1; each "
                        "row holds sequences 1, 2, ... in contiguous blocks"));
  EXPECT_THAT(attempt({1, 0, 2, 2}, {1, 0, 1, 1}),
              HasSubstr("sequence_ids[2] is 2 after 0"));
  EXPECT_THAT(attempt({2, 2, 0, 0}, {1, 1, 0, 0}),
              HasSubstr("sequence_ids[0] is 2 after 0"));
  EXPECT_THAT(attempt({1, 4, 0, 0}, {1, 1, 0, 0}),
              HasSubstr("sequence_ids[1] is 4; expected 0 (padding) to 3 "
                        "(model.max_sequences_per_pack)"));
  EXPECT_THAT(attempt({1, 1, 0, 0}, {1, 1, 1, 0}),
              HasSubstr("input_mask[2] is 1 but sequence_ids[2] is 0"));
}

TEST(PackedRows, WidenToPacksKeepsEachSampleInItsRow) {
  HostBatch b = makeBatch(3, 700);
  HostBatch original = b;
  widenToPacks(b, 3, 40);
  EXPECT_EQ(b.packs, 3);
  for (int64_t r = 0; r < 3; ++r) {
    EXPECT_EQ(b.nspLabels[r * 3], original.nspLabels[r]);
    EXPECT_EQ(b.nspWeights[r * 3], 1.0f);
    EXPECT_EQ(b.nspWeights[r * 3 + 1], 0.0f);
    EXPECT_EQ(b.clsPositions[r * 3], 0);
    // Dropout keyed by the run position (40 + r) and the token's position.
    EXPECT_EQ(b.dropoutKeys[2 * (r * b.seq + 2)], 40 + r);
    EXPECT_EQ(b.dropoutKeys[2 * (r * b.seq + 2) + 1], 2);
  }
  EXPECT_EQ(b.inputIds, original.inputIds);
}

TEST_F(MlperfData, PackedFilesRoundTripAndNeedAPackedModel) {
  HostBatch wide;
  wide.resize(4, 32, 4);
  HostBatch in = makeBatch(4, 800);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t t = 0; t < 16; ++t) {
      wide.inputIds[i * 32 + t] = in.inputIds[i * 16 + t];
      wide.segmentIds[i * 32 + t] = in.segmentIds[i * 16 + t];
      wide.inputMask[i * 32 + t] = in.inputMask[i * 16 + t];
    }
    wide.nspLabels[i] = in.nspLabels[i];
    wide.nspWeights[i] = 1.0f;
    wide.maskedPositions[i * 4] = 1; // one counted slot each
    wide.maskedIds[i * 4] = 5;
    wide.maskedWeights[i * 4] = 1.0f;
  }
  HostBatch packed = packRows(wide, {{0, 1}, {2, 3}}, 3);
  SampleShape shape{32, 4, 1000, 2, 3};
  for (std::string format : {"hdf5", "tfrecord"}) {
    SCOPED_TRACE(format);
    std::string path = at("packed." + format);
    if (format == "hdf5")
      ferry::data::writeHdf5(path, packed);
    else
      ferry::data::writeTfRecord(path, packed);
    HostBatch back = readAll(path, format, shape);
    ASSERT_EQ(back.samples, 2);
    EXPECT_EQ(rowsOf(back).size(), 2u);
    EXPECT_EQ(back.inputIds, packed.inputIds);
    EXPECT_EQ(back.maskedPositions, packed.maskedPositions);
    EXPECT_EQ(back.sequenceIds, packed.sequenceIds);
    EXPECT_EQ(back.positionIds, packed.positionIds);
    EXPECT_EQ(back.clsPositions, packed.clsPositions);
    EXPECT_EQ(back.nspLabels, packed.nspLabels);
    EXPECT_EQ(back.nspWeights, packed.nspWeights);

    SampleShape unpacked{32, 4, 1000, 2, 1};
    try {
      readAll(path, format, unpacked);
      ADD_FAILURE() << "a packed file read by an unpacked model";
    } catch (const DataError &e) {
      EXPECT_THAT(e.what(), HasSubstr("but the model takes one sequence a row; "
                                      "set model.max_sequences_per_pack"));
    }
  }
}
