// The devices a compile may name (execution.target): each one's memory,
// which becomes the default device budget, and its rates, which `ferry plan
// --model` uses. With no target, plans are made for an unlimited device (or
// execution.device_memory_limit) and the model shows the H100 and the H200.
#pragma once

#include "training/config/Config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ferry {

struct DeviceTarget {
  std::string name; // "H100", "H200", "custom"
  // The default device budget: what the CUDA runtime reports as the device's
  // memory less what the context, cuBLAS and NCCL take besides the arena.
  uint64_t memoryBytes = 0;
  // Practical rates (what these machines reached) beside the datasheet's;
  // a custom target gives one figure for both.
  double tensorFlops = 0, tensorFlopsStated = 0; // dense bf16, FLOP/s
  double fp32Flops = 0, fp32FlopsStated = 0;     // CUDA cores, FLOP/s
  double memoryBytesPerSecond = 0, memoryBytesPerSecondStated = 0; // HBM
  double hostLinkBytesPerSecond = 0; // each way (PCIe 5 x16)
};

// The known targets: H100 (80 GB SXM) and H200 (141 GB).
const DeviceTarget &h100Target();
const DeviceTarget &h200Target();

// The config's target (execution.target), or nullopt for none.
std::optional<DeviceTarget> deviceTargetOf(const ExecutionConfig &e);

} // namespace ferry
