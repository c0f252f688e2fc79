// GPU tests (ctest label `gpu`) of whole training runs through the `ferry`
// CLI: the CUDA backend against the CPU backend (bert-tiny, fp32, 20 updates:
// every loss within relative 1e-3; atomics reorder sums), and phased = resident
// on the GPU (3 updates, relative 1e-5). Skipped without a device.
#include "runtime/cuda/DeviceQuery.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::vector<double> losses(const std::string &path) {
  std::vector<double> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find("\"loss\": ");
    if (at != std::string::npos)
      out.push_back(std::stod(line.substr(at + 8)));
  }
  return out;
}

std::vector<double> train(const std::string &name, const std::string &sets) {
  std::string metrics = "/tmp/ferry-gpu-" + name + ".jsonl";
  std::string command =
      std::string(FERRY_BINARY_DIR) + "/ferry train " + FERRY_SOURCE_DIR +
      "/configs/bert-tiny.yaml " +
      "--log-every 0 --no-cache --set model.vocab_size=1000 " + sets +
      " --metrics " + metrics + " > /dev/null";
  std::remove(metrics.c_str());
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return losses(metrics);
}

void expectClose(const std::vector<double> &a, const std::vector<double> &b,
                 double rtol) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_FALSE(std::isnan(a[i])) << "step " << i + 1;
    EXPECT_LE(std::abs(a[i] - b[i]), rtol * std::abs(b[i]))
        << "step " << i + 1 << ": " << a[i] << " vs " << b[i];
  }
}

// Every test trains on the GPU: skipped, with the CUDA runtime's reason,
// only when no device is present.
class CudaTraining : public ::testing::Test {
protected:
  void SetUp() override {
    ferry::CudaDeviceReport report = ferry::queryCudaDevices();
    if (report.devices.empty())
      GTEST_SKIP() << "no CUDA device: " << report.reason;
  }
};

} // namespace

TEST_F(CudaTraining, Fp32LossesMatchTheCpuBackend) {
  auto cpu = train("cpu", "--steps 20");
  auto gpu = train("cuda", "--steps 20 --set execution.backend=cuda "
                           "--set training.precision=fp32");
  expectClose(gpu, cpu, 1e-3);
}

TEST_F(CudaTraining, Bf16LossesWithinTwoPercentOfCpuFp32) {
  auto cpu = train("cpu-fp32", "--steps 20");
  auto gpu = train("cuda-bf16", "--steps 20 --set execution.backend=cuda "
                                "--set training.precision=bf16");
  expectClose(gpu, cpu, 0.02);
}

TEST_F(CudaTraining, PhasedEqualsResidentOnTheGpu) {
  std::string common = "--steps 3 --set execution.backend=cuda "
                       "--set training.precision=fp32 "
                       "--set execution.micro_batch_size=4";
  auto resident = train("resident", common);
  auto phased = train("phased", common + " --set execution.mode=phased --set "
                                         "execution.recompute=layer --set "
                                         "execution.device_memory_limit=12MiB");
  expectClose(phased, resident, 1e-5);
}
