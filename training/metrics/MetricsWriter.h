// What a training run records of each update, and where: JSON lines
// (`--metrics FILE.jsonl`, read back by `ferry report`) and TensorBoard
// event files (`--tensorboard DIR`). The trainer fills one UpdateRecord per
// update; the writer puts the same values into each destination it has.
#pragma once

#include "training/metrics/TensorBoardWriter.h"

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {

// A metric of the task trained (pretraining: mlm_loss, nsp_loss,
// mlm_accuracy; SQuAD: span_accuracy): its JSON field and, under train/,
// its TensorBoard tag.
struct TaskMetric {
  std::string name;
  double value = 0;
};

struct StepMetrics {
  int64_t step = 0;          // batches trained after this one (1 for the first)
  bool skipped = false;      // fp16: the update overflowed and was skipped
  std::string lossScaleNote; // fp16: what happened to the loss scale
  double loss = 0;
  std::vector<TaskMetric> task; // in the order the records show them
  double lr = 0, gradNorm = 0, samplesPerSecond = 0, seconds = 0;
  // Rows of the global batch a second (= samplesPerSecond unless packed:
  // then a row holds several samples) and the share of its tokens that are
  // padding.
  double rowsPerSecond = 0, paddingFraction = 0;
  double sequences = 0; // real sequences in the global batch

  // The task metric `name`; 0 when the task has none of that name.
  double value(std::string_view name) const {
    for (const TaskMetric &t : task)
      if (t.name == name)
        return t.value;
    return 0;
  }
};

struct EvalMetrics {
  int64_t samples = 0;  // rows read (several samples each when packed)
  double sequences = 0; // the samples they hold
  double countedSlots = 0;
  double mlmAccuracy = 0, mlmLoss = 0, nspAccuracy = 0, nspLoss = 0;
  double seconds = 0;
};

struct UpdateRecord {
  StepMetrics step;
  uint64_t devicePeakBytes = 0;    // measured so far
  uint64_t devicePlannedBytes = 0; // the plan's arena
  uint64_t hostLinkBytes = 0;      // moved over the host link by this update
  std::optional<double> lossScale; // fp16: the scale this update used
  std::optional<EvalMetrics> eval; // when this update ended an interval
};

class MetricsWriter {
public:
  // Either may be empty (not written). A resumed run (`append`) adds to the
  // JSON lines of the run it continues. Throws RuntimeError naming the path
  // when a destination cannot be created.
  MetricsWriter(const std::string &jsonPath, const std::string &tensorboardDir,
                bool append);
  ~MetricsWriter();

  bool enabled() const { return json_.is_open() || tensorboard_ != nullptr; }
  void write(const UpdateRecord &record);

private:
  std::string jsonPath_;
  std::ofstream json_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
};

} // namespace ferry
