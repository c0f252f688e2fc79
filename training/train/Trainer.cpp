// The training loop of `ferry train` and `ferry squad train`, and the
// evaluation of `ferry eval`.
#include "training/train/Trainer.h"
#include "runtime/AtomicFile.h"
#include "runtime/Progress.h"

#include "runtime/backend/ProgramIo.h"
#include "runtime/backend/Registry.h"
#include "training/checkpoint/Checkpoint.h"
#include "training/checkpoint/HfConfig.h"
#include "training/data/MlperfData.h"
#include "training/train/PretrainingBatches.h"
#include "training/train/ResumeCheck.h"
#include "training/train/StopSignals.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

using namespace ferry;

void ferry::checkReplicaCount(const Config &config,
                              const comm::Communicator &group) {
  int64_t tensor = config.execution.tensor_parallel;
  int64_t want = config.execution.data_parallel * tensor;
  if (want == group.size())
    return;
  if (tensor > 1)
    throw RuntimeError(fmt::format(
        "{}execution.tensor_parallel {} x execution.data_parallel {} needs {} "
        "processes, but {} {} started; start `mpirun -np {}`, or set "
        "data_parallel (or tensor_parallel) so that their product is {} (a "
        "compiled executable must be recompiled for it)",
        group.prefix(), tensor, config.execution.data_parallel, want,
        group.size(), group.size() == 1 ? "was" : "were", want, group.size()));
  if (group.size() == 1)
    throw RuntimeError(fmt::format(
        "execution.data_parallel is {} but ferry runs as one process; start "
        "{} processes with `mpirun -np {} ferry train ...` (or srun -n {}), "
        "or set execution.data_parallel=1",
        want, want, want, want));
  throw RuntimeError(fmt::format(
      "{}execution.data_parallel is {} but {} processes were started; start "
      "`mpirun -np {}`, or set execution.data_parallel={} (a compiled "
      "executable must be recompiled for it)",
      group.prefix(), want, group.size(), want, group.size()));
}

Trainer::Trainer(const ExecutableFile &executable, const Config &config,
                 comm::Communicator *group, std::unique_ptr<BatchSource> source)
    : exe_(executable), config_(config), group_(group),
      source_(std::move(source)), lossScale_(config) {
  if (!group_) {
    ownGroup_ = comm::singleProcess();
    group_ = ownGroup_.get();
  }
  checkReplicaCount(config_, *group_);
  data_ = group_;
  if (config_.execution.tensor_parallel > 1) {
    mesh_ = comm::openMesh(*group_,
                           static_cast<int>(config_.execution.tensor_parallel));
    data_ = mesh_.data.get();
  }
  if (!source_)
    source_ = std::make_unique<PretrainingBatches>(config_, *data_);
  backend_ =
      createBackend(exe_.root(), config_.execution.device_memory_limit, data_);
  backend_->setTensorGroup(mesh_.tensor.get());
  backend_->setGraphReplay(config_.execution.cuda_graphs);
  backend_->initialiseStates(static_cast<uint64_t>(config_.training.seed));
  for (const fxe::Program *prog : *exe_.root().programs())
    if (prog->name()->str() == "train_step")
      replicaInput_ = prog->inputs() && prog->inputs()->size() > 1;
}

Trainer::~Trainer() = default;

void Trainer::initFromCheckpoint(const std::string &path, std::FILE *out) {
  std::string file = ckpt::modelFileOf(path);
  ckpt::SafetensorsFile st = ckpt::readSafetensors(file);
  ckpt::ImportReport r =
      ckpt::importStates(exe_.root(), *backend_, fxe::Role_Parameter, st,
                         source_->newHeadPrefix());
  std::fprintf(out, "initialised %lld parameter tensors from %s\n",
               static_cast<long long>(r.tensors), file.c_str());
  for (const std::string &note : r.notes)
    std::fprintf(out, "  note: %s\n", note.c_str());
  if (!r.unused.empty())
    std::fprintf(out,
                 "  note: %zu tensor(s) of the file are not used by the "
                 "%s (first: %s)\n",
                 r.unused.size(), source_->modelName(),
                 r.unused.front().c_str());
}

