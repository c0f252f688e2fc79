// Packed rows: the fields derived from sequence ids, with their checks,
// and the packing of unpacked samples into rows (PackedRows.h).
#include "training/data/PackedRows.h"

#include "training/data/DataError.h"

#include <stdexcept>

namespace ferry::data {

int64_t sampleLength(const HostBatch &batch, int64_t row) {
  int64_t length = 0;
  for (int64_t t = 0; t < batch.seq; ++t)
    length += batch.inputMask[static_cast<size_t>(row * batch.seq + t)] != 0;
  return length;
}

void completePackedRow(const std::string &where, HostBatch &batch, int64_t row,
                       bool packedFile) {
  const int64_t seq = batch.seq, packs = batch.packs;
  int32_t *ids = batch.sequenceIds.data() + row * seq;
  int32_t *positions = batch.positionIds.data() + row * seq;
  const int32_t *mask = batch.inputMask.data() + row * seq;
  int32_t *cls = batch.clsPositions.data() + row * packs;
  int32_t *labels = batch.nspLabels.data() + row * packs;
  float *weights = batch.nspWeights.data() + row * packs;
  if (!packedFile) // one sequence: the input mask's tokens
    for (int64_t t = 0; t < seq; ++t)
      ids[t] = mask[t] != 0 ? 1 : 0;
  int32_t current = 0; // the last sequence seen
  int64_t start = 0;
  bool padding = false; // past the sequences
  for (int64_t t = 0; t < seq; ++t) {
    int32_t id = ids[t];
    if (id < 0 || id > packs)
      throw DataError(where + ": sequence_ids[" + std::to_string(t) + "] is " +
                      std::to_string(id) + "; expected 0 (padding) to " +
                      std::to_string(packs) +
                      " (model.max_sequences_per_pack): set "
                      "model.max_sequences_per_pack to the packing the data "
                      "was made with");
    if (id == 0) {
      padding = true;
    } else if (id != current || padding) {
      if (id != current + 1 || padding)
        throw DataError(
            where + ": sequence_ids[" + std::to_string(t) + "] is " +
            std::to_string(id) + " after " +
            std::to_string(padding ? 0 : current) +
            "; each row holds sequences 1, 2, ... in contiguous blocks from "
            "token 0, then padding 0 (the file is damaged or not made by a "
            "packer of this layout)");
      cls[id - 1] = static_cast<int32_t>(t);
      start = t;
      current = id;
    }
    if ((mask[t] != 0) != (id != 0))
      throw DataError(where + ": input_mask[" + std::to_string(t) + "] is " +
                      std::to_string(mask[t]) + " but sequence_ids[" +
                      std::to_string(t) + "] is " + std::to_string(id) +
                      "; the mask must be 1 exactly on the sequences' tokens");
    positions[t] = id != 0 ? static_cast<int32_t>(t - start) : 0;
  }
  for (int64_t j = 0; j < packs; ++j) {
    bool real = j < current;
    weights[j] = real ? 1.0f : 0.0f;
    if (!real) {
      labels[j] = 0;
      cls[j] = 0;
    }
  }
}

void setDropoutKeys(HostBatch &batch, int64_t row,
                    const std::vector<uint32_t> &sequenceKeys) {
  const int64_t seq = batch.seq;
  const int32_t *ids = batch.sequenceIds.data() + row * seq;
  const int32_t *positions = batch.positionIds.data() + row * seq;
  int32_t *keys = batch.dropoutKeys.data() + 2 * row * seq;
  for (int64_t t = 0; t < seq; ++t) {
    int32_t id = ids[t];
    bool real = id > 0 && static_cast<size_t>(id) <= sequenceKeys.size();
    keys[2 * t] =
        real ? static_cast<int32_t>(sequenceKeys[static_cast<size_t>(id - 1)])
             : 0;
    keys[2 * t + 1] = real ? positions[t] : 0;
  }
}

void widenToPacks(HostBatch &batch, int64_t packs, int64_t firstPosition) {
  if (batch.packs != 1 || packs < 2)
    throw std::invalid_argument("widenToPacks: an unpacked batch into "
                                "packs >= 2");
  std::vector<int32_t> labels = std::move(batch.nspLabels);
  std::vector<float> weights = std::move(batch.nspWeights);
  const int64_t rows = batch.samples;
  batch.packs = packs;
  batch.nspLabels.assign(static_cast<size_t>(rows * packs), 0);
  batch.nspWeights.assign(static_cast<size_t>(rows * packs), 0.0f);
  batch.sequenceIds.assign(static_cast<size_t>(rows * batch.seq), 0);
  batch.positionIds.assign(static_cast<size_t>(rows * batch.seq), 0);
  batch.clsPositions.assign(static_cast<size_t>(rows * packs), 0);
  batch.sampleIndex.assign(static_cast<size_t>(rows * packs), -1);
  batch.dropoutKeys.assign(static_cast<size_t>(2 * rows * batch.seq), 0);
  for (int64_t r = 0; r < rows; ++r) {
    batch.nspLabels[static_cast<size_t>(r * packs)] =
        labels[static_cast<size_t>(r)];
    completePackedRow("row " + std::to_string(r), batch, r, false);
    // A row that pads a partial batch stays weightless.
    batch.nspWeights[static_cast<size_t>(r * packs)] *=
        weights[static_cast<size_t>(r)];
    setDropoutKeys(batch, r, {static_cast<uint32_t>(firstPosition + r)});
  }
}

HostBatch packRows(const HostBatch &in,
                   const std::vector<std::vector<int64_t>> &groups,
                   int64_t packs) {
  if (in.packs != 1 || packs < 2)
    throw std::invalid_argument("packRows: an unpacked batch into packs >= 2");
  const int64_t seq = in.seq, p = in.predictions;
  // Rows as samples lists, a group split where its masked slots overflow.
  std::vector<std::vector<int64_t>> rows;
  for (const std::vector<int64_t> &group : groups) {
    if (static_cast<int64_t>(group.size()) > packs || group.empty())
      throw std::invalid_argument(
          "packRows: a group of " + std::to_string(group.size()) +
          " samples for rows of up to " + std::to_string(packs));
    rows.emplace_back();
    int64_t slots = 0, tokens = 0;
    for (int64_t i : group) {
      if (i < 0 || i >= in.samples)
        throw std::invalid_argument("packRows: sample " + std::to_string(i) +
                                    " of " + std::to_string(in.samples));
      int64_t counted = 0;
      for (int64_t j = 0; j < p; ++j)
        counted += in.maskedWeights[static_cast<size_t>(i * p + j)] != 0.0f;
      tokens += sampleLength(in, i);
      if (tokens > seq)
        throw std::invalid_argument(
            "packRows: a group's samples hold " + std::to_string(tokens) +
            " tokens; a row holds " + std::to_string(seq));
      if (slots + counted > p) {
        rows.emplace_back();
        slots = 0;
      }
      slots += counted;
      rows.back().push_back(i);
    }
  }

  HostBatch out;
  out.resize(static_cast<int64_t>(rows.size()), seq, p, packs);
  for (size_t r = 0; r < rows.size(); ++r) {
    int64_t at = 0, slot = 0;
    const int64_t row = static_cast<int64_t>(r);
    for (size_t k = 0; k < rows[r].size(); ++k) {
      const int64_t i = rows[r][k];
      const int64_t length = sampleLength(in, i);
      for (int64_t t = 0; t < length; ++t) {
        size_t from = static_cast<size_t>(i * seq + t);
        size_t to = static_cast<size_t>(row * seq + at + t);
        out.inputIds[to] = in.inputIds[from];
        out.segmentIds[to] = in.segmentIds[from];
        out.inputMask[to] = 1;
        out.sequenceIds[to] = static_cast<int32_t>(k + 1);
        out.positionIds[to] = static_cast<int32_t>(t);
      }
      for (int64_t j = 0; j < p; ++j) {
        size_t from = static_cast<size_t>(i * p + j);
        if (in.maskedWeights[from] == 0.0f)
          break; // the counted slots come first
        size_t to = static_cast<size_t>(row * p + slot++);
        out.maskedPositions[to] =
            static_cast<int32_t>(in.maskedPositions[from] + at);
        out.maskedIds[to] = in.maskedIds[from];
        out.maskedWeights[to] = 1.0f;
      }
      size_t nsp = static_cast<size_t>(row * packs) + k;
      out.nspLabels[nsp] = in.nspLabels[static_cast<size_t>(i)];
      out.nspWeights[nsp] = 1.0f;
      out.clsPositions[nsp] = static_cast<int32_t>(at);
      out.sampleIndex[nsp] = static_cast<int32_t>(i);
      at += length;
    }
  }
  return out;
}

} // namespace ferry::data
