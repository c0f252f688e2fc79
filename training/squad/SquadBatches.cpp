// SQuAD's rows, normaliser, metric and progress line (SquadBatches.h).
#include "training/squad/SquadBatches.h"

#include "runtime/backend/ProgramIo.h"
#include "runtime/random/Philox.h"

#include <fmt/format.h>

namespace ferry::squad {

void fillSpanBatch(const std::vector<Feature> &features,
                   const std::vector<uint32_t> &order, int64_t first,
                   int64_t rows, int64_t seq, SpanBatch &b) {
  b.ids.assign(static_cast<size_t>(rows * seq), 0);
  b.segments.assign(b.ids.size(), 0);
  b.mask.assign(b.ids.size(), 0);
  b.positions.assign(static_cast<size_t>(2 * rows), 0);
  b.weights.assign(b.positions.size(), 0.0f);
  b.slots = 0;
  b.tokens = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = first + r;
    if (at >= static_cast<int64_t>(order.size()))
      break;
    const Feature &f = features[static_cast<size_t>(order[at])];
    for (size_t t = 0; t < f.ids.size(); ++t) {
      size_t to = static_cast<size_t>(r * seq) + t;
      b.ids[to] = f.ids[t];
      b.segments[to] = f.segmentIds[t];
      b.mask[to] = 1;
    }
    b.tokens += static_cast<int64_t>(f.ids.size());
    b.positions[2 * r] = static_cast<int32_t>(f.start);
    b.positions[2 * r + 1] = static_cast<int32_t>(f.end);
    b.weights[2 * r] = b.weights[2 * r + 1] = 1.0f;
    b.slots += 2;
  }
}

void writeSpanInputs(Backend &backend, const SpanBatch &b, float spanCount) {
  writeInput(backend, "input.input_ids", b.ids);
  writeInput(backend, "input.segment_ids", b.segments);
  writeInput(backend, "input.input_mask", b.mask);
  writeInput(backend, "input.span_positions", b.positions);
  writeInput(backend, "input.span_weights", b.weights);
  writeInput(backend, "input.span_count", std::vector<float>{spanCount});
}

SquadBatches::SquadBatches(const std::vector<Feature> &features,
                           const Config &config)
    : features_(features), global_(config.training.global_batch_size),
      seq_(config.model.seq_length),
      stepsPerEpoch_((static_cast<int64_t>(features.size()) + global_ - 1) /
                     global_),
      seed_(static_cast<uint64_t>(config.training.seed)) {}

GlobalBatch SquadBatches::feed(int64_t s, Backend &backend,
                               comm::Communicator &group) {
  int64_t epoch = s / stepsPerEpoch_;
  if (epoch != orderEpoch_) {
    // A Fisher-Yates shuffle keyed by (seed, epoch), as the pretraining
    // data loader shuffles.
    order_ = random::shuffled(static_cast<uint32_t>(features_.size()), seed_,
                              random::purposeHash("squad.shuffle"),
                              static_cast<uint64_t>(epoch));
    orderEpoch_ = epoch;
  }
  const int64_t rows = global_ / group.size();
  fillSpanBatch(features_, order_,
                (s % stepsPerEpoch_) * global_ + group.rank() * rows, rows,
                seq_, batch_);
  // The global batch's span slots normalise the loss.
  double sums[2] = {batch_.slots, static_cast<double>(batch_.tokens)};
  group.allReduceSum(sums, sums, 2, "the sums of span slots and tokens");
  writeSpanInputs(backend, batch_, static_cast<float>(sums[0]));
  GlobalBatch b;
  b.counted = sums[0];
  b.samples = sums[0] / 2;
  b.tokens = sums[1];
  return b;
}

void SquadBatches::readMetrics(Backend &backend, const GlobalBatch &batch,
                               StepMetrics &m) const {
  m.task = {{"span_accuracy",
             batch.counted > 0
                 ? readMetric(backend, "metric.span_correct") / batch.counted
                 : 0.0}};
}

std::string SquadBatches::progressLine(const StepMetrics &last, int64_t steps,
                                       const ProgressWindow &window) const {
  return fmt::format("step {:5}/{}  epoch {}  loss {:.4f}  span_acc {:.4f}  "
                     "lr {:.3e}  {:.1f} questions/s",
                     last.step, steps, (last.step - 1) / stepsPerEpoch_ + 1,
                     window.loss / static_cast<double>(window.steps),
                     last.value("span_accuracy"), last.lr,
                     window.samples / window.seconds);
}

} // namespace ferry::squad