void Trainer::resume(const std::string &dir, std::FILE *out) {
  std::string stepDir = ckpt::resolveCheckpointDir(dir);
  ckpt::TrainerState state =
      ckpt::loadCheckpoint(stepDir, exe_.root(), *backend_);
  if (state.dataPosition != state.step * config_.training.global_batch_size)
    throw RuntimeError(fmt::format(
        "{}: data_position {} is not step {} x training.global_batch_size {}; "
        "the checkpoint was written with another global batch size",
        stepDir, state.dataPosition, state.step,
        config_.training.global_batch_size));
  std::vector<std::string> changed =
      changedKeys(state.configText, config_.canonicalText());
  stepsDone_ = state.step;
  // Every replica must resume at the same step (one shared checkpoint, or
  // copies of it), or their collectives would not match.
  std::vector<std::string> steps =
      comm::gatherText(*group_, std::to_string(state.step) + " from " + stepDir,
                       "the comparison of the resumed steps");
  for (size_t r = 1; r < steps.size(); ++r)
    if (steps[r].substr(0, steps[r].find(' ')) !=
        steps[0].substr(0, steps[0].find(' ')))
      throw RuntimeError(fmt::format(
          "{}the replicas resume at different steps (rank 0: step {}; rank "
          "{}: step {}); give every rank the same checkpoint",
          group_->prefix(), steps[0], r, steps[r]));
  if (lossScale_.enabled() && state.lossScale > 0) {
    lossScale_.restore(state.lossScale, state.lossScaleCleanSteps);
    skipped_ = state.skippedUpdates;
  }
  std::fprintf(out, "resuming from %s at step %lld (%lld samples consumed)\n",
               stepDir.c_str(), static_cast<long long>(state.step),
               static_cast<long long>(state.dataPosition));
  if (!changed.empty()) {
    std::fprintf(out, "  warning: the config differs from the checkpoint's, "
                      "so the run will not equal an uninterrupted one:\n");
    for (const std::string &c : changed)
      std::fprintf(out, "    %s\n", c.c_str());
  }
}

StepMetrics Trainer::step(int64_t s) {
  auto start = std::chrono::steady_clock::now();
  GlobalBatch batch = source_->feed(s, *backend_, *data_);
  if (lossScale_.enabled())
    writeInput(*backend_, "input.loss_scale",
               std::vector<float>{static_cast<float>(lossScale_.scale())});
  // The program's step is the optimizer updates applied (skipped fp16
  // updates do not count: the schedule and bias corrections follow them).
  std::vector<int64_t> inputs = {s - skipped_};
  if (replicaInput_)
    inputs.push_back(data_->rank());
  backend_->run("train_step", inputs);
  StepMetrics m;
  m.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  m.step = s + 1;
  m.loss = readMetric(*backend_, "metric.loss");
  source_->readMetrics(*backend_, batch, m);
  m.lr = readMetric(*backend_, "metric.lr");
  m.gradNorm = readMetric(*backend_, "metric.grad_norm");
  // The whole global batch's rate (every replica's rows together), in
  // samples (real sequences: several a row when packed) and rows.
  m.samplesPerSecond = batch.samples / m.seconds;
  m.rowsPerSecond =
      static_cast<double>(config_.training.global_batch_size) / m.seconds;
  m.paddingFraction =
      1.0 -
      batch.tokens / static_cast<double>(config_.training.global_batch_size *
                                         config_.model.seq_length);
  m.sequences = batch.samples;
  DynamicLossScale::Outcome scaling = lossScale_.update(m.step, m.gradNorm);
  m.skipped = scaling.skipped;
  m.lossScaleNote = scaling.note;
  skipped_ += scaling.skipped ? 1 : 0;
  if (!std::isfinite(m.loss))
    throw RuntimeError(fmt::format(
        "the loss became {} at step {} (lr {:.3g}, grad norm {:.3g}); lower "
        "training.optimizer.lr or check the data",
        m.loss, m.step, m.lr, m.gradNorm));
  stepsDone_ = s + 1;
  return m;
}

