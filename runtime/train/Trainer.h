// Training on the CPU backend: loads an executable's train_step, feeds it
// batches (synthetic for now), runs the updates and reports the metrics
// (console progress lines and JSON lines).
#pragma once

#include "runtime/config/Config.h"
#include "runtime/cpu/CpuBackend.h"
#include "runtime/data/SyntheticData.h"

#include <cstdio>
#include <memory>
#include <string>

namespace ferry {

struct StepMetrics {
  int64_t step = 0; // updates applied after this one (1 for the first)
  double loss = 0, mlmLoss = 0, nspLoss = 0, mlmAccuracy = 0;
  double lr = 0, gradNorm = 0, samplesPerSecond = 0, seconds = 0;
};

struct TrainOptions {
  int64_t steps = 0;    // total optimizer updates of the run
  int64_t logEvery = 0; // progress line every N updates (and the last)
  std::string metricsPath;
  bool quiet = false;
};

class Trainer {
public:
  Trainer(const ExecutableFile &executable, const Config &config);

  // One optimizer update (s = updates already applied); returns its metrics.
  StepMetrics step(int64_t s);
  // Runs options.steps updates, printing progress to `out`. Returns the
  // metrics of the last update.
  StepMetrics run(const TrainOptions &options, std::FILE *out);

  CpuBackend &backend() { return *backend_; }
  int64_t samplesPerUpdate() const { return rows_; }

private:
  void feed(int64_t s);

  const ExecutableFile &exe_;
  Config config_;
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<data::SyntheticData> data_;
  data::HostBatch batch_;
  int64_t rows_ = 0; // samples per update on this replica
};

} // namespace ferry
