// Pretraining's batches (BatchSource.h): MLPerf samples from the synthetic
// pool or the data loader (HDF5, TFRecord), each replica its rows of every
// global batch, the MLM loss normalised by the global batch's counted slots
// (and the NSP loss, packed, by its sequences); the metrics mlm_loss,
// nsp_loss and mlm_accuracy and `ferry train`'s progress line.
#pragma once

#include "training/config/Config.h"
#include "training/data/MlperfData.h"
#include "training/data/SyntheticData.h"
#include "training/train/BatchSource.h"

#include <memory>

namespace ferry {

// Copies a batch into the pretraining program's inputs (train_step's and
// eval_step's alike); mlmCount and nspCount (packed rows only) normalise the
// losses.
void writePretrainingInputs(Backend &backend, const data::HostBatch &batch,
                            float mlmCount, float nspCount);

// The data shape a config's model reads.
data::SampleShape sampleShapeOf(const Config &config);

class PretrainingBatches : public BatchSource {
public:
  // Reads config.data (synthetic or files) for `group`'s rank; throws
  // RuntimeError for a model too small for synthetic rows.
  PretrainingBatches(const Config &config, const comm::Communicator &group);
  ~PretrainingBatches() override;

  GlobalBatch feed(int64_t s, Backend &backend,
                   comm::Communicator &group) override;
  void readMetrics(Backend &backend, const GlobalBatch &batch,
                   StepMetrics &m) const override;
  std::string progressLine(const StepMetrics &last, int64_t steps,
                           const ProgressWindow &window) const override;
  bool evaluates() const override {
    return config_.training.eval_every_samples > 0;
  }

private:
  Config config_;
  int64_t rows_ = 0; // this replica's rows of a global batch
  int rank_ = 0;
  std::unique_ptr<data::SyntheticData> synthetic_;
  std::unique_ptr<data::DataLoader> loader_;
  data::HostBatch batch_;
};

} // namespace ferry
