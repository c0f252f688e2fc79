// Packed rows: several samples one after another in one row of `seq`
// tokens (ferry-datagen --pack, model.max_sequences_per_pack), and the
// per-token fields the model reads that the files do not store: position
// ids restarting per sequence, each sequence's [CLS] position and the NSP
// weights.
#pragma once

#include "training/data/HostBatch.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::data {

// Completes row `row` of a batch with packs > 1 after a reader filled the
// stored fields. `packedFile`: the file held sequence_ids (already in the
// row) and up to `packs` NSP labels; otherwise the file was unpacked, the
// row's one sequence is its input_mask's tokens and its NSP label sits in
// entry 0. Sets positionIds, clsPositions, nspWeights (1 for each sequence)
// and zeroes the NSP labels past the last sequence. Throws DataError naming
// `where` unless the sequence ids run 1, 2, ..., k in contiguous blocks from
// token 0, then only padding (0), with input_mask 1 exactly on the
// sequences' tokens and k <= packs.
void completePackedRow(const std::string &where, HostBatch &batch, int64_t row,
                       bool packedFile);

// Packs samples of the unpacked batch `in` (packs 1) into rows of up to
// `packs` (>= 2) sequences: row r holds the samples groups[r] in that order,
// their masked slots one after another (positions moved with their sample). A
// group whose samples together have more than in.predictions masked slots
// keeps the samples that fit and continues in a new row, so a few groups
// may take two rows. Throws std::invalid_argument when a group has more than
// `packs` samples, its tokens exceed in.seq, or an index is out of range.
HostBatch packRows(const HostBatch &in,
                   const std::vector<std::vector<int64_t>> &groups,
                   int64_t packs);

// Sets row `row`'s dropout keys: token t of sequence j takes
// (sequenceKeys[j], its position in the sequence); padding (0, 0). Call
// after completePackedRow.
void setDropoutKeys(HostBatch &batch, int64_t row,
                    const std::vector<uint32_t> &sequenceKeys);

// Turns an unpacked batch (packs 1, e.g. synthetic data) into the layout of
// rows of up to `packs` (>= 2) sequences, each row holding its one sample;
// row r's dropout key is firstPosition + r, the sample's run position, as
// the unpacked model keys it.
void widenToPacks(HostBatch &batch, int64_t packs, int64_t firstPosition);

// A sample's length: its input_mask's ones.
int64_t sampleLength(const HostBatch &batch, int64_t row);

} // namespace ferry::data
