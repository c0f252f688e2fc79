// MLPerf BERT data on disk: CRC32C known answers, HDF5 and TFRecord round
// trips and every error the readers give (bad HDF5 files are written with
// the HDF5 C API here, bad TFRecord files by rewriting good ones), data.path
// expansion, format detection, and the DataLoader's order, shuffle,
// resumption, read-ahead, rank split and evaluation padding.
#include "runtime/data/MlperfData.h"
#include "runtime/data/Crc32c.h"
#include "runtime/data/tf_example.pb.h"
#include "runtime/random/Philox.h"
#include "test/unit/TestFiles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hdf5.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ferry::test::readFile;
using ferry::test::writeFile;

using ferry::data::DataError;
using ferry::data::DataLoader;
using ferry::data::HostBatch;
using ferry::data::SampleShape;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr SampleShape kShape{/*seq*/ 16, /*predictions*/ 4, /*vocab*/ 1000,
                             /*typeVocab*/ 2};

// ---- Batches made by hand ------------------------------------------------

uint32_t mix(uint32_t x) { // a small integer hash: random-looking values
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// `rows` valid samples; sample r has token 1 = tag + r (its identity),
// 8..16 real tokens, 1..4 counted masked slots and a random NSP label.
HostBatch makeBatch(int64_t rows, int tag) {
  HostBatch b;
  b.resize(rows, kShape.seq, kShape.predictions);
  for (int64_t r = 0; r < rows; ++r) {
    uint32_t state = mix(static_cast<uint32_t>(tag * 1000 + r + 1));
    auto next = [&] { return state = mix(state + 0x9e3779b9u); };
    int64_t length = 8 + next() % 9;
    for (int64_t j = 0; j < kShape.seq; ++j) {
      int64_t at = r * kShape.seq + j;
      if (j >= length)
        continue;
      b.inputIds[at] = j == 0   ? 101
                       : j == 1 ? static_cast<int32_t>(tag + r)
                                : static_cast<int32_t>(1 + next() % 999);
      b.inputMask[at] = 1;
      b.segmentIds[at] = j >= length / 2 ? 1 : 0;
    }
    int64_t counted = 1 + next() % kShape.predictions;
    for (int64_t k = 0; k < counted; ++k) {
      int64_t at = r * kShape.predictions + k;
      b.maskedPositions[at] = static_cast<int32_t>(1 + next() % (length - 1));
      b.maskedIds[at] = static_cast<int32_t>(1 + next() % 999);
      b.maskedWeights[at] = 1.0f;
    }
    b.nspLabels[r] = static_cast<int32_t>(next() % 2);
    b.nspWeights[r] = 1.0f;
  }
  return b;
}

// One sample's fields, for comparisons with readable failures.
struct Row {
  std::vector<int32_t> ids, segments, mask, positions, maskedIds;
  std::vector<float> weights;
  int32_t label = 0;
  float nspWeight = 0;
  bool operator==(const Row &o) const {
    return ids == o.ids && segments == o.segments && mask == o.mask &&
           positions == o.positions && maskedIds == o.maskedIds &&
           weights == o.weights && label == o.label && nspWeight == o.nspWeight;
  }
};

template <typename T>
std::ostream &operator<<(std::ostream &os, const std::vector<T> &v) {
  os << "[";
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? " " : "") << v[i];
  return os << "]";
}

std::ostream &operator<<(std::ostream &os, const Row &row) {
  return os << "{ids " << row.ids << " segments " << row.segments << " mask "
            << row.mask << " positions " << row.positions << " maskedIds "
            << row.maskedIds << " weights " << row.weights << " label "
            << row.label << " nspWeight " << row.nspWeight << "}";
}

template <typename T>
std::vector<T> slice(const std::vector<T> &v, int64_t row, int64_t width) {
  return std::vector<T>(v.begin() + row * width, v.begin() + (row + 1) * width);
}