EvalMetrics Trainer::evaluate(const std::string &path, int64_t samples,
                              std::vector<EvalOutput> *outputs) {
  auto start = std::chrono::steady_clock::now();
  // The program's per-sample outputs: [accumulation, micro-batch, ...] each.
  std::vector<const fxe::State *> outputStates;
  if (outputs) {
    const std::string prefix = "output.eval.";
    for (const fxe::State *s : *exe_.root().states()) {
      std::string name = s->name()->str();
      if (name.rfind(prefix, 0) != 0)
        continue;
      if (s->dtype() != fxe::DType_F32 || s->shape()->size() < 2)
        throw RuntimeError(fmt::format(
            "the evaluation output {} is not an fp32 [accumulation, "
            "micro-batch, ...] tensor; compile with training.precision=fp32 "
            "to write the outputs",
            name));
      outputStates.push_back(s);
      EvalOutput out;
      out.name = name.substr(prefix.size());
      out.shape.assign(s->shape()->begin() + 2, s->shape()->end());
      outputs->push_back(std::move(out));
    }
    if (outputStates.empty())
      throw RuntimeError(
          "the executable stores no evaluation outputs; compile it with "
          "model.eval_sequence_output=true for the encoder's last hidden "
          "states");
    if (group_->size() > 1)
      throw RuntimeError("the evaluation outputs are written by one process; "
                         "run ferry eval --outputs without mpirun");
  }
  data::DataLoader loader(path, config_.data.format, /*shuffle=*/false,
                          static_cast<uint64_t>(config_.training.seed),
                          sampleShapeOf(config_));
  int64_t available = loader.samplesPerEpoch();
  if (samples > available)
    throw RuntimeError(
        fmt::format("{} holds {} samples; {} were asked for evaluation", path,
                    available, samples));
  int64_t total = samples > 0 ? samples : available;
  int64_t global = config_.training.global_batch_size;
  EvalMetrics m;
  double mlmLoss = 0, nspLoss = 0, mlmCorrect = 0, nspCorrect = 0;
  double sequences = 0; // real ones: several a row when packed
  data::HostBatch batch;
  Progress progress("eval " + path, static_cast<double>(total), "samples");
  // Each replica evaluates its rows of each global batch (the program sums
  // the metrics over the replicas); the last batch is padded with rows that
  // count for nothing.
  const int64_t rows = global / data_->size();
  for (int64_t first = 0; first < total; first += global) {
    progress.update(static_cast<double>(first));
    int64_t mine = first + data_->rank() * rows;
    int64_t count = std::clamp<int64_t>(total - mine, 0, rows);
    loader.readInOrder(std::min(mine, total), count, rows, batch);
    double sums[2] = {batch.countedSlots(), batch.realSequences()};
    data_->allReduceSum(sums, sums, 2,
                        "the sums of counted slots and sequences");
    double counted = sums[0];
    // mlm_count (and nsp_count) 1: @eval_step then sums the per-slot (and
    // per-sequence) cross-entropies.
    writePretrainingInputs(*backend_, batch, 1.0f, 1.0f);
    backend_->run("eval_step", {});
    mlmLoss += readMetric(*backend_, "metric.eval.mlm_loss");
    // Unpacked, @forward scales the NSP sum by 1/global_batch_size.
    nspLoss += readMetric(*backend_, "metric.eval.nsp_loss") *
               (batch.packs > 1 ? 1.0 : static_cast<double>(global));
    sequences += sums[1];
    mlmCorrect += readMetric(*backend_, "metric.eval.mlm_correct");
    nspCorrect += readMetric(*backend_, "metric.eval.nsp_correct");
    m.countedSlots += counted;
    for (size_t k = 0; k < outputStates.size(); ++k) {
      // Rows in program order; the first `count` are this batch's samples.
      const fxe::State *s = outputStates[k];
      std::vector<float> all(static_cast<size_t>(s->bytes() / 4));
      backend_->read(s, 0, all.data(), s->bytes());
      int64_t perRow = static_cast<int64_t>(all.size()) /
                       (s->shape()->Get(0) * s->shape()->Get(1));
      std::vector<float> &values = (*outputs)[k].values;
      values.insert(values.end(), all.begin(), all.begin() + count * perRow);
    }
  }
  if (outputs)
    for (EvalOutput &out : *outputs)
      out.shape.insert(out.shape.begin(), total);
  progress.update(static_cast<double>(total));
  progress.finish();
  m.samples = total;
  m.sequences = sequences;
  m.mlmAccuracy = m.countedSlots > 0 ? mlmCorrect / m.countedSlots : 0.0;
  m.mlmLoss = m.countedSlots > 0 ? mlmLoss / m.countedSlots : 0.0;
  m.nspAccuracy = sequences > 0 ? nspCorrect / sequences : 0.0;
  m.nspLoss = sequences > 0 ? nspLoss / sequences : 0.0;
  m.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return m;
}

