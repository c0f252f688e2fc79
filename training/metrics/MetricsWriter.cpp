// Each update's metrics as JSON lines and TensorBoard scalars
// (MetricsWriter.h). The JSON field names are the ones docs/metrics.md
// documents and `ferry report` reads; the TensorBoard tags group them as
// train/, eval/ and memory/.
#include "training/metrics/MetricsWriter.h"

#include "runtime/AtomicFile.h"
#include "runtime/Error.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <utility>
#include <vector>

namespace ferry {

MetricsWriter::MetricsWriter(const std::string &jsonPath,
                             const std::string &tensorboardDir, bool append)
    : jsonPath_(jsonPath) {
  if (!jsonPath.empty()) {
    if (std::optional<std::string> error = createParentDirectories(jsonPath))
      throw RuntimeError("cannot write metrics: " + *error);
    json_.open(jsonPath, append ? std::ios::app : std::ios::trunc);
    if (!json_)
      throw RuntimeError(fmt::format("cannot write metrics to '{}': {}",
                                     jsonPath, std::strerror(errno)));
  }
  if (!tensorboardDir.empty())
    tensorboard_ = std::make_unique<TensorBoardWriter>(tensorboardDir);
}

MetricsWriter::~MetricsWriter() = default;

void MetricsWriter::write(const UpdateRecord &r) {
  const StepMetrics &m = r.step;
  if (json_.is_open()) {
    std::string evalFields;
    if (r.eval)
      evalFields = fmt::format(
          ", \"eval_mlm_accuracy\": {:.9g}, \"eval_mlm_loss\": {:.9g}, "
          "\"eval_nsp_accuracy\": {:.9g}, \"eval_nsp_loss\": {:.9g}",
          r.eval->mlmAccuracy, r.eval->mlmLoss, r.eval->nspAccuracy,
          r.eval->nspLoss);
    std::string taskFields;
    for (const TaskMetric &t : m.task)
      taskFields += fmt::format(", \"{}\": {:.9g}", t.name, t.value);
    json_ << fmt::format(
        "{{\"step\": {}, \"loss\": {:.9g}{}, \"lr\": {:.9g}, "
        "\"grad_norm\": {}, \"samples_per_s\": {:.9g}, "
        "\"rows_per_s\": {:.9g}, \"padding_fraction\": {:.9g}, "
        "\"device_peak_bytes\": {}, \"device_peak_bytes_planned\": {}, "
        "\"host_link_bytes\": {}{}{}}}\n",
        m.step, m.loss, taskFields, m.lr,
        // JSON has no infinity: an overflowed fp16 update's norm is null.
        std::isfinite(m.gradNorm) ? fmt::format("{:.9g}", m.gradNorm)
                                  : std::string("null"),
        m.samplesPerSecond, m.rowsPerSecond, m.paddingFraction,
        r.devicePeakBytes, r.devicePlannedBytes, r.hostLinkBytes,
        r.lossScale ? fmt::format(", \"loss_scale\": {:g}, \"skipped\": {}",
                                  *r.lossScale, m.skipped ? "true" : "false")
                    : std::string(),
        evalFields);
    json_.flush();
    if (!json_)
      throw RuntimeError(fmt::format("cannot write metrics to '{}': {}",
                                     jsonPath_, std::strerror(errno)));
  }
  if (tensorboard_) {
    std::vector<std::pair<std::string, double>> scalars = {
        {"train/loss", m.loss}};
    for (const TaskMetric &t : m.task)
      scalars.emplace_back("train/" + t.name, t.value);
    scalars.insert(
        scalars.end(),
        {
            {"train/learning_rate", m.lr},
            {"train/samples_per_second", m.samplesPerSecond},
            {"train/rows_per_second", m.rowsPerSecond},
            {"train/padding_fraction", m.paddingFraction},
            {"memory/device_peak_bytes",
             static_cast<double>(r.devicePeakBytes)},
            {"memory/host_link_bytes", static_cast<double>(r.hostLinkBytes)},
        });
    // An overflowed fp16 update has no norm; TensorBoard would draw inf.
    if (std::isfinite(m.gradNorm))
      scalars.emplace_back("train/grad_norm", m.gradNorm);
    if (r.lossScale)
      scalars.emplace_back("train/loss_scale", *r.lossScale);
    if (r.eval) {
      scalars.emplace_back("eval/mlm_accuracy", r.eval->mlmAccuracy);
      scalars.emplace_back("eval/mlm_loss", r.eval->mlmLoss);
      scalars.emplace_back("eval/nsp_accuracy", r.eval->nspAccuracy);
      scalars.emplace_back("eval/nsp_loss", r.eval->nspLoss);
    }
    tensorboard_->write(m.step, scalars);
  }
}

} // namespace ferry