Row rowOf(const HostBatch &b, int64_t r) {
  Row row;
  row.ids = slice(b.inputIds, r, b.seq);
  row.segments = slice(b.segmentIds, r, b.seq);
  row.mask = slice(b.inputMask, r, b.seq);
  row.positions = slice(b.maskedPositions, r, b.predictions);
  row.maskedIds = slice(b.maskedIds, r, b.predictions);
  row.weights = slice(b.maskedWeights, r, b.predictions);
  row.label = b.nspLabels[r];
  row.nspWeight = b.nspWeights[r];
  return row;
}

std::vector<Row> rowsOf(const HostBatch &b) {
  std::vector<Row> rows;
  for (int64_t r = 0; r < b.samples; ++r)
    rows.push_back(rowOf(b, r));
  return rows;
}

// ---- Files ---------------------------------------------------------------

// A dataset for writeRawHdf5: integers stored as int64, or float64 values.
struct RawDataset {
  std::string name;
  std::vector<hsize_t> dims;
  std::vector<int64_t> ints;
  std::vector<double> floats; // used when non-empty
};

void writeRawHdf5(const std::string &path,
                  const std::vector<RawDataset> &datasets) {
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  for (const RawDataset &d : datasets) {
    bool isFloat = !d.floats.empty();
    hid_t space = H5Screate_simple(static_cast<int>(d.dims.size()),
                                   d.dims.data(), nullptr);
    hid_t set = H5Dcreate2(file, d.name.c_str(),
                           isFloat ? H5T_IEEE_F64LE : H5T_STD_I64LE, space,
                           H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(set, 0);
    herr_t status = isFloat ? H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL,
                                       H5P_DEFAULT, d.floats.data())
                            : H5Dwrite(set, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL,
                                       H5P_DEFAULT, d.ints.data());
    EXPECT_GE(status, 0);
    H5Dclose(set);
    H5Sclose(space);
  }
  H5Fclose(file);
}

// The six datasets of `b` as int64, to be spoilt by a test.
std::vector<RawDataset> rawDatasets(const HostBatch &b) {
  auto widen = [](const std::vector<int32_t> &v) {
    return std::vector<int64_t>(v.begin(), v.end());
  };
  auto rows = static_cast<hsize_t>(b.samples);
  auto seq = static_cast<hsize_t>(b.seq);
  auto p = static_cast<hsize_t>(b.predictions);
  return {{"input_ids", {rows, seq}, widen(b.inputIds), {}},
          {"input_mask", {rows, seq}, widen(b.inputMask), {}},
          {"segment_ids", {rows, seq}, widen(b.segmentIds), {}},
          {"masked_lm_positions", {rows, p}, widen(b.maskedPositions), {}},
          {"masked_lm_ids", {rows, p}, widen(b.maskedIds), {}},
          {"next_sentence_labels", {rows}, widen(b.nspLabels), {}}};
}

RawDataset &datasetNamed(std::vector<RawDataset> &sets,
                         const std::string &name) {
  for (RawDataset &d : sets)
    if (d.name == name)
      return d;
  throw std::logic_error("no dataset " + name);
}

std::string frameRecord(const std::string &data) {
  auto little = [](uint64_t value, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i)
      out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
    return out;
  };
  std::string header = little(data.size(), 8);
  using ferry::data::crc32c;
  using ferry::data::maskCrc32c;
  return header + little(maskCrc32c(crc32c(header)), 4) + data +
         little(maskCrc32c(crc32c(data)), 4);
}

// The records' data of a TFRecord file (framing not checked).
std::vector<std::string> recordsOf(const std::string &path) {
  std::string bytes = readFile(path);
  std::vector<std::string> records;
  size_t at = 0;
  while (at + 12 <= bytes.size()) {
    uint64_t length = 0;
    for (int i = 0; i < 8; ++i)
      length |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i]))
                << (8 * i);
    records.push_back(bytes.substr(at + 12, length));
    at += 16 + length;
  }
  return records;
}

