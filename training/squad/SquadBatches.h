// SQuAD's batches (training/train/BatchSource.h): the windows of a SQuAD
// file, shuffled each epoch by (seed, epoch), each replica its rows of
// every global batch, the span loss normalised by the global batch's span
// slots (two a real window); the metric span_accuracy and `ferry squad
// train`'s progress line. The row filling and the inputs are shared with
// `ferry squad predict`.
#pragma once

#include "training/config/Config.h"
#include "training/squad/SquadData.h"
#include "training/train/BatchSource.h"

#include <cstdint>
#include <vector>

namespace ferry::squad {

// The span program's inputs for `rows` rows.
struct SpanBatch {
  std::vector<int32_t> ids, segments, mask, positions;
  std::vector<float> weights;
  double slots = 0;   // the weighted span slots: 2 a real window
  int64_t tokens = 0; // tokens of real windows
};

// Rows [0, rows) are features[order[first ...]]; rows past the end of
// `order` pad the batch with weight 0.
void fillSpanBatch(const std::vector<Feature> &features,
                   const std::vector<uint32_t> &order, int64_t first,
                   int64_t rows, int64_t seq, SpanBatch &batch);
// Copies a batch into the program's inputs; spanCount normalises the loss.
void writeSpanInputs(Backend &backend, const SpanBatch &batch, float spanCount);

class SquadBatches : public BatchSource {
public:
  // `features` must outlive the source. Each update's rows are the
  // data-parallel rank's share of the global batch: feed's `group` is the
  // trainer's data group (the T ranks of a tensor group feed the same rows).
  SquadBatches(const std::vector<Feature> &features, const Config &config);

  int64_t stepsPerEpoch() const { return stepsPerEpoch_; }

  GlobalBatch feed(int64_t s, Backend &backend,
                   comm::Communicator &group) override;
  void readMetrics(Backend &backend, const GlobalBatch &batch,
                   StepMetrics &m) const override;
  // Its loss is the window's mean (every update since the last line), its
  // span accuracy the last update's.
  std::string progressLine(const StepMetrics &last, int64_t steps,
                           const ProgressWindow &window) const override;
  // Answers are scored by `ferry squad predict --eval`, not during training.
  bool evaluates() const override { return false; }
  const char *modelName() const override { return "span model"; }
  const char *newHeadPrefix() const override { return "qa_outputs."; }

private:
  const std::vector<Feature> &features_;
  int64_t global_, seq_, stepsPerEpoch_;
  uint64_t seed_;
  int64_t orderEpoch_ = -1; // the epoch `order_` shuffles
  std::vector<uint32_t> order_;
  SpanBatch batch_;
};

} // namespace ferry::squad
