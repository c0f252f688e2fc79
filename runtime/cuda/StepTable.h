// The CUDA backend's per-run values in device memory: a program's input
// registers (the step, the replica) and the scalars the host derives from
// them (each learning-rate schedule's value, each Adam bias correction).
// One small copy at the start of every run refreshes them, and the kernels
// read them there (StepValue, AdamParams::corrections), so that a program
// captured once as a CUDA graph computes each run's values on replay, and
// direct launches read the very same memory (replay = direct, bit for bit).
//
// A program's scalars are registered before its first run (the backend
// walks its instructions once); the host computes them exactly as the CPU
// backend does (learningRate, std::pow in double).
#pragma once

#include "runtime/kernels/StepValue.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <vector>

namespace ferry::cuda {

class StepTable {
public:
  static constexpr int kMaxScalars = 1024;

  StepTable();
  ~StepTable();
  StepTable(const StepTable &) = delete;
  StepTable &operator=(const StepTable &) = delete;

  // The input registers on the device, for StepValue::inputs.
  const int64_t *deviceInputs() const { return device_; }

  // The slot of a learning-rate schedule's value at step `s`: registered
  // (`add`) or looked up (throws if the program was not prepared).
  const float *learningRate(int32_t kind, double lr, int64_t warmupSteps,
                            int64_t startWarmupStep, double power,
                            int64_t totalSteps, const StepValue &s, bool add);
  // The two slots 1 / (1 - beta1^t), 1 / (1 - beta2^t).
  const float *adamCorrections(double beta1, double beta2, const StepValue &t,
                               bool add);

  // Writes this run's inputs and every registered scalar, and copies them
  // to the device on `stream` (one asynchronous copy).
  void upload(const std::vector<int64_t> &inputs, cudaStream_t stream);

private:
  struct Scalar {
    int kind; // 0 learning rate, 1 Adam corrections (two slots)
    std::vector<double> params;
    StepValue step;
    int slot;
  };
  const float *slot(int kind, std::vector<double> params, const StepValue &s,
                    int slots, bool add);

  // [inputs (kInputs int64) | scalars (kMaxScalars floats)], on the device
  // and its pinned host mirror.
  int64_t *device_ = nullptr;
  int64_t *host_ = nullptr;
  std::map<std::vector<double>, Scalar> scalars_;
  int used_ = 0;
};

} // namespace ferry::cuda