// The byte offset of each record's header.
std::vector<size_t> recordOffsets(const std::string &path) {
  std::vector<size_t> offsets;
  size_t at = 0;
  for (const std::string &record : recordsOf(path)) {
    offsets.push_back(at);
    at += 16 + record.size();
  }
  offsets.push_back(at); // the end
  return offsets;
}

// Rewrites record `index` of a TFRecord file through `edit`.
void editRecord(const std::string &path, size_t index,
                const std::function<void(ferry::tf::Example &)> &edit) {
  std::vector<std::string> records = recordsOf(path);
  ASSERT_LT(index, records.size());
  ferry::tf::Example example;
  ASSERT_TRUE(example.ParseFromString(records[index]));
  edit(example);
  records[index] = example.SerializeAsString();
  std::string bytes;
  for (const std::string &record : records)
    bytes += frameRecord(record);
  writeFile(path, bytes);
}

ferry::tf::Feature &featureOf(ferry::tf::Example &example,
                              const std::string &name) {
  return (*example.mutable_features()->mutable_feature())[name];
}

// What a reader throws, or "" when it does not.
template <typename F> std::string errorOf(F &&action) {
  try {
    action();
  } catch (const DataError &error) {
    return error.what();
  }
  return "";
}

class MlperfData : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/ferry-mlperf-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  std::string at(const std::string &name) const { return dir + "/" + name; }

  // Reads every sample of `path` through the reader for `format`.
  HostBatch readAll(const std::string &path, const std::string &format,
                    const SampleShape &shape = kShape) {
    auto file = ferry::data::openSampleFile(path, format, shape);
    HostBatch out;
    out.resize(file->samples(), shape.seq, shape.predictions);
    for (int64_t i = file->samples() - 1; i >= 0; --i) // any order
      file->read(i, out, i);
    return out;
  }

  std::string dir;
};

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
                "[N, 128] (model.seq_length 128)");

  // The masked-LM width is checked against model.max_predictions.
  model.seq = 512;
  EXPECT_EQ(errorOf([&] { ferry::data::openHdf5(at("seq512.hdf5"), model); }),
            at("seq512.hdf5") +
                ": dataset masked_lm_positions has shape [3, 76]; the model "
                "expects [N, 20] (model.max_predictions 20)");
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
                "expects 4 (model.max_predictions 4)");
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

// ---- DataLoader ------------------------------------------------------------

// A directory with an HDF5 file of 8 samples (tags 100..107) and a TFRecord
// file of 12 (tags 200..211): 20 samples in file order.
class Loader : public MlperfData {
protected:
  void SetUp() override {
    MlperfData::SetUp();
    fs::create_directory(at("data"));
    first = makeBatch(8, 100);
    second = makeBatch(12, 200);
    ferry::data::writeTfRecord(at("data/part-b.tfrecord"), second);
    ferry::data::writeHdf5(at("data/part-a.hdf5"), first);
    expected = rowsOf(first);
    for (const Row &row : rowsOf(second))
      expected.push_back(row);
  }

  std::string data() const { return at("data"); }

  // The file-order index of each row of `batch`, by its identity token.
  std::vector<int> order(const HostBatch &batch) const {
    std::vector<int> indices;
    for (int64_t r = 0; r < batch.samples; ++r) {
      int tag = batch.inputIds[r * batch.seq + 1];
      int index = tag < 200 ? tag - 100 : 8 + tag - 200;
      EXPECT_EQ(rowOf(batch, r), expected[index]) << "row " << r;
      indices.push_back(index);
    }
    return indices;
  }

  HostBatch first, second;
  std::vector<Row> expected; // file order
};

TEST_F(Loader, ReadsAcrossFilesInOrder) {
  DataLoader loader(data(), "auto", /*shuffle*/ false, 1, kShape);
  EXPECT_EQ(loader.samplesPerEpoch(), 20);
  EXPECT_EQ(loader.files(),
            (std::vector<std::string>{at("data/part-a.hdf5"),
                                      at("data/part-b.tfrecord")}));
  HostBatch out;
  loader.next(0, 20, out);
  EXPECT_EQ(rowsOf(out), expected);
  // Across the epoch boundary: samples 18, 19, then 0, 1, 2.
  loader.next(18, 5, out);
  EXPECT_EQ(order(out), (std::vector<int>{18, 19, 0, 1, 2}));
  loader.next(6, 4, out); // across the file boundary
  EXPECT_EQ(order(out), (std::vector<int>{6, 7, 8, 9}));
}

