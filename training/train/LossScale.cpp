// fp16's dynamic loss scaling; see LossScale.h.
#include "training/train/LossScale.h"

#include "runtime/Error.h"
#include "training/config/Config.h"

#include <fmt/format.h>

#include <cmath>

using namespace ferry;

DynamicLossScale::DynamicLossScale(const Config &config) {
  if (config.training.precision != "fp16")
    return;
  scale_ = config.training.loss_scale_initial;
  minimum_ = config.training.loss_scale_min;
  growthInterval_ = config.training.loss_scale_growth_interval;
}

void DynamicLossScale::restore(double scale, int64_t cleanSteps) {
  scale_ = scale;
  cleanSteps_ = cleanSteps;
}

DynamicLossScale::Outcome DynamicLossScale::update(int64_t step,
                                                   double gradNorm) {
  Outcome out;
  if (!enabled())
    return out;
  // The gradient norm is non-finite exactly when the scaled gradients
  // overflowed; the program then left the weights and moments alone.
  if (!std::isfinite(gradNorm)) {
    double halved = scale_ / 2;
    if (halved < minimum_)
      throw RuntimeError(fmt::format(
          "fp16: the gradients overflowed at step {} with the loss scale "
          "at {:g}, and halving it would go below "
          "training.loss_scale_min {:g}; the model diverged or fp16 cannot "
          "hold its gradients: use training.precision bf16 or fp32, or "
          "lower training.optimizer.lr",
          step, scale_, minimum_));
    out.skipped = true;
    out.note = fmt::format("fp16: gradient overflow at step {}: update "
                           "skipped, loss scale {:g} -> {:g}",
                           step, scale_, halved);
    scale_ = halved;
    cleanSteps_ = 0;
  } else if (++cleanSteps_ >= growthInterval_) {
    out.note = fmt::format("fp16: {} updates without overflow at step {}: "
                           "loss scale {:g} -> {:g}",
                           cleanSteps_, step, scale_, scale_ * 2);
    scale_ *= 2;
    cleanSteps_ = 0;
  }
  return out;
}
