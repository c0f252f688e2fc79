// MLPerf BERT data on disk: CRC32C known answers, HDF5 and TFRecord round
// trips and every error the readers give (bad HDF5 files are written with
// the HDF5 C API here, bad TFRecord files by rewriting good ones), data.path
// expansion, format detection, and the DataLoader's order, shuffle,
// resumption, read-ahead, rank split and evaluation padding
// (DataLoaderTest.cpp).
#include "test/unit/MlperfDataTestUtil.h"

namespace {

using namespace ferry::test::mlperf;

// ---- CRC32C ----------------------------------------------------------------

TEST(Crc32c, KnownAnswers) {
  using ferry::data::crc32c;
  EXPECT_EQ(crc32c(std::string_view("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string_view("")), 0u);
  // RFC 3720 (iSCSI), appendix B.4.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending(32, '\0');
  std::iota(ascending.begin(), ascending.end(), 0);
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
  // Continuing a CRC over a second piece.
  EXPECT_EQ(crc32c(std::string_view("6789"), crc32c(std::string_view("12345"))),
            0xE3069283u);
}

TEST(Crc32c, TfRecordMask) {
  using ferry::data::maskCrc32c;
  EXPECT_EQ(maskCrc32c(0), 0xa282ead8u);
  EXPECT_EQ(maskCrc32c(0xE3069283u), 0xc78ab0e5u);
  EXPECT_EQ(maskCrc32c(1u << 15), 0xa282ead9u);
}

// ---- Round trips -----------------------------------------------------------

TEST_F(MlperfData, Hdf5RoundTrip) {
  HostBatch batch = makeBatch(5, 300);
  ferry::data::writeHdf5(at("a.hdf5"), batch);
  EXPECT_FALSE(fs::exists(at("a.hdf5.tmp")));
  HostBatch back = readAll(at("a.hdf5"), "hdf5");
  ASSERT_EQ(back.samples, 5);
  EXPECT_EQ(rowsOf(back), rowsOf(batch));
  EXPECT_EQ(back.countedSlots(), batch.countedSlots());
}

TEST_F(MlperfData, Hdf5CountsSlotsBeforeTheFirstZeroPosition) {
  HostBatch batch = makeBatch(2, 300);
  std::vector<RawDataset> sets = rawDatasets(batch);
  // Sample 1: positions 5, 0, 7, 9: only the first counts; the rest of the
  // slots read as zeros whatever the file holds. Labels as [N, 1], int64.
  auto &positions = datasetNamed(sets, "masked_lm_positions").ints;
  auto &ids = datasetNamed(sets, "masked_lm_ids").ints;
  std::vector<int64_t> filePositions = {5, 0, 7, 9}, fileIds = {11, 12, 13, 14};
  std::copy(filePositions.begin(), filePositions.end(), positions.begin() + 4);
  std::copy(fileIds.begin(), fileIds.end(), ids.begin() + 4);
  datasetNamed(sets, "next_sentence_labels").dims = {2, 1};
  writeRawHdf5(at("raw.h5"), sets);

  HostBatch back = readAll(at("raw.h5"), "hdf5");
  EXPECT_EQ(rowOf(back, 0), rowOf(batch, 0));
  Row row = rowOf(back, 1);
  EXPECT_EQ(row.positions, (std::vector<int32_t>{5, 0, 0, 0}));
  EXPECT_EQ(row.maskedIds, (std::vector<int32_t>{11, 0, 0, 0}));
  EXPECT_EQ(row.weights, (std::vector<float>{1, 0, 0, 0}));
  EXPECT_EQ(row.ids, rowOf(batch, 1).ids);
  EXPECT_EQ(row.label, batch.nspLabels[1]);
  EXPECT_EQ(row.nspWeight, 1.0f);
}

TEST_F(MlperfData, WriteHdf5RefusesWeightsTheLayoutCannotHold) {
  HostBatch batch = makeBatch(1, 300);
  batch.maskedWeights[0] = 0.0f; // a zero weight before a nonzero position
  EXPECT_THROW(ferry::data::writeHdf5(at("a.hdf5"), batch),
               std::invalid_argument);
  EXPECT_FALSE(fs::exists(at("a.hdf5")));
}

TEST_F(MlperfData, TfRecordRoundTrip) {
  HostBatch batch = makeBatch(6, 400);
  ferry::data::writeTfRecord(at("a.tfrecord"), batch);
  HostBatch back = readAll(at("a.tfrecord"), "tfrecord");
  ASSERT_EQ(back.samples, 6);
  EXPECT_EQ(rowsOf(back), rowsOf(batch));
  // The same batch gives the same bytes.
  ferry::data::writeTfRecord(at("b.tfrecord"), batch);
  EXPECT_EQ(readFile(at("a.tfrecord")), readFile(at("b.tfrecord")));
}

TEST_F(MlperfData, TfRecordCountsSlotsByWeight) {
  HostBatch batch = makeBatch(2, 400);
  // Sample 0: weights 1, 0, 0, 0 over four nonzero slots: only the first
  // counts and the others read as position 0, id 0.
  for (int k = 0; k < 4; ++k) {
    batch.maskedPositions[k] = 3 + k;
    batch.maskedIds[k] = 20 + k;
    batch.maskedWeights[k] = k == 0 ? 1.0f : 0.0f;
  }
  ferry::data::writeTfRecord(at("a.tfrecord"), batch);
  HostBatch back = readAll(at("a.tfrecord"), "tfrecord");
  Row row = rowOf(back, 0);
  EXPECT_EQ(row.positions, (std::vector<int32_t>{3, 0, 0, 0}));
  EXPECT_EQ(row.maskedIds, (std::vector<int32_t>{20, 0, 0, 0}));
  EXPECT_EQ(row.weights, (std::vector<float>{1, 0, 0, 0}));
  EXPECT_EQ(rowOf(back, 1), rowOf(batch, 1));
}

TEST_F(MlperfData, TfRecordWeightsMustBeZeroOrOneCountedFirst) {
  HostBatch batch = makeBatch(2, 400);
  batch.maskedWeights[4 + 0] = 1.0f;
  batch.maskedWeights[4 + 1] = 0.0f;
  batch.maskedWeights[4 + 2] = 1.0f; // counted after an uncounted slot
  batch.maskedPositions[4 + 2] = 5;
  ferry::data::writeTfRecord(at("a.tfrecord"), batch);
  auto file = ferry::data::openTfRecord(at("a.tfrecord"), kShape);
  HostBatch out;
  out.resize(1, kShape.seq, kShape.predictions);
  EXPECT_EQ(errorOf([&] { file->read(1, out, 0); }),
            at("a.tfrecord") +
                ": record 1: masked_lm_weights[2] is 1 after a slot with "
                "weight 0; the counted masked slots must come first (pad the "
                "masked_lm_* features at the end)");

  batch = makeBatch(1, 400);
  batch.maskedWeights[0] = 0.5f;
  ferry::data::writeTfRecord(at("b.tfrecord"), batch);
  file = ferry::data::openTfRecord(at("b.tfrecord"), kShape);
  EXPECT_THAT(
      errorOf([&] { file->read(0, out, 0); }),
      HasSubstr("record 0: masked_lm_weights[0] is 0.5; expected 0 or 1"));
}

// ---- Format detection ------------------------------------------------------

TEST_F(MlperfData, DetectsTheFormatByContent) {
  HostBatch a = makeBatch(3, 100), b = makeBatch(4, 200);
  // Names that say nothing about the format.
  ferry::data::writeHdf5(at("one.dat"), a);
  ferry::data::writeTfRecord(at("two.dat"), b);
  EXPECT_EQ(rowsOf(readAll(at("one.dat"), "auto")), rowsOf(a));
  EXPECT_EQ(rowsOf(readAll(at("two.dat"), "auto")), rowsOf(b));

  writeFile(at("junk.dat"), "this is neither HDF5 nor TFRecord data\n");
  std::string error = errorOf([&] { readAll(at("junk.dat"), "auto"); });
  EXPECT_THAT(error, HasSubstr(at("junk.dat") + ": is neither an HDF5 file"));
  EXPECT_THAT(error, HasSubstr("nor a TFRecord file"));
  EXPECT_THAT(error, HasSubstr("set data.format to hdf5 or tfrecord"));

  writeFile(at("empty.dat"), "");
  EXPECT_THAT(errorOf([&] { readAll(at("empty.dat"), "auto"); }),
              HasSubstr(at("empty.dat") + ": is empty"));
  // A named format is taken at its word.
  EXPECT_THAT(errorOf([&] { readAll(at("two.dat"), "hdf5"); }),
              HasSubstr(at("two.dat") + ": cannot open as an HDF5 file"));
  EXPECT_THAT(errorOf([&] { readAll(at("one.dat"), "tfrecord"); }),
              HasSubstr(at("one.dat") + ": record 0 at byte 0: the length's "
                                        "CRC32C does not match"));
  EXPECT_EQ(errorOf([&] { readAll(at("one.dat"), "parquet"); }),
            "data.format 'parquet' is not one of auto, hdf5, tfrecord");
}

// ---- HDF5 errors -----------------------------------------------------------

TEST_F(MlperfData, Hdf5MissingDataset) {
  std::vector<RawDataset> sets = rawDatasets(makeBatch(3, 100));
  sets.erase(sets.begin() + 4); // masked_lm_ids
  writeRawHdf5(at("a.hdf5"), sets);
  EXPECT_EQ(errorOf([&] { ferry::data::openHdf5(at("a.hdf5"), kShape); }),
            at("a.hdf5") +
                ": has no dataset masked_lm_ids; it has input_ids, "
                "input_mask, masked_lm_positions, next_sentence_labels, "
                "segment_ids (the MLPerf HDF5 layout needs input_ids, "
                "input_mask, segment_ids, masked_lm_positions, masked_lm_ids "
                "and next_sentence_labels)");
}

TEST_F(MlperfData, Hdf5WrongShape) {
  // Sequence-length-512 data (76 predictions) for a seq-128 model.
  const int64_t rows = 3;
  std::vector<RawDataset> sets = {
      {"input_ids", {rows, 512}, std::vector<int64_t>(rows * 512, 1), {}},
      {"input_mask", {rows, 512}, std::vector<int64_t>(rows * 512, 1), {}},
      {"segment_ids", {rows, 512}, std::vector<int64_t>(rows * 512, 0), {}},
      {"masked_lm_positions", {rows, 76}, std::vector<int64_t>(rows * 76), {}},
      {"masked_lm_ids", {rows, 76}, std::vector<int64_t>(rows * 76), {}},
      {"next_sentence_labels", {rows}, std::vector<int64_t>(rows), {}}};
  writeRawHdf5(at("seq512.hdf5"), sets);
  SampleShape model{128, 20, 30522, 2};
  EXPECT_EQ(errorOf([&] { ferry::data::openHdf5(at("seq512.hdf5"), model); }),
            at("seq512.hdf5") +
                ": dataset input_ids has shape [3, 512]; the model expects "
                "[N, 128] (model.seq_length 128): use data made for this "
                "model, or set the model's lengths to the data's");

  // The masked-LM width is checked against model.max_predictions.
  model.seq = 512;
  EXPECT_EQ(errorOf([&] { ferry::data::openHdf5(at("seq512.hdf5"), model); }),
            at("seq512.hdf5") +
                ": dataset masked_lm_positions has shape [3, 76]; the model "
                "expects [N, 20] (model.max_predictions 20): use data made for "
                "this model, or set the model's lengths to the data's");
}

TEST_F(MlperfData, Hdf5FloatDataset) {
  HostBatch batch = makeBatch(3, 100);
  std::vector<RawDataset> sets = rawDatasets(batch);
  RawDataset &mask = datasetNamed(sets, "input_mask");
  mask.floats.assign(mask.ints.begin(), mask.ints.end());
  writeRawHdf5(at("a.hdf5"), sets);
  EXPECT_EQ(errorOf([&] { ferry::data::openHdf5(at("a.hdf5"), kShape); }),
            at("a.hdf5") +
                ": dataset input_mask holds float64 values; expected "
                "integers (any integer type)");
}

TEST_F(MlperfData, Hdf5SampleCountsDiffer) {
  std::vector<RawDataset> sets = rawDatasets(makeBatch(3, 100));
  RawDataset &segments = datasetNamed(sets, "segment_ids");
  segments.dims[0] = 4;
  segments.ints.resize(4 * kShape.seq, 0);
  writeRawHdf5(at("a.hdf5"), sets);
  EXPECT_EQ(errorOf([&] { ferry::data::openHdf5(at("a.hdf5"), kShape); }),
            at("a.hdf5") +
                ": dataset segment_ids has 4 samples but input_ids has 3; "
                "every dataset needs one row per sample");
}

TEST_F(MlperfData, Hdf5ValueOutOfRange) {
  HostBatch batch = makeBatch(3, 100);
  batch.inputIds[1 * kShape.seq + 2] = 1000; // vocab 1000
  batch.segmentIds[2 * kShape.seq + 5] = 2;  // type vocab 2
  ferry::data::writeHdf5(at("a.hdf5"), batch);
  auto file = ferry::data::openHdf5(at("a.hdf5"), kShape);
  HostBatch out;
  out.resize(1, kShape.seq, kShape.predictions);
  file->read(0, out, 0);
  EXPECT_EQ(rowOf(out, 0), rowOf(batch, 0));
  EXPECT_EQ(errorOf([&] { file->read(1, out, 0); }),
            at("a.hdf5") +
                ": sample 1: input_ids[2] is 1000; expected token ids in [0, "
                "1000) (model.vocab_size 1000); check that model.vocab_size "
                "matches the vocabulary the data was made with");
  EXPECT_EQ(errorOf([&] { file->read(2, out, 0); }),
            at("a.hdf5") +
                ": sample 2: segment_ids[5] is 2; expected segment ids in [0, "
                "2) (model.type_vocab_size 2)");
}

TEST_F(MlperfData, MissingFileNamesIt) {
  EXPECT_THAT(errorOf([&] { ferry::data::openHdf5(at("none.hdf5"), kShape); }),
              HasSubstr(at("none.hdf5") + ": cannot open as an HDF5 file"));
  EXPECT_THAT(
      errorOf([&] { ferry::data::openTfRecord(at("none.tfrecord"), kShape); }),
      HasSubstr(at("none.tfrecord") + ": cannot open (No such file"));
}

// ---- TFRecord errors -------------------------------------------------------

TEST_F(MlperfData, TfRecordCorruptDataByte) {
  ferry::data::writeTfRecord(at("a.tfrecord"), makeBatch(3, 100));
  std::string bytes = readFile(at("a.tfrecord"));
  size_t record = recordOffsets(at("a.tfrecord"))[1];
  bytes[record + 12 + 5] ^= 0x40; // a data byte of record 1
  writeFile(at("a.tfrecord"), bytes);

  auto file = ferry::data::openTfRecord(at("a.tfrecord"), kShape);
  ASSERT_EQ(file->samples(), 3);
  HostBatch out;
  out.resize(1, kShape.seq, kShape.predictions);
  file->read(0, out, 0);
  file->read(2, out, 0);
  std::string error = errorOf([&] { file->read(1, out, 0); });
  EXPECT_THAT(error, HasSubstr(at("a.tfrecord") + ": record 1 (byte " +
                               std::to_string(record) +
                               "): the data's CRC32C does not match"));
  EXPECT_THAT(error, HasSubstr("the file is corrupt"));
}

TEST_F(MlperfData, TfRecordTruncated) {
  ferry::data::writeTfRecord(at("a.tfrecord"), makeBatch(3, 100));
  std::string bytes = readFile(at("a.tfrecord"));
  std::vector<size_t> offsets = recordOffsets(at("a.tfrecord"));
  ASSERT_EQ(offsets.size(), 4u);
  ASSERT_EQ(offsets[3], bytes.size());
  size_t last = offsets[3] - offsets[2]; // record 2 with its framing
  writeFile(at("cut.tfrecord"), bytes.substr(0, bytes.size() - 5));
  EXPECT_EQ(
      errorOf([&] { ferry::data::openTfRecord(at("cut.tfrecord"), kShape); }),
      at("cut.tfrecord") + ": record 2 at byte " + std::to_string(offsets[2]) +
          ": the record needs " + std::to_string(last - 12) +
          " bytes after its header but the file has " +
          std::to_string(last - 12 - 5) + "; the file is truncated");

  writeFile(at("header.tfrecord"), bytes.substr(0, offsets[1] + 7));
  EXPECT_EQ(errorOf([&] {
              ferry::data::openTfRecord(at("header.tfrecord"), kShape);
            }),
            at("header.tfrecord") + ": record 1 at byte " +
                std::to_string(offsets[1]) +
                ": the file ends inside the record's 12-byte header (7 bytes "
                "left); the file is truncated");
}

TEST_F(MlperfData, TfRecordMissingFeature) {
  ferry::data::writeTfRecord(at("a.tfrecord"), makeBatch(2, 100));
  editRecord(at("a.tfrecord"), 1, [](ferry::tf::Example &example) {
    example.mutable_features()->mutable_feature()->erase("masked_lm_weights");
  });
  auto file = ferry::data::openTfRecord(at("a.tfrecord"), kShape);
  HostBatch out;
  out.resize(1, kShape.seq, kShape.predictions);
  file->read(0, out, 0);
  EXPECT_EQ(errorOf([&] { file->read(1, out, 0); }),
            at("a.tfrecord") +
                ": record 1: has no feature masked_lm_weights; it has "
                "input_ids, input_mask, masked_lm_ids, masked_lm_positions, "
                "next_sentence_labels, segment_ids (MLPerf BERT records need "
                "input_ids, input_mask, segment_ids, masked_lm_positions, "
                "masked_lm_ids, masked_lm_weights and next_sentence_labels)");
}

TEST_F(MlperfData, TfRecordWrongKindAndLength) {
  ferry::data::writeTfRecord(at("a.tfrecord"), makeBatch(3, 100));
  editRecord(at("a.tfrecord"), 0, [](ferry::tf::Example &example) {
    ferry::tf::Feature &ids = featureOf(example, "input_ids");
    ids.mutable_float_list()->add_value(1.0f); // replaces the int64_list
  });
  editRecord(at("a.tfrecord"), 1, [](ferry::tf::Example &example) {
    featureOf(example, "masked_lm_ids").mutable_int64_list()->add_value(7);
  });
  editRecord(at("a.tfrecord"), 2, [](ferry::tf::Example &example) {
    featureOf(example, "masked_lm_weights").mutable_int64_list();
  });
  auto file = ferry::data::openTfRecord(at("a.tfrecord"), kShape);
  HostBatch out;
  out.resize(1, kShape.seq, kShape.predictions);
  EXPECT_EQ(errorOf([&] { file->read(0, out, 0); }),
            at("a.tfrecord") +
                ": record 0: feature input_ids is a float_list; expected an "
                "int64_list of 16 values (model.seq_length 16)");
  EXPECT_EQ(errorOf([&] { file->read(1, out, 0); }),
            at("a.tfrecord") +
                ": record 1: feature masked_lm_ids has 5 values; the model "
                "expects 4 (model.max_predictions 4): use data made for this "
                "model, or set model.max_predictions to the data's");
  EXPECT_EQ(errorOf([&] { file->read(2, out, 0); }),
            at("a.tfrecord") +
                ": record 2: feature masked_lm_weights is an int64_list; "
                "expected a float_list of 4 values (model.max_predictions 4)");
}

TEST_F(MlperfData, TfRecordValueOutOfRange) {
  ferry::data::writeTfRecord(at("a.tfrecord"), makeBatch(3, 100));
  editRecord(at("a.tfrecord"), 0, [](ferry::tf::Example &example) {
    featureOf(example, "input_ids").mutable_int64_list()->set_value(3, 1000);
  });
  editRecord(at("a.tfrecord"), 1, [](ferry::tf::Example &example) {
    // Would alias to 7 if it were narrowed to int32 before the check.
    featureOf(example, "masked_lm_ids")
        .mutable_int64_list()
        ->set_value(0, (int64_t{1} << 32) + 7);
  });
  editRecord(at("a.tfrecord"), 2, [](ferry::tf::Example &example) {
    featureOf(example, "masked_lm_positions")
        .mutable_int64_list()
        ->set_value(1, -1);
  });
  auto file = ferry::data::openTfRecord(at("a.tfrecord"), kShape);
  HostBatch out;
  out.resize(1, kShape.seq, kShape.predictions);
  EXPECT_EQ(errorOf([&] { file->read(0, out, 0); }),
            at("a.tfrecord") +
                ": record 0: input_ids[3] is 1000; expected token ids in [0, "
                "1000) (model.vocab_size 1000); check that model.vocab_size "
                "matches the vocabulary the data was made with");
  EXPECT_THAT(errorOf([&] { file->read(1, out, 0); }),
              HasSubstr(": record 1: masked_lm_ids[0] is 4294967303; "));
  EXPECT_THAT(errorOf([&] { file->read(2, out, 0); }),
              HasSubstr(": record 2: masked_lm_positions[1] is -1; expected "
                        "positions in [0, 16) (model.seq_length 16)"));
}

// ---- data.path -------------------------------------------------------------

TEST_F(MlperfData, ExpandDataPath) {
  for (const char *name : {"c.tfrecord", "a.tfrecord", "b.hdf5", ".hidden"})
    writeFile(at(name), "x");
  fs::create_directory(at("sub.tfrecord"));
  writeFile(at("sub.tfrecord/inner.tfrecord"), "x");

  using ferry::data::expandDataPath;
  EXPECT_EQ(expandDataPath(at("b.hdf5")),
            (std::vector<std::string>{at("b.hdf5")}));
  EXPECT_EQ(expandDataPath(dir),
            (std::vector<std::string>{at("a.tfrecord"), at("b.hdf5"),
                                      at("c.tfrecord")}));
  EXPECT_EQ(expandDataPath(dir + "/"),
            (std::vector<std::string>{at("a.tfrecord"), at("b.hdf5"),
                                      at("c.tfrecord")}));
  EXPECT_EQ(expandDataPath(at("*.tfrecord")),
            (std::vector<std::string>{at("a.tfrecord"), at("c.tfrecord")}));
  EXPECT_EQ(expandDataPath(at("[bc].*")),
            (std::vector<std::string>{at("b.hdf5"), at("c.tfrecord")}));

  EXPECT_EQ(errorOf([&] { expandDataPath(at("missing.hdf5")); }),
            "data.path '" + at("missing.hdf5") +
                "': no such file or directory");
  EXPECT_EQ(errorOf([&] { expandDataPath(at("*.parquet")); }),
            "data.path '" + at("*.parquet") + "' matches no files");
  fs::create_directory(at("empty"));
  writeFile(at("empty/.only-hidden"), "x");
  EXPECT_EQ(errorOf([&] { expandDataPath(at("empty")); }),
            "data.path '" + at("empty") +
                "' is a directory with no data files (hidden files are "
                "skipped)");
}

} // namespace