TEST_F(Loader, ShuffleIsAPureFunctionOfSeedAndEpoch) {
  DataLoader loader(data(), "auto", /*shuffle*/ true, 42, kShape);
  HostBatch out;
  loader.next(0, 20, out);
  std::vector<int> epoch0 = order(out);
  loader.next(20, 20, out);
  std::vector<int> epoch1 = order(out);

  // Every sample exactly once per epoch; the epochs differ.
  for (const std::vector<int> &epoch : {epoch0, epoch1}) {
    std::vector<int> sorted = epoch;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> all(20);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted, all);
    EXPECT_NE(epoch, all);
  }
  EXPECT_NE(epoch0, epoch1);

  // The documented recipe, computed here.
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int> permutation(20);
    std::iota(permutation.begin(), permutation.end(), 0);
    for (int i = 19; i > 0; --i) {
      uint32_t bits = ferry::random::randomBits(
          42, ferry::random::purposeHash("data.shuffle"), 0, epoch, i);
      std::swap(permutation[i], permutation[bits % (i + 1)]);
    }
    EXPECT_EQ(permutation, epoch == 0 ? epoch0 : epoch1) << "epoch " << epoch;
  }

  // The same seed gives the same order; another seed another.
  DataLoader same(data(), "auto", true, 42, kShape);
  same.next(0, 20, out);
  EXPECT_EQ(order(out), epoch0);
  DataLoader other(data(), "auto", true, 43, kShape);
  other.next(0, 20, out);
  EXPECT_NE(order(out), epoch0);
}

TEST_F(Loader, ResumesFromAPosition) {
  DataLoader original(data(), "auto", true, 7, kShape);
  std::vector<std::vector<Row>> batches;
  HostBatch out;
  for (int64_t position = 0; position < 48; position += 6) {
    original.next(position, 6, out);
    batches.push_back(rowsOf(out));
  }
  for (int64_t position : {18, 36, 42}) { // 18 spans epochs 0 and 1
    DataLoader resumed(data(), "auto", true, 7, kShape);
    resumed.next(position, 6, out);
    EXPECT_EQ(rowsOf(out), batches[position / 6]) << "position " << position;
  }
}

TEST_F(Loader, ReadAheadGivesWhatASynchronousReadGives) {
  DataLoader loader(data(), "auto", true, 9, kShape);
  DataLoader direct(data(), "auto", true, 9, kShape);
  HostBatch ahead, now;
  for (int64_t position = 0; position < 60; position += 6) {
    loader.next(position, 6, ahead); // from the read ahead after the first
    DataLoader fresh(data(), "auto", true, 9, kShape);
    fresh.next(position, 6, now); // synchronous
    EXPECT_EQ(rowsOf(ahead), rowsOf(now)) << "position " << position;
  }
  // Jumping elsewhere drops the read ahead.
  loader.next(3, 4, ahead);
  direct.next(3, 4, now);
  EXPECT_EQ(rowsOf(ahead), rowsOf(now));
  // readInOrder between two next() calls keeps the read ahead valid.
  loader.readInOrder(0, 2, 2, now);
  loader.next(7, 4, ahead);
  direct.next(7, 4, now);
  EXPECT_EQ(rowsOf(ahead), rowsOf(now));
}

