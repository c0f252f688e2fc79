// The training loop of `ferry train` on the CPU backend.
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>

using namespace ferry;

namespace {
template <typename T>
void copyInto(CpuBackend &backend, const std::string &name,
              const std::vector<T> &values) {
  const fxe::State *s = backend.state(name);
  if (!s)
    throw RuntimeError("the executable has no input '" + name +
                       "'; was it compiled by ferry compile?");
  if (static_cast<size_t>(s->bytes()) != values.size() * sizeof(T))
    throw RuntimeError(fmt::format(
        "input '{}' holds {} bytes, the batch has {}: the executable was "
        "compiled for another batch or sequence shape",
        name, s->bytes(), values.size() * sizeof(T)));
  std::memcpy(reinterpret_cast<char *>(backend.f32(s)), values.data(),
              s->bytes());
}
float scalar(CpuBackend &backend, const std::string &name) {
  const fxe::State *s = backend.state(name);
  if (!s)
    throw RuntimeError("the executable has no metric '" + name + "'");
  return backend.f32(s)[0];
}
} // namespace

Trainer::Trainer(const ExecutableFile &executable, const Config &config)
    : exe_(executable), config_(config) {
  if (config_.execution.backend != "cpu")
    throw RuntimeError(fmt::format(
        "{} was compiled for execution.backend {}; this runtime runs the cpu "
        "backend (the CUDA backend arrives with its issue)",
        exe_.path(), config_.execution.backend));
  if (config_.execution.data_parallel != 1)
    throw RuntimeError(fmt::format(
        "execution.data_parallel {}: one process trains one replica so far; "
        "use 1",
        config_.execution.data_parallel));
  if (!config_.checkpoint.init.empty() ||
      !config_.checkpoint.save_dir.empty() ||
      config_.checkpoint.every_steps != 0)
    throw RuntimeError(
        "checkpoint.init, checkpoint.save_dir and checkpoint.every_steps are "
        "not read yet (checkpoints arrive with the MLPerf workflow issue); "
        "leave them empty and 0 rather than have them ignored");
  if (config_.data.path == "synthetic" &&
      (config_.model.vocab_size < 8 || config_.model.seq_length < 8 ||
       config_.model.type_vocab_size < 2))
    throw RuntimeError(fmt::format(
        "synthetic data needs model.vocab_size >= 8 (found {}), "
        "model.seq_length >= 8 (found {}) and model.type_vocab_size >= 2 "
        "(found {}): it writes special tokens and two segments",
        config_.model.vocab_size, config_.model.seq_length,
        config_.model.type_vocab_size));
  if (config_.data.path != "synthetic")
    throw RuntimeError(fmt::format(
        "data.path '{}': only `synthetic` data is read so far (HDF5 and "
        "TFRecord readers arrive with the MLPerf data issue); use --data "
        "synthetic",
        config_.data.path));
  backend_ = std::make_unique<CpuBackend>(
      exe_.root(), config_.execution.device_memory_limit);
  backend_->initialiseStates(static_cast<uint64_t>(config_.training.seed));
  rows_ = config_.training.global_batch_size / config_.execution.data_parallel;
  data_ = std::make_unique<data::SyntheticData>(
      config_.model.seq_length, config_.model.max_predictions,
      config_.model.vocab_size, static_cast<uint64_t>(config_.training.seed),
      config_.data.synthetic_samples);
}

void Trainer::feed(int64_t s) {
  data_->fill(s * config_.training.global_batch_size, rows_, batch_);
  copyInto(*backend_, "input.input_ids", batch_.inputIds);
  copyInto(*backend_, "input.segment_ids", batch_.segmentIds);
  copyInto(*backend_, "input.input_mask", batch_.inputMask);
  copyInto(*backend_, "input.masked_lm_positions", batch_.maskedPositions);
  copyInto(*backend_, "input.masked_lm_ids", batch_.maskedIds);
  copyInto(*backend_, "input.masked_lm_weights", batch_.maskedWeights);
  copyInto(*backend_, "input.next_sentence_labels", batch_.nspLabels);
  copyInto(*backend_, "input.next_sentence_weights", batch_.nspWeights);
  // The MLM loss is normalised by the global batch's count of counted slots.
  std::vector<float> count = {static_cast<float>(batch_.countedSlots())};
  copyInto(*backend_, "input.mlm_count", count);
}

StepMetrics Trainer::step(int64_t s) {
  auto start = std::chrono::steady_clock::now();
  feed(s);
  backend_->run("train_step", {s});
  StepMetrics m;
  m.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  m.step = s + 1;
  m.loss = scalar(*backend_, "metric.loss");
  m.mlmLoss = scalar(*backend_, "metric.mlm_loss");
  m.nspLoss = scalar(*backend_, "metric.nsp_loss");
  double counted = batch_.countedSlots();
  m.mlmAccuracy =
      counted > 0 ? scalar(*backend_, "metric.mlm_correct") / counted : 0.0;
  m.lr = scalar(*backend_, "metric.lr");
  m.gradNorm = scalar(*backend_, "metric.grad_norm");
  m.samplesPerSecond = static_cast<double>(rows_) / m.seconds;
  if (!std::isfinite(m.loss))
    throw RuntimeError(fmt::format(
        "the loss became {} at step {} (lr {:.3g}, grad norm {:.3g}); lower "
        "training.optimizer.lr or check the data",
        m.loss, m.step, m.lr, m.gradNorm));
  return m;
}

StepMetrics Trainer::run(const TrainOptions &options, std::FILE *out) {
  std::ofstream metrics;
  if (!options.metricsPath.empty()) {
    metrics.open(options.metricsPath, std::ios::trunc);
    if (!metrics)
      throw RuntimeError(fmt::format("cannot write metrics to '{}': {}",
                                     options.metricsPath,
                                     std::strerror(errno)));
  }
  StepMetrics last;
  double windowSeconds = 0;
  int64_t windowSteps = 0;
  for (int64_t s = 0; s < options.steps; ++s) {
    last = step(s);
    windowSeconds += last.seconds;
    ++windowSteps;
    if (metrics.is_open()) {
      metrics << fmt::format(
          "{{\"step\": {}, \"loss\": {:.9g}, \"mlm_loss\": {:.9g}, "
          "\"nsp_loss\": {:.9g}, \"mlm_accuracy\": {:.9g}, \"lr\": {:.9g}, "
          "\"grad_norm\": {:.9g}, \"samples_per_s\": {:.6g}, "
          "\"device_peak_bytes\": {}, \"device_peak_bytes_planned\": {}}}\n",
          last.step, last.loss, last.mlmLoss, last.nspLoss, last.mlmAccuracy,
          last.lr, last.gradNorm, last.samplesPerSecond, backend_->peakBytes(),
          backend_->arenaBytes());
      metrics.flush();
    }
    bool log =
        options.logEvery > 0 && (last.step % options.logEvery == 0 ||
                                 last.step == options.steps || last.step == 1);
    if (log && !options.quiet) {
      double rate = static_cast<double>(rows_ * windowSteps) / windowSeconds;
      std::fprintf(out,
                   "step %5lld/%lld  loss %.4f  mlm %.4f  nsp %.4f  mlm_acc "
                   "%.4f  lr %.3e  grad_norm %.3f  %.1f samples/s\n",
                   static_cast<long long>(last.step),
                   static_cast<long long>(options.steps), last.loss,
                   last.mlmLoss, last.nspLoss, last.mlmAccuracy, last.lr,
                   last.gradNorm, rate);
      std::fflush(out);
      windowSeconds = 0;
      windowSteps = 0;
    }
  }
  return last;
}
