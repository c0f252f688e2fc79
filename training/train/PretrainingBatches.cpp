// Pretraining's rows, normalisers, metrics and progress line
// (PretrainingBatches.h).
#include "training/train/PretrainingBatches.h"

#include "runtime/Error.h"
#include "runtime/backend/ProgramIo.h"
#include "training/data/PackedRows.h"

#include <fmt/format.h>

using namespace ferry;

data::SampleShape ferry::sampleShapeOf(const Config &c) {
  return {c.model.seq_length, c.model.max_predictions, c.model.vocab_size,
          c.model.type_vocab_size, c.model.max_sequences_per_pack};
}

void ferry::writePretrainingInputs(Backend &backend,
                                   const data::HostBatch &batch, float mlmCount,
                                   float nspCount) {
  writeInput(backend, "input.input_ids", batch.inputIds);
  writeInput(backend, "input.segment_ids", batch.segmentIds);
  writeInput(backend, "input.input_mask", batch.inputMask);
  writeInput(backend, "input.masked_lm_positions", batch.maskedPositions);
  writeInput(backend, "input.masked_lm_ids", batch.maskedIds);
  writeInput(backend, "input.masked_lm_weights", batch.maskedWeights);
  writeInput(backend, "input.next_sentence_labels", batch.nspLabels);
  writeInput(backend, "input.next_sentence_weights", batch.nspWeights);
  writeInput(backend, "input.mlm_count", std::vector<float>{mlmCount});
  if (batch.packs > 1) { // packed rows (model.max_sequences_per_pack)
    writeInput(backend, "input.sequence_ids", batch.sequenceIds);
    writeInput(backend, "input.position_ids", batch.positionIds);
    writeInput(backend, "input.dropout_keys", batch.dropoutKeys);
    writeInput(backend, "input.cls_positions", batch.clsPositions);
    writeInput(backend, "input.nsp_count", std::vector<float>{nspCount});
  }
}

PretrainingBatches::PretrainingBatches(const Config &config,
                                       const comm::Communicator &group)
    : config_(config), rank_(group.rank()) {
  rows_ = config_.training.global_batch_size / group.size();
  if (config_.data.path == "synthetic") {
    if (config_.model.vocab_size < 8 || config_.model.seq_length < 8 ||
        config_.model.type_vocab_size < 2)
      throw RuntimeError(fmt::format(
          "synthetic data needs model.vocab_size >= 8 (found {}), "
          "model.seq_length >= 8 (found {}) and model.type_vocab_size >= 2 "
          "(found {}): it writes special tokens and two segments",
          config_.model.vocab_size, config_.model.seq_length,
          config_.model.type_vocab_size));
    synthetic_ = std::make_unique<data::SyntheticData>(
        config_.model.seq_length, config_.model.max_predictions,
        config_.model.vocab_size, static_cast<uint64_t>(config_.training.seed),
        config_.data.synthetic_samples);
  } else {
    loader_ = std::make_unique<data::DataLoader>(
        config_.data.path, config_.data.format, config_.data.shuffle,
        static_cast<uint64_t>(config_.training.seed), sampleShapeOf(config_),
        group.rank(), group.size());
  }
}

PretrainingBatches::~PretrainingBatches() = default;

GlobalBatch PretrainingBatches::feed(int64_t s, Backend &backend,
                                     comm::Communicator &group) {
  const int64_t global = config_.training.global_batch_size;
  int64_t position = s * global;
  // This replica's rows of the global batch: a function of the sample
  // index only, so the replicas together read the single-process batch.
  if (synthetic_) {
    int64_t first = position + rank_ * rows_;
    synthetic_->fill(first, rows_, batch_);
    if (config_.model.packed()) // one sample a row, in the packed layout
      data::widenToPacks(batch_, config_.model.max_sequences_per_pack, first);
  } else {
    loader_->next(position, global, batch_);
  }
  // The MLM loss is normalised by the global batch's count of counted slots,
  // the NSP loss (packed rows) by its real sequences; with them, the tokens
  // that are not padding (for the padding fraction).
  double sums[3] = {batch_.countedSlots(), batch_.realSequences(),
                    static_cast<double>(batch_.realTokens())};
  group.allReduceSum(sums, sums, 3,
                     "the sums of counted slots, sequences and tokens");
  writePretrainingInputs(backend, batch_, static_cast<float>(sums[0]),
                         static_cast<float>(sums[1]));
  GlobalBatch b;
  b.counted = sums[0];
  b.samples = sums[1];
  b.tokens = sums[2];
  return b;
}

void PretrainingBatches::readMetrics(Backend &backend, const GlobalBatch &batch,
                                     StepMetrics &m) const {
  m.task = {{"mlm_loss", readMetric(backend, "metric.mlm_loss")},
            {"nsp_loss", readMetric(backend, "metric.nsp_loss")},
            {"mlm_accuracy",
             batch.counted > 0
                 ? readMetric(backend, "metric.mlm_correct") / batch.counted
                 : 0.0}};
}

std::string
PretrainingBatches::progressLine(const StepMetrics &last, int64_t steps,
                                 const ProgressWindow &window) const {
  // Packed rows: the rows' rate too; either way the padding.
  std::string packing =
      config_.model.packed()
          ? fmt::format(" ({:.1f} rows/s)",
                        static_cast<double>(config_.training.global_batch_size *
                                            window.steps) /
                            window.seconds)
          : std::string();
  return fmt::format(
      "step {:5}/{}  loss {:.4f}  mlm {:.4f}  nsp {:.4f}  mlm_acc {:.4f}  lr "
      "{:.3e}  grad_norm {:.3f}  {:.1f} samples/s{}  padding {:.1f}%",
      last.step, steps, last.loss, last.value("mlm_loss"),
      last.value("nsp_loss"), last.value("mlm_accuracy"), last.lr,
      last.gradNorm, window.samples / window.seconds, packing,
      100.0 * window.padding / static_cast<double>(window.steps));
}