TEST_F(Loader, BackgroundErrorsAreRethrown) {
  HostBatch batch = makeBatch(6, 300);
  ferry::data::writeTfRecord(at("bad.tfrecord"), batch);
  editRecord(at("bad.tfrecord"), 3, [](ferry::tf::Example &example) {
    featureOf(example, "input_ids").mutable_int64_list()->set_value(0, 5000);
  });
  DataLoader loader(at("bad.tfrecord"), "auto", false, 1, kShape);
  HostBatch out;
  loader.next(0, 2, out); // reads records 2 and 3 in the background
  EXPECT_EQ(rowsOf(out), (std::vector<Row>{rowOf(batch, 0), rowOf(batch, 1)}));
  EXPECT_THAT(errorOf([&] { loader.next(2, 2, out); }),
              HasSubstr(at("bad.tfrecord") + ": record 3: input_ids[0] is "
                                             "5000"));
  // The loader still works afterwards.
  loader.next(4, 2, out);
  EXPECT_EQ(rowsOf(out), (std::vector<Row>{rowOf(batch, 4), rowOf(batch, 5)}));
}

TEST_F(Loader, RanksSplitTheGlobalBatch) {
  for (bool shuffle : {false, true}) {
    DataLoader whole(data(), "auto", shuffle, 5, kShape, 0, 1);
    DataLoader rank0(data(), "auto", shuffle, 5, kShape, 0, 2);
    DataLoader rank1(data(), "auto", shuffle, 5, kShape, 1, 2);
    HostBatch all, half0, half1;
    for (int64_t position : {0, 16, 32}) { // 16 spans two epochs
      whole.next(position, 8, all);
      rank0.next(position, 8, half0);
      rank1.next(position, 8, half1);
      ASSERT_EQ(half0.samples, 4);
      ASSERT_EQ(half1.samples, 4);
      std::vector<Row> joined = rowsOf(half0);
      for (const Row &row : rowsOf(half1))
        joined.push_back(row);
      EXPECT_EQ(joined, rowsOf(all))
          << "position " << position << " shuffle " << shuffle;
    }
  }
  DataLoader rank0(data(), "auto", false, 5, kShape, 0, 2);
  HostBatch out;
  EXPECT_THROW(rank0.next(0, 7, out), std::invalid_argument);
  EXPECT_THROW(DataLoader(data(), "auto", false, 5, kShape, 2, 2),
               std::invalid_argument);
}

TEST_F(Loader, ReadInOrderPadsWithZeroRows) {
  DataLoader loader(data(), "auto", /*shuffle*/ true, 3, kShape);
  HostBatch out;
  loader.readInOrder(17, 3, 5, out);
  ASSERT_EQ(out.samples, 5);
  EXPECT_EQ(rowOf(out, 0), expected[17]);
  EXPECT_EQ(rowOf(out, 1), expected[18]);
  EXPECT_EQ(rowOf(out, 2), expected[19]);
  Row zero;
  zero.ids = zero.segments = zero.mask = std::vector<int32_t>(kShape.seq, 0);
  zero.positions = zero.maskedIds = std::vector<int32_t>(kShape.predictions, 0);
  zero.weights = std::vector<float>(kShape.predictions, 0.0f);
  EXPECT_EQ(rowOf(out, 3), zero);
  EXPECT_EQ(rowOf(out, 4), zero);
  EXPECT_EQ(out.nspWeights, (std::vector<float>{1, 1, 1, 0, 0}));

  EXPECT_EQ(errorOf([&] { loader.readInOrder(18, 3, 5, out); }),
            "data.path: samples [18, 21) requested but the files hold 20 "
            "samples");
  EXPECT_THROW(loader.readInOrder(0, 6, 5, out), std::invalid_argument);
}

TEST_F(Loader, ErrorsOfTheFilesSurface) {
  writeFile(at("data/zz-junk"), "not data");
  EXPECT_THAT(errorOf([&] { DataLoader(data(), "auto", false, 1, kShape); }),
              HasSubstr(at("data/zz-junk") + ": is neither"));
  SampleShape longer = kShape;
  longer.seq = 32;
  EXPECT_THAT(errorOf([&] {
                DataLoader(at("data/part-a.hdf5"), "auto", false, 1, longer);
              }),
              HasSubstr("has shape [8, 16]; the model expects [N, 32]"));
}

} // namespace
