// `ferry train CONFIG|FILE.fxe [--set K=V]... [--data synthetic] [--steps N]
// [--metrics FILE.jsonl] [--log-every N]`: compiles the config (or loads a
// compiled executable), then trains on the CPU backend, printing a progress
// line every N updates and writing every update's metrics as JSON lines.
#include "tools/ferry/Commands.h"

#include "runtime/config/Config.h"
#include "runtime/executable/ExecutableFile.h"
#include "runtime/train/Trainer.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#ifdef FERRY_HAVE_COMPILER
#include "compiler/GraphCompile.h"
#include "compiler/Registration.h"

#include "mlir/IR/MLIRContext.h"
#endif

namespace ferry::cli {
namespace {

struct TrainOptionsCli {
  std::string input;
  std::vector<std::string> overrides;
  std::string data;
  int64_t steps = 0;
  int64_t logEvery = 10;
  std::string metrics;
  bool profile = false;
};

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Keys a compiled executable can still take: they change what the runtime
// feeds, saves and allows, not the program.
bool runtimeOnlyKey(const std::string &assignment) {
  std::string key = assignment.substr(0, assignment.find('='));
  return key.rfind("data.", 0) == 0 || key.rfind("checkpoint.", 0) == 0 ||
         key == "training.steps" || key == "execution.device_memory_limit";
}

int runTrain(const TrainOptionsCli &opts) {
  std::vector<std::string> overrides = opts.overrides;
  if (!opts.data.empty())
    overrides.push_back("data.path=" + opts.data);
  try {
    Config config;
    std::optional<ExecutableFile> exe;
    auto start = std::chrono::steady_clock::now();
    if (endsWith(opts.input, ".fxe")) {
      exe = ExecutableFile::load(opts.input);
      for (const std::string &o : overrides)
        if (!runtimeOnlyKey(o)) {
          std::fprintf(stderr,
                       "ferry: error: --set %s changes the compiled program "
                       "in %s; recompile with `ferry compile CONFIG --set %s "
                       "-o FILE.fxe` (only data.*, checkpoint.*, "
                       "training.steps and execution.device_memory_limit "
                       "apply to a compiled executable)\n",
                       o.c_str(), opts.input.c_str(), o.c_str());
          return 1;
        }
      config = parseConfig(exe->root().config_yaml()->str(),
                           opts.input + " (embedded config)", overrides);
    } else {
      config = loadConfig(opts.input, overrides);
#ifndef FERRY_HAVE_COMPILER
      std::fprintf(stderr,
                   "ferry: error: this ferry was built without the compiler "
                   "(-DFERRY_BUILD_COMPILER=OFF): train a compiled executable "
                   "instead (`ferry train FILE.fxe`)\n");
      return 1;
#else
      mlir::DialectRegistry registry;
      registerFerryDialects(registry);
      mlir::MLIRContext context(registry);
      context.loadAllAvailableDialects();
      std::vector<uint8_t> payload =
          compileExecutable(context, config, moduleNameForConfig(opts.input));
      if (payload.empty())
        return 1;
      exe = ExecutableFile::fromPayload(std::move(payload), opts.input);
#endif
    }
    double compileMs = std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - start)
                           .count();
    int64_t steps = opts.steps > 0 ? opts.steps : config.training.steps;
    Trainer trainer(*exe, config);
    trainer.backend().setProfiling(opts.profile);
    std::printf("ferry train %s: %lld parameters, %s arena, global batch "
                "%lld (micro-batch %lld x %lld accumulation), %lld steps, "
                "ready in %.0f ms\n",
                opts.input.c_str(),
                static_cast<long long>(exe->root().parameter_count()),
                formatByteSize(trainer.backend().arenaBytes()).c_str(),
                static_cast<long long>(config.training.global_batch_size),
                static_cast<long long>(config.execution.micro_batch_size),
                static_cast<long long>(config.gradientAccumulation()),
                static_cast<long long>(steps), compileMs);
    std::fflush(stdout);
    TrainOptions run;
    run.steps = steps;
    run.logEvery = opts.logEvery;
    run.metricsPath = opts.metrics;
    trainer.run(run, stdout);
    std::printf("device memory: peak %s measured, %s planned\n",
                formatByteSize(trainer.backend().peakBytes()).c_str(),
                formatByteSize(trainer.backend().arenaBytes()).c_str());
    if (opts.profile)
      std::fputs(trainer.backend().profileReport().c_str(), stdout);
    return 0;
  } catch (const ConfigError &e) {
    std::fprintf(stderr, "ferry: error: %s\n", e.what());
  } catch (const ExecutableError &e) {
    std::fprintf(stderr, "ferry: error: %s\n", e.what());
  } catch (const RuntimeError &e) {
    std::fprintf(stderr, "ferry: error: %s\n", e.what());
  } catch (const std::exception &e) {
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
                  "Training data: `synthetic` (seeded random batches; "
                  "data.synthetic_samples sets the pool)")
      ->type_name("PATH|synthetic");
  cmd->add_option("--steps", opts->steps,
                  "Optimizer updates to run (default: training.steps)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--metrics", opts->metrics,
                  "Write each update's metrics as JSON lines to FILE")
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
