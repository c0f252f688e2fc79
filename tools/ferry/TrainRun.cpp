// The body of `ferry train` (TrainCommand.cpp parses its flags): load or
// compile the executable, then train on its backend. Built into
// libferry-run.so (RunApi.h).
#include "runtime/ByteSize.h"
#include "tools/ferry/LoadExecutable.h"
#include "tools/ferry/RunApi.h"

#include "runtime/train/Trainer.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ferry::cli {

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
    run.tensorboardDir = opts.tensorboard;
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

} // namespace ferry::cli
