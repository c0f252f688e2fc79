// `ferry train CONFIG|FILE.fxe [--set K=V]... [--data PATH|synthetic]
// [--steps N] [--init-checkpoint F] [--save DIR] [--resume DIR]
// [--metrics FILE.jsonl] [--log-every N] [--profile]`: compiles the config (or
// loads a compiled executable), then trains on the CPU backend, printing a
// progress line every N updates, writing every update's metrics as JSON
// lines, evaluating and checkpointing as the config says. SIGINT/SIGTERM end
// the run after the current update, with a checkpoint when saving.
#include "runtime/ByteSize.h"
#include "tools/ferry/Commands.h"
#include "tools/ferry/LoadExecutable.h"

#include "runtime/train/Trainer.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ferry::cli {
namespace {

struct TrainOptionsCli {
  CompileFlags compile;
  std::string input;
  std::vector<std::string> overrides;
  std::string data;
  int64_t steps = 0;
  int64_t logEvery = 10;
  std::string metrics;
  std::string initCheckpoint, save, resume;
  bool profile = false;
};

int runTrain(const TrainOptionsCli &opts) {
  std::vector<std::string> overrides = opts.overrides;
  if (!opts.data.empty())
    overrides.push_back("data.path=" + opts.data);
  if (!opts.initCheckpoint.empty())
    overrides.push_back("checkpoint.init=" + opts.initCheckpoint);
  if (!opts.save.empty())
    overrides.push_back("checkpoint.save_dir=" + opts.save);
  try {
    std::optional<LoadedExecutable> loaded =
        loadExecutable(opts.input, overrides, opts.compile);
    if (!loaded)
      return 1;
    const Config &config = loaded->config;
    if (!opts.resume.empty() && !config.checkpoint.init.empty()) {
      std::fprintf(stderr,
                   "ferry: error: --resume and --init-checkpoint (or "
                   "checkpoint.init) both say where the weights come from; "
                   "give one\n");
      return 1;
    }
    int64_t steps = opts.steps > 0 ? opts.steps : config.training.steps;
    Trainer trainer(*loaded->exe, config);
    trainer.backend().setProfiling(opts.profile);
    std::printf("ferry train %s: %lld parameters, %s arena, global batch "
                "%lld (micro-batch %lld x %lld accumulation), %lld steps, "
                "ready in %.0f ms\n",
                opts.input.c_str(),
                static_cast<long long>(loaded->exe->root().parameter_count()),
                formatByteSize(trainer.backend().arenaBytes()).c_str(),
                static_cast<long long>(config.training.global_batch_size),
                static_cast<long long>(config.execution.micro_batch_size),
                static_cast<long long>(config.gradientAccumulation()),
                static_cast<long long>(steps), loaded->compileMs);
    if (!config.checkpoint.init.empty())
      trainer.initFromCheckpoint(config.checkpoint.init, stdout);
    if (!opts.resume.empty())
      trainer.resume(opts.resume, stdout);
    if (trainer.stepsDone() >= steps)
      std::printf("the checkpoint is at step %lld, which is not before "
                  "--steps %lld: nothing to train\n",
                  static_cast<long long>(trainer.stepsDone()),
                  static_cast<long long>(steps));
    std::fflush(stdout);
    installStopHandlers();
    TrainOptions run;
    run.steps = steps;
    run.logEvery = opts.logEvery;
    run.metricsPath = opts.metrics;
    run.saveDir = config.checkpoint.save_dir;
    RunResult result = trainer.run(run, stdout);
    const Backend &backend = trainer.backend();
    std::printf("device memory: peak %s measured, %s planned%s\n",
                formatByteSize(backend.peakBytes()).c_str(),
                formatByteSize(backend.arenaBytes()).c_str(),
                config.execution.device_memory_limit
                    ? (", budget " +
                       formatByteSize(*config.execution.device_memory_limit))
                          .c_str()
                    : "");
    if (backend.hostBytes() > 0)
      std::printf("host link: %s moved (%s of remote buffers in host "
                  "memory)\n",
                  formatByteSize(backend.hostLinkBytes()).c_str(),
                  formatByteSize(backend.hostBytes()).c_str());
    if (opts.profile)
      std::fputs(trainer.backend().profileReport().c_str(), stdout);
    // Interrupted runs exit as the shell expects of a signal (128 + number),
    // after finishing cleanly.
    return result.stopSignal != 0 ? 128 + result.stopSignal : 0;
  } catch (const std::exception &e) {
    // ConfigError, ExecutableError, DataError, CheckpointError and
    // RuntimeError all carry a message that names the file and the fix.
    std::fprintf(stderr, "ferry: error: %s\n", e.what());
  }
  return 1;
}

} // namespace

Runner addTrainCommand(CLI::App &app) {
  auto opts = std::make_shared<TrainOptionsCli>();
  CLI::App *cmd = app.add_subcommand(
      "train", "Train a model config (compiled on the fly) or a compiled "
               "executable (FILE.fxe) on the CPU backend.");
  addCompileFlags(cmd, opts->compile);
  cmd->add_option("input", opts->input,
                  "A config (configs/bert-tiny.yaml) or an executable "
                  "(model.fxe)")
      ->required();
  cmd->add_option(
         "--set", opts->overrides,
         "Override a config key, e.g. --set training.optimizer.lr=1e-4 "
         "(repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--data", opts->data,
                  "Training data (data.path): an MLPerf HDF5 or TFRecord file, "
                  "a directory or a glob of them, or `synthetic` (seeded "
                  "random batches; data.synthetic_samples sets the pool)")
      ->type_name("PATH|synthetic");
  cmd->add_option("--steps", opts->steps,
                  "Optimizer updates of the whole run (default: "
                  "training.steps); a resumed run continues up to it")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--init-checkpoint", opts->initCheckpoint,
                  "Start from a safetensors file with Hugging Face "
                  "BertForPreTraining names (checkpoint.init); the optimizer "
                  "starts fresh")
      ->type_name("FILE");
  cmd->add_option("--save", opts->save,
                  "Write checkpoints to DIR/step-NNNNNNNN (every "
                  "checkpoint.every_steps, at the end, and on SIGINT/SIGTERM), "
                  "keeping the newest checkpoint.keep (checkpoint.save_dir)")
      ->type_name("DIR");
  cmd->add_option("--resume", opts->resume,
                  "Continue from a save directory's latest checkpoint, or "
                  "from one step directory, exactly as if never stopped")
      ->type_name("DIR");
  cmd->add_option("--metrics", opts->metrics,
                  "Write each update's metrics as JSON lines to FILE "
                  "(appended to when resuming)")
      ->type_name("FILE.jsonl");
  cmd->add_option("--log-every", opts->logEvery,
                  "Print a progress line every N updates (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--profile", opts->profile,
                "Time every kernel and print where the time went at the end");
  return [opts] { return runTrain(*opts); };
}

} // namespace ferry::cli
