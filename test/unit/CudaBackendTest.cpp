// GPU tests (ctest label `gpu`, and `cuda-sim` under the simulator) of the
// CUDA backend on hand-built executables: a program's first run launches
// directly (never captured), so a damaged instruction fails there, with no
// mention of a capture, and the program is never captured while it fails;
// a capture that fails part-way names the program and the way around it,
// joins the copy streams before it ends, and leaves the backend able to
// capture the program again (simulator only: it needs the simulator's
// hook that makes captured launches fail).
#include "ProgramBuilder.h"

#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/DeviceQuery.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>

using namespace ferry;
using namespace ferry::test;

namespace {

void requireDevice() {
  CudaDeviceReport report = queryCudaDevices();
#ifdef FERRY_CUDA_SIM
  ASSERT_FALSE(report.devices.empty()) << report.reason;
#else
  if (report.devices.empty())
    GTEST_SKIP() << "no CUDA device: " << report.reason;
#endif
}

} // namespace

TEST(CudaBackend, ADamagedProgramFailsDirectlyAndIsNeverCaptured) {
  requireDevice();
  if (IsSkipped() || HasFatalFailure())
    return;
  ProgramBuilder p;
  p.kernel(kFill, {{0, 64, {}}}, {16}, {1.0}); // fine
  p.kernel(kFill, {{0, 16, {}}}, {8}, {1.0});  // 8 floats in 16 bytes
  const fxe::Executable &exe = p.finish(64, 0, "cuda");
  std::unique_ptr<Backend> backend =
      createCudaBackend(exe, std::nullopt, nullptr);
  for (int run = 0; run < 2; ++run) { // graph replay is on
    std::string message = runError(*backend);
    EXPECT_NE(message.find("kernel fill needs 32 bytes in buffer 0"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find("capturing"), std::string::npos) << message;
  }
}

#ifdef FERRY_CUDA_SIM
TEST(CudaBackend, AFailedCaptureNamesTheProgramAndJoinsTheCopyStreams) {
  requireDevice();
  if (HasFatalFailure())
    return;
  // A load, a kernel and a store through host memory: the copy streams
  // fork from the compute stream's capture.
  ProgramBuilder p;
  p.hostState("remote", 0, 4);
  p.kernel(kLoad, {{0, 16, {}}, {0, 16, {}}}, {16, 1});
  p.kernel(kWait, {}, {1});
  p.kernel(kFill, {{16, 16, {}}}, {4}, {2.5});
  p.kernel(kStore, {{16, 16, {}}, {0, 16, {}}}, {16, 2});
  p.kernel(kWait, {}, {2});
  const fxe::Executable &exe = p.finish(64, 0, "cuda");
  std::unique_ptr<Backend> backend =
      createCudaBackend(exe, std::nullopt, nullptr);
  ASSERT_EQ(runError(*backend), ""); // the first run: direct
  int unjoined = cudaSimUnjoinedCaptureEnds();
  cudaSimFailCapturedLaunches(true);
  std::string captured = runError(*backend); // the second: captured
  cudaSimFailCapturedLaunches(false);
  EXPECT_NE(captured.find("(while capturing program p as a CUDA graph; --set "
                          "execution.cuda_graphs=false launches its kernels "
                          "directly)"),
            std::string::npos)
      << captured;
  EXPECT_EQ(cudaSimUnjoinedCaptureEnds(), unjoined)
      << "the capture ended with a copy stream still forked";
  ASSERT_EQ(runError(*backend), ""); // captured again, and replayed
  const fxe::State *remote = exe.states()->Get(0);
  float values[4] = {};
  backend->read(remote, 0, values, sizeof values);
  for (float v : values)
    EXPECT_EQ(v, 2.5f);
}
#endif
