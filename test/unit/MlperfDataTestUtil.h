// Helpers of the MLPerf data tests (MlperfDataTest.cpp, DataLoaderTest.cpp):
// batches made by hand whose rows can be told apart, and a fixture with a
// temporary directory and files written with the HDF5 C API.
#pragma once

#include "training/data/Crc32c.h"
#include "training/data/MlperfData.h"
#include "training/data/tf_example.pb.h"
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

namespace ferry::test::mlperf {

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

inline uint32_t mix(uint32_t x) { // a small integer hash: random-looking values
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// `rows` valid samples; sample r has token 1 = tag + r (its identity),
// 8..16 real tokens, 1..4 counted masked slots and a random NSP label.
inline HostBatch makeBatch(int64_t rows, int tag) {
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

inline std::ostream &operator<<(std::ostream &os, const Row &row) {
  return os << "{ids " << row.ids << " segments " << row.segments << " mask "
            << row.mask << " positions " << row.positions << " maskedIds "
            << row.maskedIds << " weights " << row.weights << " label "
            << row.label << " nspWeight " << row.nspWeight << "}";
}

template <typename T>
inline std::vector<T> slice(const std::vector<T> &v, int64_t row,
                            int64_t width) {
  return std::vector<T>(v.begin() + row * width, v.begin() + (row + 1) * width);
}

inline Row rowOf(const HostBatch &b, int64_t r) {
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

inline std::vector<Row> rowsOf(const HostBatch &b) {
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

inline void writeRawHdf5(const std::string &path,
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
inline std::vector<RawDataset> rawDatasets(const HostBatch &b) {
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

inline RawDataset &datasetNamed(std::vector<RawDataset> &sets,
                                const std::string &name) {
  for (RawDataset &d : sets)
    if (d.name == name)
      return d;
  throw std::logic_error("no dataset " + name);
}

inline std::string frameRecord(const std::string &data) {
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
inline std::vector<std::string> recordsOf(const std::string &path) {
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
inline std::vector<size_t> recordOffsets(const std::string &path) {
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
inline void editRecord(const std::string &path, size_t index,
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

inline ferry::tf::Feature &featureOf(ferry::tf::Example &example,
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
    out.resize(file->samples(), shape.seq, shape.predictions, shape.packs);
    for (int64_t i = file->samples() - 1; i >= 0; --i) // any order
      file->read(i, out, i);
    return out;
  }

  std::string dir;
};

} // namespace ferry::test::mlperf
