// The HDF5 and TFRecord targets' shared body: open the input as a sample file
// for a small model and read its first samples, as the data loader would.
#pragma once

#include "runtime/data/HostBatch.h"
#include "runtime/data/MlperfData.h"
#include "test/fuzz/FuzzFile.h"

#include <algorithm>

namespace ferry::fuzz {

// The shape of the seeds scripts/fuzz.sh makes (ferry-datagen --seq 16
// --predictions 4 --vocab 64).
inline data::SampleShape fuzzSampleShape() {
  data::SampleShape shape;
  shape.seq = 16;
  shape.predictions = 4;
  shape.vocab = 64;
  shape.typeVocab = 2;
  return shape;
}

template <typename Open>
int readSampleFile(const uint8_t *bytes, size_t size, const std::string &path,
                   Open open) {
  writeInput(path, bytes, size);
  try {
    data::SampleShape shape = fuzzSampleShape();
    std::unique_ptr<data::SampleFile> file = open(path, shape);
    data::HostBatch batch;
    batch.resize(1, shape.seq, shape.predictions);
    int64_t n = std::min<int64_t>(file->samples(), 16);
    for (int64_t i = 0; i < n; ++i)
      file->read(i, batch, 0);
    // Past the end is an error, not a read.
    try {
      file->read(file->samples(), batch, 0);
      __builtin_trap();
    } catch (const data::DataError &) {
    }
  } catch (const data::DataError &) {
  }
  return 0;
}

} // namespace ferry::fuzz
