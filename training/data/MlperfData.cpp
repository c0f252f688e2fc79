// The parts of MlperfData.h shared by both formats: the value checks of
// SampleChecks.h, data.path expansion, and the choice of reader by
// data.format or by the file's first bytes.
#include "training/data/MlperfData.h"

#include "training/data/Crc32c.h"
#include "training/data/SampleChecks.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <glob.h>
#include <stdexcept>
#include <system_error>

namespace ferry::data {

namespace detail {

const char *fieldName(Field field) {
  switch (field) {
  case Field::InputIds:
    return "input_ids";
  case Field::InputMask:
    return "input_mask";
  case Field::SegmentIds:
    return "segment_ids";
  case Field::MaskedPositions:
    return "masked_lm_positions";
  case Field::MaskedIds:
    return "masked_lm_ids";
  case Field::NspLabels:
    return "next_sentence_labels";
  case Field::SequenceIds:
    return "sequence_ids";
  case Field::SampleIndex:
    return "sample_index";
  }
  return "?";
}

void checkValue(const std::string &where, Field field, int64_t index,
                int64_t value, const SampleShape &shape) {
  int64_t limit = 2; // the 0/1 features
  std::string expected;
  switch (field) {
  case Field::InputIds:
  case Field::MaskedIds:
    limit = shape.vocab;
    expected = "token ids in [0, " + std::to_string(limit) +
               ") (model.vocab_size " + std::to_string(limit) +
               "); check that model.vocab_size matches the vocabulary the "
               "data was made with";
    break;
  case Field::SegmentIds:
    limit = shape.typeVocab;
    expected = "segment ids in [0, " + std::to_string(limit) +
               ") (model.type_vocab_size " + std::to_string(limit) + ")";
    break;
  case Field::MaskedPositions:
    limit = shape.seq;
    expected = "positions in [0, " + std::to_string(limit) +
               ") (model.seq_length " + std::to_string(limit) +
               "); check that model.seq_length matches the data";
    break;
  case Field::InputMask:
  case Field::NspLabels:
    expected = "0 or 1";
    break;
  case Field::SequenceIds:
    limit = shape.packs + 1;
    expected = "0 (padding) to " + std::to_string(shape.packs) +
               " (model.max_sequences_per_pack); set "
               "model.max_sequences_per_pack to the packing the data was "
               "made with";
    break;
  case Field::SampleIndex:
    if (value >= -1 && value <= INT32_MAX)
      return;
    expected = "-1 (no sequence) or a sample index";
    break;
  }
  if (value >= 0 && value < limit)
    return;
  throw DataError(where + ": " + fieldName(field) + "[" +
                  std::to_string(index) + "] is " + std::to_string(value) +
                  "; expected " + expected);
}

void checkWeight(const std::string &where, int64_t index, float weight,
                 bool &sawZero) {
  if (weight != 0.0f && weight != 1.0f) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", static_cast<double>(weight));
    throw DataError(where + ": masked_lm_weights[" + std::to_string(index) +
                    "] is " + text + "; expected 0 or 1");
  }
  if (weight == 0.0f) {
    sawZero = true;
  } else if (sawZero) {
    throw DataError(where + ": masked_lm_weights[" + std::to_string(index) +
                    "] is 1 after a slot with weight 0; the counted masked "
                    "slots must come first (pad the masked_lm_* features at "
                    "the end)");
  }
}

void checkRow(const std::string &where, const HostBatch &batch, int64_t row,
              const SampleShape &shape) {
  auto checkAll = [&](Field field, const std::vector<int32_t> &values,
                      int64_t width) {
    const int32_t *first = values.data() + row * width;
    for (int64_t j = 0; j < width; ++j)
      checkValue(where, field, j, first[j], shape);
  };
  checkAll(Field::InputIds, batch.inputIds, batch.seq);
  checkAll(Field::InputMask, batch.inputMask, batch.seq);
  checkAll(Field::SegmentIds, batch.segmentIds, batch.seq);
  checkAll(Field::MaskedPositions, batch.maskedPositions, batch.predictions);
  checkAll(Field::MaskedIds, batch.maskedIds, batch.predictions);
  checkAll(Field::NspLabels, batch.nspLabels, batch.packs);
  if (batch.packs > 1)
    checkAll(Field::SampleIndex, batch.sampleIndex, batch.packs);
  bool sawZero = false;
  for (int64_t j = 0; j < batch.predictions; ++j)
    checkWeight(where, j, batch.maskedWeights[row * batch.predictions + j],
                sawZero);
}

void checkBatchLayout(const char *who, const HostBatch &batch) {
  auto size = [](int64_t rows, int64_t width) {
    return static_cast<size_t>(rows * width);
  };
  size_t tokens = size(batch.samples, batch.seq);
  size_t slots = size(batch.samples, batch.predictions);
  size_t rows = size(batch.samples, batch.packs);
  bool packed = batch.packs > 1;
  if (batch.packs < 1 || batch.sequenceIds.size() != (packed ? tokens : 0) ||
      batch.positionIds.size() != (packed ? tokens : 0) ||
      batch.clsPositions.size() != (packed ? rows : 0) ||
      batch.sampleIndex.size() != (packed ? rows : 0))
    throw std::invalid_argument(
        std::string(who) +
        ": the HostBatch's packed fields do not have the sizes its samples, "
        "seq and packs give (use HostBatch::resize)");
  if (batch.samples < 0 || batch.seq <= 0 || batch.predictions <= 0 ||
      batch.inputIds.size() != tokens || batch.segmentIds.size() != tokens ||
      batch.inputMask.size() != tokens ||
      batch.maskedPositions.size() != slots ||
      batch.maskedIds.size() != slots || batch.maskedWeights.size() != slots ||
      batch.nspLabels.size() != rows || batch.nspWeights.size() != rows)
    throw std::invalid_argument(
        std::string(who) +
        ": the HostBatch's fields do not have the sizes its samples, seq "
        "and predictions give (use HostBatch::resize)");
}

} // namespace detail