int Trainer::agreedStopSignal() {
  if (group_->size() == 1)
    return stopSignalReceived();
  double signal = stopSignalReceived();
  // The largest signal number any rank received (SIGTERM over SIGINT).
  std::vector<double> all(static_cast<size_t>(group_->size()));
  group_->allGather(&signal, all.data(), sizeof signal,
                    "the agreement on stop signals");
  return static_cast<int>(*std::max_element(all.begin(), all.end()));
}

std::string Trainer::save(const std::string &dir, int64_t steps) {
  // Every replica gathers the sharded states; rank 0 writes the checkpoint.
  ckpt::TrainerState state;
  state.step = steps;
  state.dataPosition = steps * config_.training.global_batch_size;
  state.seed = config_.training.seed;
  state.configText = config_.canonicalText();
  state.lossScale = lossScale_.scale();
  state.lossScaleCleanSteps = lossScale_.cleanSteps();
  state.skippedUpdates = skipped_;
  state.huggingFaceConfig = ckpt::huggingFaceConfigJson(config_);
  std::string written = ckpt::saveCheckpoint(dir, exe_.root(), *backend_, state,
                                             config_.checkpoint.keep);
  if (group_->size() > 1) {
    // The others wait for rank 0's write, however long it takes (a write is
    // not a stalled collective); a failed write reaches them as its
    // failure notice.
    double timeout = group_->timeoutSeconds();
    group_->setTimeoutSeconds(std::max(timeout, 7 * 24 * 3600.0));
    char done = 1;
    group_->broadcast(&done, 1, 0, "the wait for rank 0's checkpoint write");
    group_->setTimeoutSeconds(timeout);
  }
  return written;
}

