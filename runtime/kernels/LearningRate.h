// The learning-rate schedule behind the learning_rate kernel: a scalar per
// update, computed on the host by every backend (ARCHITECTURE.md, "Learning
// rate").
#pragma once

#include <cstdint>

namespace ferry {

// Learning rate for s = updates already applied (ARCHITECTURE.md, "Learning
// rate"); kind 0 = poly, 1 = constant.
float learningRate(int32_t kind, double lr, int64_t warmupSteps,
                   int64_t startWarmupStep, double power, int64_t totalSteps,
                   int64_t s);

} // namespace ferry
