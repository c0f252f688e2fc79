// fp16's dynamic loss scaling (training.precision: fp16): the loss is scaled
// before the backward so small gradients survive fp16; an overflow (a
// non-finite gradient norm, after which the program left the weights alone)
// halves the scale and skips the update, and every
// training.loss_scale_growth_interval clean updates double it.
#pragma once

#include <cstdint>
#include <string>

namespace ferry {

struct Config;

class DynamicLossScale {
public:
  // Off (scale() 0) unless the config trains in fp16.
  explicit DynamicLossScale(const Config &config);

  bool enabled() const { return scale_ > 0; }
  double scale() const { return scale_; }
  int64_t cleanSteps() const { return cleanSteps_; }
  // Continues a checkpointed run's scale.
  void restore(double scale, int64_t cleanSteps);

  // After update `step` (1-based) with gradient norm `gradNorm`: whether the
  // update was skipped, and a line for the log when the scale changed.
  // Throws RuntimeError when an overflow would take the scale below
  // training.loss_scale_min.
  struct Outcome {
    bool skipped = false;
    std::string note;
  };
  Outcome update(int64_t step, double gradNorm);

private:
  double scale_ = 0, minimum_ = 1;
  int64_t growthInterval_ = 2000, cleanSteps_ = 0;
};

} // namespace ferry
