// trainer.json, the part of a training checkpoint that is not tensors: the
// step, the data position, the seed, the run's config and the fp16 loss
// scaling state (Checkpoint.h), as a JSON object with a checksum.
//
//   {"checksum": "xxh64:<16 hex digits>", "config": "...", "data_position": 640,
//    "format_version": 2, "seed": 42, "step": 40}
//
// The checksum is the xxHash64 (seed 0) of the object without its checksum
// field, serialised compactly with sorted keys (nlohmann::json's dump()), so
// any edit to any field is caught. Version 1 files (no checksum) are still
// read. Every field is checked: its type (integers must be integers that fit
// in int64), its range, unknown fields, and that `seed` is the seed of the
// config it records.
#pragma once

#include "training/checkpoint/Checkpoint.h"

#include <string>

namespace ferry::ckpt {

// The text of trainer.json for `state`, checksum included.
std::string trainerJsonText(const TrainerState &state);

// Parses and checks trainer.json's text; `path` names it in messages. Throws
// CheckpointError naming the file, the field, the value and the fix.
TrainerState parseTrainerJson(const std::string &text, const std::string &path);

} // namespace ferry::ckpt