RunResult Trainer::run(const TrainOptions &options, std::FILE *out) {
  // A resumed run appends to the metrics of the run it continues. Only
  // rank 0 writes them (every replica holds the same global metrics).
  MetricsWriter metrics(isRankZero() ? options.metricsPath : "",
                        isRankZero() ? options.tensorboardDir : "",
                        stepsDone_ > 0);
  RunResult result;
  const int64_t global = config_.training.global_batch_size;
  const int64_t evalEvery = config_.training.eval_every_samples;
  const int64_t everySteps = config_.checkpoint.every_steps;
  ProgressWindow window;
  int64_t savedAt = -1;
  if (options.saveInitial && !options.saveDir.empty() && stepsDone_ == 0) {
    std::string written = save(options.saveDir, 0);
    if (!written.empty() && !options.quiet)
      std::fprintf(out, "saved the initial weights to %s\n", written.c_str());
    std::fflush(out);
  }
  for (int64_t s = stepsDone_; s < options.steps; ++s) {
    uint64_t linkBefore = backend_->hostLinkBytes();
    StepMetrics last = step(s);
    uint64_t stepLinkBytes = backend_->hostLinkBytes() - linkBefore;
    if (!last.lossScaleNote.empty() && !options.quiet) {
      std::fprintf(out, "%s\n", last.lossScaleNote.c_str());
      std::fflush(out);
    }
    result.last = last;
    window.seconds += last.seconds;
    window.samples += last.sequences;
    window.loss += last.loss;
    window.padding += last.paddingFraction;
    ++window.steps;
    bool log =
        options.logEvery > 0 && (last.step % options.logEvery == 0 ||
                                 last.step == options.steps || last.step == 1);
    if (log && !options.quiet) {
      std::fprintf(out, "%s\n",
                   source_->progressLine(last, options.steps, window).c_str());
      std::fflush(out);
      window = ProgressWindow();
    }

    UpdateRecord record;
    record.step = last;
    record.devicePeakBytes = backend_->peakBytes();
    record.devicePlannedBytes = backend_->arenaBytes();
    record.hostLinkBytes = stepLinkBytes;
    if (lossScale_.enabled())
      // A skipped update halved the scale after using it.
      record.lossScale =
          last.skipped ? lossScale_.scale() * 2 : lossScale_.scale();

    // Evaluation when the samples trained cross a multiple of the interval.
    if (evalEvery > 0 && source_->evaluates() &&
        (s * global) / evalEvery != (s + 1) * global / evalEvery) {
      EvalMetrics e =
          evaluate(config_.data.eval_path, config_.data.eval_samples);
      std::fprintf(out,
                   "eval at step %lld (%lld samples trained): %lld samples  "
                   "mlm_acc %.4f  mlm_loss %.4f  nsp_acc %.4f  nsp_loss %.4f  "
                   "(%.1f s)\n",
                   static_cast<long long>(last.step),
                   static_cast<long long>((s + 1) * global),
                   static_cast<long long>(e.samples), e.mlmAccuracy, e.mlmLoss,
                   e.nspAccuracy, e.nspLoss, e.seconds);
      record.eval = e;
      double target = config_.training.target_mlm_accuracy;
      // Rank 0 decides for every replica (their sums may round apart).
      char reached = target > 0 && e.mlmAccuracy >= target;
      group_->broadcast(&reached, 1, 0, "the target accuracy decision");
      if (reached) {
        std::fprintf(out,
                     "reached training.target_mlm_accuracy %.4f (eval %.4f) "
                     "at step %lld after %lld samples; stopping\n",
                     target, e.mlmAccuracy, static_cast<long long>(last.step),
                     static_cast<long long>((s + 1) * global));
        result.reachedTarget = true;
      }
      std::fflush(out);
    }
    metrics.write(record);

    int signal = agreedStopSignal();
    bool periodic = everySteps > 0 && last.step % everySteps == 0;
    if (!options.saveDir.empty() &&
        (periodic || signal != 0 || result.reachedTarget)) {
      result.lastCheckpoint = save(options.saveDir, last.step);
      savedAt = last.step;
      std::fprintf(out, "saved checkpoint %s%s\n",
                   result.lastCheckpoint.c_str(),
                   options.checkpointNote.c_str());
      std::fflush(out);
    }
    if (signal != 0) {
      result.stopSignal = signal;
      std::fprintf(out, "stopped by %s after step %lld%s\n",
                   signal == SIGINT ? "SIGINT" : "SIGTERM",
                   static_cast<long long>(last.step),
                   options.saveDir.empty()
                       ? " (no --save directory: nothing was saved)"
                       : "; continue with --resume");
      std::fflush(out);
      return result;
    }
    if (result.reachedTarget)
      return result;
  }
  // At the end, unless this run saved it already or trained nothing (a
  // resumed run already at options.steps).
  if (!options.saveDir.empty() && savedAt != stepsDone_ &&
      result.last.step != 0) {
    result.lastCheckpoint = save(options.saveDir, stepsDone_);
    std::fprintf(out, "saved checkpoint %s%s\n", result.lastCheckpoint.c_str(),
                 options.checkpointNote.c_str());
  }
  return result;
}
