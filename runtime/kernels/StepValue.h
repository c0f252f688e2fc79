// A kernel parameter that changes from one run of a program to the next
// (the step, a dropout's sample offset): an affine function of the
// program's input registers. The CUDA backend keeps each run's input
// registers in device memory and its kernels evaluate the value there, so
// that a program captured once as a CUDA graph reads every run's values
// (runtime/cuda/StepTable.h); elsewhere the value is a constant.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define FERRY_STEP_HOST_DEVICE __host__ __device__
#else
#define FERRY_STEP_HOST_DEVICE
#endif

namespace ferry {

struct StepValue {
  // Input registers a value may depend on (train_step has two: step and
  // replica).
  static constexpr int kInputs = 4;
  int64_t base = 0;
  int64_t coeffs[kInputs] = {0, 0, 0, 0};
  // The input registers, where the code evaluating the value can read them
  // (device memory in a kernel); null: the value is `base`.
  const int64_t *inputs = nullptr;

  StepValue() = default;
  // A constant (what the CPU backend and direct kernel tests pass).
  FERRY_STEP_HOST_DEVICE StepValue(int64_t v) : base(v) {}
  FERRY_STEP_HOST_DEVICE int64_t value() const { return valueWith(inputs); }
  FERRY_STEP_HOST_DEVICE int64_t valueWith(const int64_t *registers) const {
    int64_t v = base;
    if (registers)
      for (int i = 0; i < kInputs; ++i)
        v += coeffs[i] * registers[i];
    return v;
  }
};

} // namespace ferry
