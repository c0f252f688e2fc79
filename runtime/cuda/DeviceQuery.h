// Which CUDA devices this process can use, or why it can use none. GPU tests
// skip with `reason` when no device is present.
#pragma once

#include <string>
#include <vector>

namespace ferry {

struct CudaDeviceReport {
  std::vector<std::string> devices; // "NVIDIA H200 (sm_90, 139.8 GiB)"
  std::string reason;               // why `devices` is empty
};

CudaDeviceReport queryCudaDevices();

} // namespace ferry
