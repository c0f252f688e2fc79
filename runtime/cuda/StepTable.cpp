// The CUDA backend's per-run values in device memory (StepTable.h).
#include "runtime/cuda/StepTable.h"

#include "runtime/Error.h"
#include "runtime/cuda/Launch.h"
#include "runtime/kernels/LearningRate.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace ferry::cuda {
namespace {

constexpr size_t kBytes =
    StepValue::kInputs * sizeof(int64_t) + StepTable::kMaxScalars * 4;

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw RuntimeError(
        fmt::format("CUDA {} failed: {}", what, cudaGetErrorString(e)));
}

float *scalarsOf(int64_t *table) {
  return reinterpret_cast<float *>(table + StepValue::kInputs);
}

} // namespace

StepTable::StepTable() {
  check(cudaMalloc(&device_, kBytes), "allocation of the per-run values");
  check(cudaHostAlloc(&host_, kBytes, cudaHostAllocDefault),
        "pinned allocation of the per-run values");
  std::memset(host_, 0, kBytes);
}

StepTable::~StepTable() {
  cudaFree(device_);
  cudaFreeHost(host_);
}

const float *StepTable::slot(int kind, std::vector<double> params,
                             const StepValue &s, int slots, bool add) {
  std::vector<double> key = params;
  key.insert(key.begin(), kind);
  key.push_back(static_cast<double>(s.base));
  for (int64_t c : s.coeffs)
    key.push_back(static_cast<double>(c));
  auto it = scalars_.find(key);
  if (it == scalars_.end()) {
    if (!add)
      throw std::logic_error("a per-run value was not registered before "
                             "its program ran");
    if (used_ + slots > kMaxScalars)
      throw RuntimeError(fmt::format(
          "the program needs more than {} per-run values (learning-rate "
          "schedules and Adam corrections) on the CUDA backend",
          kMaxScalars));
    it = scalars_.emplace(key, Scalar{kind, std::move(params), s, used_}).first;
    used_ += slots;
  }
  return scalarsOf(device_) + it->second.slot;
}

const float *StepTable::learningRate(int32_t kind, double lr,
                                     int64_t warmupSteps,
                                     int64_t startWarmupStep, double power,
                                     int64_t totalSteps, const StepValue &s,
                                     bool add) {
  return slot(0,
              {static_cast<double>(kind), lr, static_cast<double>(warmupSteps),
               static_cast<double>(startWarmupStep), power,
               static_cast<double>(totalSteps)},
              s, 1, add);
}

const float *StepTable::adamCorrections(double beta1, double beta2,
                                        const StepValue &t, bool add) {
  return slot(1, {beta1, beta2}, t, 2, add);
}

void StepTable::upload(const std::vector<int64_t> &inputs,
                       cudaStream_t stream) {
  for (int i = 0; i < StepValue::kInputs; ++i)
    host_[i] = i < static_cast<int>(inputs.size()) ? inputs[i] : 0;
  float *out = scalarsOf(host_);
  for (const auto &[key, s] : scalars_) {
    int64_t step = s.step.valueWith(host_);
    const std::vector<double> &p = s.params;
    if (s.kind == 0) {
      out[s.slot] = ferry::learningRate(
          static_cast<int32_t>(p[0]), p[1], static_cast<int64_t>(p[2]),
          static_cast<int64_t>(p[3]), p[4], static_cast<int64_t>(p[5]), step);
    } else { // as cuda::adamConstants and the CPU's Adam
      double t = static_cast<double>(step);
      out[s.slot] = static_cast<float>(1.0 / (1.0 - std::pow(p[0], t)));
      out[s.slot + 1] = static_cast<float>(1.0 / (1.0 - std::pow(p[1], t)));
    }
  }
  check(memcpyAsync(device_, host_, kBytes, cudaMemcpyHostToDevice, stream),
        "copy of the per-run values");
}

} // namespace ferry::cuda