namespace {

bool isPattern(const std::string &path) {
  return path.find_first_of("*?[") != std::string::npos;
}

std::vector<std::string> expandGlob(const std::string &pattern) {
  glob_t matches{};
  int status = ::glob(pattern.c_str(), 0, nullptr, &matches);
  std::vector<std::string> files;
  if (status == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) {
      std::error_code error;
      if (std::filesystem::is_regular_file(matches.gl_pathv[i], error))
        files.emplace_back(matches.gl_pathv[i]);
    }
  }
  ::globfree(&matches);
  if (status != 0 && status != GLOB_NOMATCH)
    throw DataError("data.path '" + pattern +
                    "': the pattern could not be expanded (glob error " +
                    std::to_string(status) + ")");
  if (files.empty())
    throw DataError("data.path '" + pattern + "' matches no files");
  return files;
}

std::vector<std::string> listDirectory(const std::string &path) {
  std::vector<std::string> files;
  std::error_code error;
  std::filesystem::directory_iterator it(path, error), end;
  if (error)
    throw DataError("data.path '" + path + "': cannot list the directory (" +
                    error.message() + ")");
  for (; it != end; it.increment(error)) {
    if (error)
      break;
    std::string name = it->path().filename().string();
    std::error_code statError;
    if (name.empty() || name[0] == '.' ||
        !std::filesystem::is_regular_file(it->path(), statError))
      continue;
    files.push_back(it->path().string());
  }
  if (error)
    throw DataError("data.path '" + path + "': cannot list the directory (" +
                    error.message() + ")");
  if (files.empty())
    throw DataError("data.path '" + path +
                    "' is a directory with no data files (hidden files are "
                    "skipped)");
  return files;
}

} // namespace

std::vector<std::string> expandDataPath(const std::string &path) {
  if (path.empty())
    throw DataError("data.path is empty; set it to a file, a directory or a "
                    "glob pattern of HDF5 or TFRecord files");
  std::vector<std::string> files;
  std::error_code error;
  auto status = std::filesystem::status(path, error);
  if (isPattern(path) && !std::filesystem::exists(status)) {
    files = expandGlob(path);
  } else if (std::filesystem::is_directory(status)) {
    files = listDirectory(path);
  } else if (std::filesystem::is_regular_file(status)) {
    files.push_back(path);
  } else if (std::filesystem::exists(status)) {
    throw DataError("data.path '" + path +
                    "' is neither a regular file nor a directory");
  } else {
    throw DataError("data.path '" + path + "': no such file or directory");
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::unique_ptr<SampleFile> openSampleFile(const std::string &path,
                                           const std::string &format,
                                           const SampleShape &shape) {
  if (format == "hdf5")
    return openHdf5(path, shape);
  if (format == "tfrecord")
    return openTfRecord(path, shape);
  if (format != "auto")
    throw DataError("data.format '" + format +
                    "' is not one of auto, hdf5, tfrecord");

  unsigned char head[12] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
  in.read(reinterpret_cast<char *>(head), sizeof head);
  auto got = static_cast<size_t>(in.gcount());

  static const unsigned char kHdf5Signature[8] = {0x89, 'H',  'D',  'F',
                                                  '\r', '\n', 0x1a, '\n'};
  if (got >= 8 && std::memcmp(head, kHdf5Signature, 8) == 0)
    return openHdf5(path, shape);
  if (got == 12) {
    uint32_t stored = 0;
    for (int i = 0; i < 4; ++i)
      stored |= static_cast<uint32_t>(head[8 + i]) << (8 * i);
    if (maskCrc32c(crc32c(head, 8)) == stored)
      return openTfRecord(path, shape);
  }
  if (got == 0)
    throw DataError(path + ": is empty, so its format cannot be detected; "
                           "remove it from data.path, or set data.format to "
                           "tfrecord if it is meant as a TFRecord file of no "
                           "records");
  throw DataError(path +
                  ": is neither an HDF5 file (no HDF5 signature at byte 0) "
                  "nor a TFRecord file (the first 12 bytes are not a record "
                  "length with its CRC32C); if it is one of them, set "
                  "data.format to hdf5 or tfrecord (HDF5 files with a user "
                  "block are not detected)");
}

} // namespace ferry::data
