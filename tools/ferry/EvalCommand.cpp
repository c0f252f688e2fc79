// `ferry eval CONFIG|FILE.fxe --checkpoint DIR_OR_FILE --data PATH
// [--samples N] [--set K=V]...`: the masked-LM accuracy and loss and the NSP
// accuracy and loss of a checkpoint on an evaluation set (MLPerf HDF5 or
// TFRecord), forward only, without dropout, samples in file order.
#include "tools/ferry/Commands.h"
#include "tools/ferry/LoadExecutable.h"

#include "runtime/train/Trainer.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace ferry::cli {
namespace {

struct EvalOptionsCli {
  CompileFlags compile;
  std::string input;
  std::vector<std::string> overrides;
  std::string checkpoint, data, json;
  int64_t samples = 0;
};

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
      std::ofstream out(opts.json, std::ios::trunc);
      out << fmt::format(
          "{{\"samples\": {}, \"masked_tokens\": {}, \"eval_mlm_accuracy\": "
          "{:.9g}, \"eval_mlm_loss\": {:.9g}, \"eval_nsp_accuracy\": {:.9g}, "
          "\"eval_nsp_loss\": {:.9g}}}\n",
          m.samples, static_cast<int64_t>(m.countedSlots), m.mlmAccuracy,
          m.mlmLoss, m.nspAccuracy, m.nspLoss);
      if (!out) {
        std::fprintf(stderr, "ferry: error: cannot write %s\n",
                     opts.json.c_str());
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

} // namespace

Runner addEvalCommand(CLI::App &app) {
  auto opts = std::make_shared<EvalOptionsCli>();
  CLI::App *cmd = app.add_subcommand(
      "eval", "Evaluate a checkpoint: masked-LM accuracy and loss, NSP "
              "accuracy and loss on an MLPerf evaluation set.");
  addCompileFlags(cmd, opts->compile);
  cmd->add_option("input", opts->input,
                  "A config (configs/bert-large.yaml) or an executable "
                  "(model.fxe)")
      ->required();
  cmd->add_option("--checkpoint", opts->checkpoint,
                  "A safetensors file with Hugging Face names, a checkpoint "
                  "step directory, or a save directory (its latest)")
      ->required()
      ->type_name("DIR_OR_FILE");
  cmd->add_option("--data", opts->data,
                  "The evaluation set: an MLPerf HDF5 or TFRecord file, a "
                  "directory or a glob")
      ->required()
      ->type_name("PATH");
  cmd->add_option("--samples", opts->samples,
                  "Evaluate the first N samples (default: all)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--set", opts->overrides,
                  "Override a config key (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--json", opts->json,
                  "Also write the results as one JSON object to FILE")
      ->type_name("FILE.json");
  return [opts] { return runEval(*opts); };
}

} // namespace ferry::cli
