// The one training loop, for every task, on any backend: loads an
// executable's train_step, feeds it the task's batches (BatchSource.h:
// pretraining's by default, SQuAD's for `ferry squad train`), runs the
// updates, evaluates, saves and resumes checkpoints and reports the metrics
// (console progress lines, JSON lines, TensorBoard). It also evaluates
// pretraining's eval_step for `ferry eval`. Loss scaling (LossScale.h), stop
// signals (StopSignals.h) and the resume config check (ResumeCheck.h) are
// their own pieces.
#pragma once

#include "runtime/backend/Backend.h"
#include "runtime/comm/Communicator.h"
#include "runtime/comm/Mesh.h"
#include "training/config/Config.h"
#include "training/metrics/MetricsWriter.h"
#include "training/train/BatchSource.h"
#include "training/train/LossScale.h"
#include "training/train/StopSignals.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ferry {

struct TrainOptions {
  int64_t steps = 0;       // total optimizer updates of the run (a resumed run
                           // continues up to it)
  int64_t logEvery = 0;    // progress line every N updates (and the last)
  std::string metricsPath; // JSON lines ("" = none)
  std::string tensorboardDir; // TensorBoard event files ("" = none)
  std::string saveDir;        // "" = no checkpoints
  bool saveInitial = false;   // also save the starting weights as step 0
  bool quiet = false;         // no progress lines and no loss-scale notes
  std::string checkpointNote; // appended to "saved checkpoint DIR"
};

// A tensor the evaluation program stores per sample (an @output.eval.*
// state, e.g. sequence_output [samples, seq, hidden]), over the evaluated
// samples in file order.
struct EvalOutput {
  std::string name; // without "output.eval."
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct RunResult {
  StepMetrics last;
  int stopSignal = 0;         // SIGINT/SIGTERM that ended the run early
  bool reachedTarget = false; // training.target_mlm_accuracy reached
  std::string lastCheckpoint; // step directory written last ("" = none)
};

// Throws RuntimeError, before any work, when execution.tensor_parallel x
// execution.data_parallel differs from the group's size (naming both and
// how to start the run).
void checkReplicaCount(const Config &config, const comm::Communicator &group);

// With replicas (execution.data_parallel > 1), every process of the group
// constructs a Trainer on the same executable and config: each reads its
// rows of every global batch (rank r: rows [r * B/N, (r + 1) * B/N)), the
// program sums gradients and metrics over the group, and only rank 0 prints,
// writes metrics and writes checkpoints (the others pass no output).
class Trainer {
public:
  // `group`: the job's processes (null: this process alone); it must
  // outlive the trainer and have execution.tensor_parallel x
  // execution.data_parallel ranks. With tensor parallelism the trainer
  // splits it into the mesh (comm/Mesh.h): the data group shards the
  // batches, the tensor group runs the layers' collectives. `source`: the
  // task's batches (null: pretraining's, from config.data).
  Trainer(const ExecutableFile &executable, const Config &config,
          comm::Communicator *group = nullptr,
          std::unique_ptr<BatchSource> source = nullptr);
  ~Trainer();

  // Starts from a safetensors file with Hugging Face names (the optimizer
  // starts fresh; the task's new head keeps its initialisation when the
  // file has none). Prints what it did to `out`.
  void initFromCheckpoint(const std::string &path, std::FILE *out);
  // Continues from a checkpoint (a save directory's latest, or one step
  // directory): parameters, optimizer state, step and data position.
  void resume(const std::string &dir, std::FILE *out);
  int64_t stepsDone() const { return stepsDone_; }

  // One optimizer update (s = updates already applied); returns its metrics.
  StepMetrics step(int64_t s);
  // Runs updates until options.steps have been applied, evaluating and
  // saving as the config says, printing progress to `out`.
  RunResult run(const TrainOptions &options, std::FILE *out);
  // Pretraining's forward pass without dropout over `samples` samples (0:
  // all) of `path`, in file order. With `outputs`, also collects every
  // per-sample output the program stores (one process only; fp32).
  EvalMetrics evaluate(const std::string &path, int64_t samples,
                       std::vector<EvalOutput> *outputs = nullptr);

  Backend &backend() { return *backend_; }

private:
  std::string save(const std::string &dir, int64_t steps);

  const ExecutableFile &exe_;
  Config config_;
  // The groups come before the backend and the batches, which use them:
  // they outlive both.
  comm::Communicator *group_ = nullptr;          // the job
  std::unique_ptr<comm::Communicator> ownGroup_; // when none was given
  comm::Mesh mesh_;                              // tensor parallelism's groups
  comm::Communicator *data_ = nullptr;           // the data-parallel replicas
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<BatchSource> source_;
  // Any rank's stop signal stops every rank after the same update.
  int agreedStopSignal();
  bool isRankZero() const { return group_->rank() == 0; }

  bool replicaInput_ = false; // train_step takes its replica's rank
  int64_t stepsDone_ = 0;
  DynamicLossScale lossScale_; // fp16 only
  int64_t skipped_ = 0;        // updates skipped on overflow
};

} // namespace ferry
