// GPU tests (ctest label `gpu`, and `cuda-sim` under the simulator) of the
// CUDA backend on hand-built executables: a CUDA-graph capture that fails
// (a damaged instruction) names the program and the way around it, and
// leaves the streams out of capture, so the same backend launches the
// program directly afterwards (where the same check fails on its own).
#include "ProgramBuilder.h"

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/DeviceQuery.h"

#include <gtest/gtest.h>

using namespace ferry;
using namespace ferry::test;

TEST(CudaBackend, AFailedCaptureNamesTheProgramAndLeavesNoCapture) {
  CudaDeviceReport report = queryCudaDevices();
#ifndef FERRY_CUDA_SIM
  if (report.devices.empty())
    GTEST_SKIP() << "no CUDA device: " << report.reason;
#endif
  ProgramBuilder p;
  p.kernel(kFill, {{0, 64, {}}}, {16}, {1.0}); // fine
  p.kernel(kFill, {{0, 16, {}}}, {8}, {1.0});  // 8 floats in 16 bytes
  const fxe::Executable &exe = p.finish(64, 0, "cuda");
  std::unique_ptr<Backend> backend =
      createCudaBackend(exe, std::nullopt, nullptr);
  std::string captured = runError(*backend);
  EXPECT_NE(captured.find("kernel fill needs 32 bytes in buffer 0"),
            std::string::npos)
      << captured;
  EXPECT_NE(captured.find("(while capturing program p as a CUDA graph; --set "
                          "execution.cuda_graphs=false launches its kernels "
                          "directly)"),
            std::string::npos)
      << captured;
  backend->setGraphReplay(false);
  std::string direct = runError(*backend);
  EXPECT_NE(direct.find("kernel fill needs 32 bytes in buffer 0"),
            std::string::npos)
      << direct;
  EXPECT_EQ(direct.find("capturing"), std::string::npos) << direct;
}
