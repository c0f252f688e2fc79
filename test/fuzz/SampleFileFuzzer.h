// The HDF5 and TFRecord targets' shared body: open the input as a sample file
// for a small model and read its first samples, as the data loader would.
#pragma once

#include "training/data/HostBatch.h"
#include "training/data/MlperfData.h"
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

// Reads the input for a model of one sequence a row and for one of up to 3
// (packed rows, as ferry-datagen --pack writes them for --seq 16).
template <typename Open>
int readSampleFile(const uint8_t *bytes, size_t size, const std::string &path,
                   Open open) {
  writeInput(path, bytes, size);
  for (int64_t packs : {1, 3}) {
    try {
      data::SampleShape shape = fuzzSampleShape();
      shape.packs = packs;
      std::unique_ptr<data::SampleFile> file = open(path, shape);
      if (packs > 1 && file->packedRows())
        file->packedSequences();
      data::HostBatch batch;
      batch.resize(1, shape.seq, shape.predictions, shape.packs);
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
  }
  return 0;
}

} // namespace ferry::fuzz
