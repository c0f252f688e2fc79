// The task half of a training update: which rows a replica feeds
// train_step for update s, what the task's metrics are once it ran, and how
// its progress line reads. The Trainer (Trainer.h) owns the rest of the loop
// for every task alike: loss scaling, the step and replica inputs, stop
// signals, metrics files, checkpoints and resuming. PretrainingBatches.h
// (synthetic rows or the MLPerf loader) and training/squad/SquadBatches.h
// (SQuAD windows) implement it.
#pragma once

#include "runtime/backend/Backend.h"
#include "runtime/comm/Communicator.h"
#include "training/metrics/MetricsWriter.h"

#include <cstdint>
#include <string>

namespace ferry {

// What the global batch of one update held, summed over the replicas.
struct GlobalBatch {
  double samples = 0; // real samples (sequences; SQuAD windows)
  double tokens = 0;  // tokens that are not padding
  double counted = 0; // the task's normaliser (MLM slots; span slots)
};

// The updates since the last progress line.
struct ProgressWindow {
  int64_t steps = 0;
  double seconds = 0, samples = 0, loss = 0, padding = 0; // sums
};

class BatchSource {
public:
  virtual ~BatchSource() = default;

  // Writes this replica's rows of update `s` (0-based) of the global batch
  // into the program's inputs, with the normalisers of the whole global
  // batch (an all-reduce over `group`); returns the global batch's counts.
  // A pure function of s, so a resumed run feeds what an uninterrupted one
  // did.
  virtual GlobalBatch feed(int64_t s, Backend &backend,
                           comm::Communicator &group) = 0;
  // After train_step: the task's own metrics (StepMetrics::task).
  virtual void readMetrics(Backend &backend, const GlobalBatch &batch,
                           StepMetrics &m) const = 0;
  // The console line after update last.step of `steps`.
  virtual std::string progressLine(const StepMetrics &last, int64_t steps,
                                   const ProgressWindow &window) const = 0;
  // Whether the run's config asks for evaluations of this task during
  // training (training.eval_every_samples).
  virtual bool evaluates() const = 0;
  // Initialising from a checkpoint: the model's name in notes ("model",
  // "span model") and the prefix of its new head's tensors, which keep
  // their initialisation when the file has none ("" = none).
  virtual const char *modelName() const { return "model"; }
  virtual const char *newHeadPrefix() const { return ""; }
};

} // namespace ferry
