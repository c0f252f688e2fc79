// Device discovery for the CUDA backend. On machines without a GPU or driver,
// cudaGetDeviceCount fails (cudaErrorInsufficientDriver / cudaErrorNoDevice):
// that is reported as "no device" with the CUDA error as the reason.
#include "runtime/cuda/DeviceQuery.h"

#include <cuda_runtime.h>

#include <cstdio>

namespace ferry {

CudaDeviceReport queryCudaDevices() {
  CudaDeviceReport report;
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    report.reason = std::string(cudaGetErrorName(status)) + ": " +
                    cudaGetErrorString(status);
    cudaGetLastError(); // clear the sticky error for later calls
    return report;
  }
  if (count == 0) {
    report.reason = "the CUDA runtime reports 0 devices";
    return report;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess)
      continue;
    char line[sizeof prop.name + 64];
    std::snprintf(line, sizeof line, "%s (sm_%d%d, %.1f GiB)", prop.name,
                  prop.major, prop.minor,
                  static_cast<double>(prop.totalGlobalMem) / (1 << 30));
    report.devices.push_back(line);
  }
  if (report.devices.empty())
    report.reason = "no device's properties could be read";
  return report;
}

} // namespace ferry
