// `ferry inspect --html FILE.fxe -o report.html`: a self-contained HTML page
// (inline SVG and CSS, no script, no network) a person can look at: the
// phase timeline of one training step (compute and host-link transfers per
// phase instance, from the compiler's plan and a stated rate model) and
// device memory over the schedule with the budget as a line, beside the
// plan's tables.
#pragma once

#include "runtime/executable/Executable_generated.h"
#include "training/config/DeviceTarget.h"

#include <optional>
#include <string>

namespace ferry {

struct ReportRates {
  double flopsPerSecond = 0;     // matmul rate the timeline assumes
  double linkBytesPerSecond = 0; // per direction when `duplex`
  // The backend moves both directions at once (cuda: a copy stream each),
  // so a phase's transfers take max(in, out) / rate, else (in + out) / rate.
  bool duplex = false;
};

// Nominal rates: the target's (execution.target: half its practical bf16
// rate, its host link each way, both directions at once), else the
// executable's backend's (cpu: 200 GFLOP/s, 10 GB/s; cuda: H100/H200 bf16
// dense 790 TFLOP/s at 50% utilisation, PCIe 5 x16 50 GB/s each way, both
// directions at once).
ReportRates defaultRates(const fxe::Executable &exe,
                         const std::optional<DeviceTarget> &target);

// One step of `program` in the report's model: each phase lasts its matmul
// time plus its transfer time, or the longer of the two when the plan
// prefetches. `matmulSeconds` gets the matmuls alone. 0 without phases.
double modelledStepSeconds(const fxe::Executable &exe,
                           const std::string &program, const ReportRates &rates,
                           double *matmulSeconds);

// `title` names the executable; `budget` is the device budget from its
// config (none: unlimited).
std::string htmlReport(const fxe::Executable &exe, const std::string &title,
                       std::optional<uint64_t> budget,
                       const ReportRates &rates);

} // namespace ferry
