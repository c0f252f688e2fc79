// Checkpoints: the model's parameters under their Hugging Face
// BertForPreTraining names (import and export), and training checkpoints that
// resume a run exactly.
//
// A save directory holds one directory per saved step and a `latest` marker:
//
//   DIR/step-00000040/model.safetensors      parameters, HF names, fp32,
//                                            vocab_size rows
//   DIR/step-00000040/optimizer.safetensors  Adam/LAMB moments, named
//                                            optimizer.m.<hf> /
//                                            optimizer.v.<hf>
//   DIR/step-00000040/trainer.json           step, data position, seed, config
//   DIR/step-00000040/config.json            transformers' BertConfig
//                                            (HfConfig.h): from_pretrained
//                                            loads the step directory
//   DIR/latest                               "step-00000040", written last
//
// A step directory is written as DIR/.tmp-step-... and renamed, so a reader
// never sees half of one; `latest` is replaced atomically after the rename.
// The step counter, the data position (samples consumed) and the seed are
// the whole random state: dropout and shuffling are keyed by them.
#pragma once

#include "runtime/backend/Backend.h"
#include "training/checkpoint/Safetensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::ckpt {

// Tensors of the states with `role` under their HF names: stacked states split
// into one tensor per layer ("{}" in the name = the layer), the padded
// vocabulary rows (past init_rows) left out. fp32. A sharded state
// (replicated tensor sharding) is gathered whole from the replicas: every
// rank must call this, in the same order; ranks other than 0 take part in
// the gathers and get no tensors.
std::vector<Tensor> exportStates(const fxe::Executable &exe, Backend &backend,
                                 fxe::Role role);

struct ImportReport {
  int64_t tensors = 0;             // states filled
  std::vector<std::string> unused; // tensors of the file ferry has no use for
  std::vector<std::string> notes;  // vocabulary padded or trimmed, aliases
};

// Fills the states with `role` from `file`. Parameters accept F32, F16 and
// BF16; the vocabulary may hold more rows than the model (the extra rows are
// dropped) but not fewer; cls.predictions.decoder.weight (the tied word
// embedding) and cls.predictions.decoder.bias (= cls.predictions.bias) are
// optional aliases that must agree with what they alias. Tensors whose name
// starts with `newHeadPrefix` (a task head being fine-tuned from a
// pretraining checkpoint, e.g. "qa_outputs.") may be missing: they keep
// their initialisation, with a note. Throws CheckpointError listing every
// other missing tensor and every mismatched shape.
ImportReport importStates(const fxe::Executable &exe, Backend &backend,
                          fxe::Role role, const SafetensorsFile &file,
                          const std::string &newHeadPrefix = "");

// What a training checkpoint records besides the tensors.
struct TrainerState {
  int64_t step = 0;         // optimizer updates applied
  int64_t dataPosition = 0; // training samples consumed (global)
  int64_t seed = 0;         // training.seed
  std::string configText;   // Config::canonicalText() of the run
  // fp16 loss scaling (0: none): the scale, clean updates since it last
  // changed, updates skipped so far (optimizer updates = step - skipped).
  double lossScale = 0;
  int64_t lossScaleCleanSteps = 0, skippedUpdates = 0;
  // config.json beside model.safetensors ("" = none): HfConfig.h.
  std::string huggingFaceConfig;
};

// Writes DIR/step-<step>/ and then DIR/latest; removes the oldest step
// directories beyond `keep`. Returns the step directory's path. With
// replicas every rank calls it (to gather the shards) and only rank 0
// writes; the others return "".
std::string saveCheckpoint(const std::string &dir, const fxe::Executable &exe,
                           Backend &backend, const TrainerState &state,
                           int64_t keep);

// DIR's latest checkpoint when DIR is a save directory (it has `latest`) or
// its `latest` file, else DIR itself when it is a step directory (it has
// trainer.json).
// Throws CheckpointError saying what DIR holds otherwise.
std::string resolveCheckpointDir(const std::string &dir);

// Loads a step directory into the backend's parameters and optimizer state
// (a sharded state keeps this replica's shard of the whole tensor)
// (shapes must match exactly) and returns its trainer state.
TrainerState loadCheckpoint(const std::string &stepDir,
                            const fxe::Executable &exe, Backend &backend);

// The model file a user means by PATH: PATH itself when it is a file,
// PATH/model.safetensors for a step directory, the latest step's for a save
// directory or its `latest` file.
std::string modelFileOf(const std::string &path);

} // namespace ferry::ckpt
