// GPU test (ctest label `gpu`): the CUDA backend finds the device. Without a
// device or driver it is skipped with the CUDA runtime's reason, never passed.
#include "runtime/cuda/DeviceQuery.h"

#include <gtest/gtest.h>

TEST(CudaDevice, QueryFindsADevice) {
  ferry::CudaDeviceReport report = ferry::queryCudaDevices();
#ifdef FERRY_CUDA_SIM // the simulator is a device: nothing skips there
  ASSERT_FALSE(report.devices.empty()) << report.reason;
#else
  if (report.devices.empty())
    GTEST_SKIP() << "no CUDA device: " << report.reason;
#endif
  for (const std::string &device : report.devices) {
    EXPECT_NE(device.find("sm_"), std::string::npos) << device;
    EXPECT_NE(device.find("GiB"), std::string::npos) << device;
  }
}
