// A batch of MLPerf pretraining samples in host memory, as the program's
// inputs take it: what every data source (synthetic, HDF5, TFRecord) fills.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferry::data {

// Row-major: [samples, seq] for the token fields, [samples, predictions] for
// the masked-LM fields, [samples, packs] for the NSP fields. A masked slot
// counts when its weight is 1; slots after the last counted one have
// position 0, id 0 and weight 0 (so the HDF5 rule, "counted when before the
// first zero position", agrees). nspWeights is 1 for a real sample and 0 for
// a row that only pads a partial evaluation batch (its masked weights are 0
// too).
//
// Packed rows (packs > 1, model.max_sequences_per_pack) hold up to `packs`
// sequences one after another, then padding: sequenceIds [samples, seq] is
// 1..k on each sequence's tokens and 0 on padding; positionIds [samples,
// seq] restarts at 0 on each sequence; clsPositions [samples, packs] is the
// first token of each sequence; NSP entry j is sequence j + 1's (weight 0
// past the row's last sequence). sampleIndex [samples, packs] is each
// sequence's index in the unpacked data it was packed from (-1: none), for
// the files ferry-datagen --pack writes. dropoutKeys [samples, seq, 2] is
// each token's (sample key, position in its sample): the dropout of a
// packed row takes the decisions of the unpacked samples
// (runtime/kernels/DropoutKeys.h). `samples` counts rows throughout. With
// packs 1 these five fields are empty.
struct HostBatch {
  int64_t samples = 0, seq = 0, predictions = 0, packs = 1;
  std::vector<int32_t> inputIds, segmentIds, inputMask;
  std::vector<int32_t> maskedPositions, maskedIds;
  std::vector<float> maskedWeights;
  std::vector<int32_t> nspLabels;
  std::vector<float> nspWeights;
  std::vector<int32_t> sequenceIds, positionIds, clsPositions, sampleIndex;
  std::vector<int32_t> dropoutKeys;

  // Sizes every field for `rows` rows, all zero (sampleIndex -1).
  void resize(int64_t rows, int64_t seqLength, int64_t maxPredictions,
              int64_t sequencesPerRow = 1) {
    samples = rows;
    seq = seqLength;
    predictions = maxPredictions;
    packs = sequencesPerRow;
    for (auto *v : {&inputIds, &segmentIds, &inputMask})
      v->assign(static_cast<std::size_t>(rows * seqLength), 0);
    for (auto *v : {&maskedPositions, &maskedIds})
      v->assign(static_cast<std::size_t>(rows * maxPredictions), 0);
    maskedWeights.assign(static_cast<std::size_t>(rows * maxPredictions), 0.0f);
    std::size_t nsp = static_cast<std::size_t>(rows * packs);
    nspLabels.assign(nsp, 0);
    nspWeights.assign(nsp, 0.0f);
    bool packed = packs > 1;
    for (auto *v : {&sequenceIds, &positionIds})
      v->assign(packed ? static_cast<std::size_t>(rows * seqLength) : 0, 0);
    clsPositions.assign(packed ? nsp : 0, 0);
    sampleIndex.assign(packed ? nsp : 0, -1);
    dropoutKeys.assign(
        packed ? static_cast<std::size_t>(2 * rows * seqLength) : 0, 0);
  }

  // Sum of nspWeights: the real sequences of the batch.
  double realSequences() const {
    double total = 0.0;
    for (float weight : nspWeights)
      total += weight;
    return total;
  }

  // Tokens of real sequences (input_mask 1).
  int64_t realTokens() const {
    int64_t total = 0;
    for (int32_t m : inputMask)
      total += m != 0;
    return total;
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
