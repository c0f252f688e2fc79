// The learning-rate schedule: the one formula behind the learning_rate
// kernel, computed on the host by every backend.
#include "runtime/kernels/LearningRate.h"

#include <algorithm>
#include <cmath>

namespace ferry {

float learningRate(int32_t kind, double lr, int64_t warmupSteps,
                   int64_t startWarmupStep, double power, int64_t totalSteps,
                   int64_t s) {
  if (kind == 1)
    return static_cast<float>(lr);
  // Poly (MLPerf BERT): linear warmup over warmupSteps updates counted from
  // startWarmupStep, then (1 - s / totalSteps)^power, 0 from totalSteps on.
  const int64_t sinceWarmup = s - startWarmupStep;
  if (warmupSteps > 0 && sinceWarmup < warmupSteps)
    return static_cast<float>(lr * static_cast<double>(sinceWarmup) /
                              static_cast<double>(warmupSteps));
  const double done = static_cast<double>(std::min(s, totalSteps)) /
                      static_cast<double>(totalSteps);
  return static_cast<float>(lr * std::pow(1.0 - done, power));
}

} // namespace ferry
