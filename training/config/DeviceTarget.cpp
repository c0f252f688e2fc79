// The devices a compile may name (DeviceTarget.h).
#include "training/config/DeviceTarget.h"

namespace ferry {

namespace {
constexpr uint64_t kGiB = uint64_t{1} << 30;
} // namespace

// Practical rates: an 8192^3 bf16 GEMM ran at 798 (H100) and 788 (H200)
// TFLOP/s, and a device-to-device copy moved 3.0 and 4.3 TB/s (read plus
// write), on these machines (tool library KINDS.md). fp32 on the CUDA cores
// is not measured here: 75% of the datasheet's 67 TFLOP/s is assumed. The
// host link is PCIe 5 x16, about 50 GB/s each way in practice.
// Memory: the CUDA runtime reports about 79.2 GiB (H100 80 GB) and 139.8
// GiB (H200 141 GB); the budget leaves about 1.5 GiB of that for the
// context, cuBLAS's and NCCL's own buffers and CUDA graphs.
const DeviceTarget &h100Target() {
  static const DeviceTarget t{"H100", 78 * kGiB, 790e12, 989e12, 50e12,
                              67e12,  3.0e12,    3.35e12, 50e9};
  return t;
}

const DeviceTarget &h200Target() {
  static const DeviceTarget t{"H200", 138 * kGiB, 790e12, 989e12, 50e12,
                              67e12,  4.3e12,     4.8e12, 50e9};
  return t;
}

std::optional<DeviceTarget> deviceTargetOf(const ExecutionConfig &e) {
  if (e.target == "h100")
    return h100Target();
  if (e.target == "h200")
    return h200Target();
  if (e.target == "custom") {
    DeviceTarget t;
    t.name = "custom";
    t.memoryBytes = e.target_memory.value_or(0);
    t.tensorFlops = t.tensorFlopsStated = e.target_bf16_tflops * 1e12;
    t.fp32Flops = t.fp32FlopsStated = e.target_fp32_tflops * 1e12;
    t.memoryBytesPerSecond = t.memoryBytesPerSecondStated =
        e.target_memory_gbps * 1e9;
    t.hostLinkBytesPerSecond = e.target_host_link_gbps * 1e9;
    return t;
  }
  return std::nullopt;
}

std::optional<uint64_t> Config::deviceBudget() const {
  if (execution.device_memory_limit)
    return execution.device_memory_limit;
  if (std::optional<DeviceTarget> t = deviceTargetOf(execution))
    return t->memoryBytes;
  return std::nullopt;
}

} // namespace ferry
