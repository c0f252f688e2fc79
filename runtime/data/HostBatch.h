// A batch of MLPerf pretraining samples in host memory, as the program's
// inputs take it: what every data source (synthetic, HDF5, TFRecord) fills.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferry::data {

// Row-major: [samples, seq] for the token fields, [samples, predictions] for
// the masked-LM fields, [samples] for the NSP fields. A masked slot counts
// when its weight is 1; slots after the last counted one have position 0,
// id 0 and weight 0 (so the HDF5 rule, "counted when before the first zero
// position", agrees). nspWeights is 1 for a real sample and 0 for a row that
// only pads a partial evaluation batch (its masked weights are 0 too).
struct HostBatch {
  int64_t samples = 0, seq = 0, predictions = 0;
  std::vector<int32_t> inputIds, segmentIds, inputMask;
  std::vector<int32_t> maskedPositions, maskedIds;
  std::vector<float> maskedWeights;
  std::vector<int32_t> nspLabels;
  std::vector<float> nspWeights;

  // Sizes every field for `rows` samples, all zero.
  void resize(int64_t rows, int64_t seqLength, int64_t maxPredictions) {
    samples = rows;
    seq = seqLength;
    predictions = maxPredictions;
    for (auto *v : {&inputIds, &segmentIds, &inputMask})
      v->assign(static_cast<std::size_t>(rows * seqLength), 0);
    for (auto *v : {&maskedPositions, &maskedIds})
      v->assign(static_cast<std::size_t>(rows * maxPredictions), 0);
    maskedWeights.assign(static_cast<std::size_t>(rows * maxPredictions), 0.0f);
    nspLabels.assign(static_cast<std::size_t>(rows), 0);
    nspWeights.assign(static_cast<std::size_t>(rows), 0.0f);
  }

  // Sum of maskedWeights over the batch.
  double countedSlots() const {
    double total = 0.0;
    for (float weight : maskedWeights)
      total += weight;
    return total;
  }
};

} // namespace ferry::data
