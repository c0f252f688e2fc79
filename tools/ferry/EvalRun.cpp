// The body of `ferry eval` (EvalCommand.cpp parses its flags). Built into
// libferry-run.so (RunApi.h).
#include "tools/ferry/LoadExecutable.h"
#include "tools/ferry/RunApi.h"

#include "runtime/AtomicFile.h"
#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <memory>
#include <string>
#include <vector>

namespace ferry::cli {

int runEval(const EvalOptionsCli &opts) {
  std::vector<std::string> overrides = opts.overrides;
  // The evaluation set is not training data: keep the config's data.path
  // out of it (a synthetic default would be fine, a missing file would not).
  overrides.push_back("data.path=synthetic");
  try {
    std::optional<LoadedExecutable> loaded =
        loadExecutable(opts.input, overrides, opts.compile);
    if (!loaded)
      return 1;
    Trainer trainer(*loaded->exe, loaded->config);
    trainer.initFromCheckpoint(opts.checkpoint, stdout);
    std::fflush(stdout);
    EvalMetrics m = trainer.evaluate(opts.data, opts.samples);
    std::printf("eval %s: %lld samples, %.0f masked tokens\n"
                "  mlm_accuracy %.6f\n  mlm_loss     %.6f\n"
                "  nsp_accuracy %.6f\n  nsp_loss     %.6f\n"
                "  %.1f samples/s\n",
                opts.data.c_str(), static_cast<long long>(m.samples),
                m.countedSlots, m.mlmAccuracy, m.mlmLoss, m.nspAccuracy,
                m.nspLoss, m.seconds > 0 ? m.samples / m.seconds : 0.0);
    if (!opts.json.empty()) {
      std::string json = fmt::format(
          "{{\"samples\": {}, \"masked_tokens\": {}, \"eval_mlm_accuracy\": "
          "{:.9g}, \"eval_mlm_loss\": {:.9g}, \"eval_nsp_accuracy\": {:.9g}, "
          "\"eval_nsp_loss\": {:.9g}}}\n",
          m.samples, static_cast<int64_t>(m.countedSlots), m.mlmAccuracy,
          m.mlmLoss, m.nspAccuracy, m.nspLoss);
      if (std::optional<std::string> error =
              writeFileAtomically(opts.json, json)) {
        std::fprintf(stderr, "ferry: error: %s\n", error->c_str());
        return 1;
      }
    }
    return 0;
  } catch (const std::exception &e) {
    // ConfigError, ExecutableError, DataError, CheckpointError and
    // RuntimeError all carry a message that names the file and the fix.
    std::fprintf(stderr, "ferry: error: %s\n", e.what());
  }
  return 1;
}

} // namespace ferry::cli
