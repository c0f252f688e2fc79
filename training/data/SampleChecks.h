// Internal to the MLPerf data readers (MlperfData.cpp, Hdf5File.cpp,
// TfRecordFile.cpp, DataLoader.cpp): the value checks every sample passes
// and the error messages they give, shared so that HDF5 and TFRecord data
// are judged by the same rules and the same words.
#pragma once

#include "training/data/DataError.h"
#include "training/data/HostBatch.h"

#include <cstdint>
#include <string>

namespace ferry::data::detail {

// The integer features of a sample.
enum class Field {
  InputIds,
  InputMask,
  SegmentIds,
  MaskedPositions,
  MaskedIds,
  NspLabels,
  SequenceIds, // packed files only
  SampleIndex  // packed files only (written, not read)
};

// The feature's name in both formats ("input_ids", ...).
const char *fieldName(Field field);

// Throws DataError "<where>: <feature>[<index>] is <value>; expected ..."
// unless `value` lies in the feature's range for `shape`. `where` names the
// file and the sample ("a.hdf5: sample 3", "b.tfrecord: record 3").
void checkValue(const std::string &where, Field field, int64_t index,
                int64_t value, const SampleShape &shape);

// Checks masked_lm_weights[index] == `weight` is 0 or 1 and that no counted
// slot follows an uncounted one (`sawZero`: an earlier slot had weight 0;
// updated).
void checkWeight(const std::string &where, int64_t index, float weight,
                 bool &sawZero);

// Checks every integer value of row `row` of `batch` (checkValue) and its
// masked weights (checkWeight).
void checkRow(const std::string &where, const HostBatch &batch, int64_t row,
              const SampleShape &shape);

// Throws std::invalid_argument unless every field of `batch` has the size
// its samples, seq and predictions give (`who` names the caller).
void checkBatchLayout(const char *who, const HostBatch &batch);

} // namespace ferry::data::detail
