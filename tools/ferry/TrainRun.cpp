// The body of `ferry train` (TrainCommand.cpp parses its flags): join the
// replica group (one process, or the processes mpirun/srun started), load or
// compile the executable, check that every rank runs the same one, then
// train on its backend. Built into libferry-run.so (RunApi.h).
#include "runtime/ByteSize.h"
#include "tools/ferry/LoadExecutable.h"
#include "tools/ferry/RunApi.h"

#include "tools/ferry/ReplicaRun.h"
#include "training/train/Trainer.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace ferry::cli {
namespace {

// " x 2 replicas over MPI (...)", or with tensor parallelism " x 2
// replicas x 2 tensor-parallel ranks over MPI (...)".
std::string meshText(const Config &config, const comm::Communicator &job) {
  int64_t tensor = config.execution.tensor_parallel;
  int64_t replicas = config.execution.data_parallel;
  std::string text =
      fmt::format(" x {} replica{}", replicas, replicas == 1 ? "" : "s");
  if (tensor > 1)
    text += fmt::format(" x {} tensor-parallel ranks", tensor);
  return text + " over " + job.kind();
}

} // namespace

int runTrain(const TrainOptionsCli &opts) {
  std::vector<std::string> overrides = opts.overrides;
  if (!opts.data.empty())
    overrides.push_back("data.path=" + opts.data);
  if (!opts.initCheckpoint.empty())
    overrides.push_back("checkpoint.init=" + opts.initCheckpoint);
  if (!opts.save.empty())
    overrides.push_back("checkpoint.save_dir=" + opts.save);
  // Declared outside the try: when a rank fails, the others are told and
  // the job ends (ReplicaRun::fail) before the backend, with collectives
  // that may still use its memory, is destroyed.
  ReplicaRun replicas;
  std::optional<LoadedExecutable> loaded;
  std::unique_ptr<Trainer> trainer;
  try {
    replicas.join();
    comm::Communicator *group = replicas.group.get();
    std::FILE *out = replicas.out;
    loaded = loadExecutable(
        opts.input, overrides, opts.compile,
        [&](const Config &c) {
          checkReplicaCount(c, *group);
          group->setTimeoutSeconds(c.execution.collective_timeout_seconds);
        },
        group);
    if (!loaded) { // the error is printed
      replicas.failPrinted("the executable could not be built (see its "
                           "messages)");
      return 1;
    }
    if (stopAfterCompile(opts.compile, opts.input, *loaded, out))
      return 0;
    const Config &config = loaded->config;
    if (!opts.resume.empty() && !config.checkpoint.init.empty())
      throw RuntimeError("--resume and --init-checkpoint (or checkpoint.init) "
                         "both say where the weights come from; give one");
    if (opts.saveInitial && config.checkpoint.save_dir.empty())
      throw RuntimeError("--save-initial writes into the save directory: "
                         "give --save DIR (or checkpoint.save_dir)");
    if (opts.saveInitial && !opts.resume.empty())
      throw RuntimeError("--save-initial saves the weights a fresh run "
                         "starts from; a resumed run (--resume) has none");
    int64_t steps = opts.steps > 0 ? opts.steps : config.training.steps;
    replicas.checkSameRun(*loaded->exe, config, steps);
    trainer = std::make_unique<Trainer>(*loaded->exe, config, group);
    trainer->backend().setProfiling(opts.profile);
    std::fprintf(out,
                 "ferry train %s: %lld parameters, %s arena, global batch "
                 "%lld (micro-batch %lld x %lld accumulation%s), %lld steps, "
                 "ready in %.0f ms\n",
                 opts.input.c_str(),
                 static_cast<long long>(loaded->exe->root().parameter_count()),
                 formatByteSize(trainer->backend().arenaBytes()).c_str(),
                 static_cast<long long>(config.training.global_batch_size),
                 static_cast<long long>(config.execution.micro_batch_size),
                 static_cast<long long>(config.gradientAccumulation()),
                 group->size() > 1 ? meshText(config, *group).c_str() : "",
                 static_cast<long long>(steps), loaded->compileMs);
    if (!config.checkpoint.init.empty())
      trainer->initFromCheckpoint(config.checkpoint.init, out);
    if (!opts.resume.empty())
      trainer->resume(opts.resume, out);
    if (trainer->stepsDone() >= steps)
      std::fprintf(out,
                   "the checkpoint is at step %lld, which is not before "
                   "--steps %lld: nothing to train\n",
                   static_cast<long long>(trainer->stepsDone()),
                   static_cast<long long>(steps));
    std::fflush(out);
    installStopHandlers();
    TrainOptions run;
    run.steps = steps;
    run.logEvery = opts.logEvery;
    run.metricsPath = opts.metrics;
    run.tensorboardDir = opts.tensorboard;
    run.saveDir = config.checkpoint.save_dir;
    run.saveInitial = opts.saveInitial;
    RunResult result = trainer->run(run, out);
    const Backend &backend = trainer->backend();
    std::fprintf(out, "device memory: peak %s measured, %s planned%s\n",
                 formatByteSize(backend.peakBytes()).c_str(),
                 formatByteSize(backend.arenaBytes()).c_str(),
                 config.execution.device_memory_limit
                     ? (", budget " +
                        formatByteSize(*config.execution.device_memory_limit))
                           .c_str()
                     : "");
    if (backend.hostBytes() > 0)
      std::fprintf(out,
                   "host link: %s moved (%s of remote buffers in host "
                   "memory)\n",
                   formatByteSize(backend.hostLinkBytes()).c_str(),
                   formatByteSize(backend.hostBytes()).c_str());
    if (group->size() > 1)
      std::fprintf(out, "collectives: %s sent per rank\n",
                   formatByteSize(backend.collectiveBytes()).c_str());
    if (opts.profile)
      std::fputs(trainer->backend().profileReport().c_str(), out);
    std::fflush(out);
    // Interrupted runs exit as the shell expects of a signal (128 + number),
    // after finishing cleanly.
    return result.stopSignal != 0 ? 128 + result.stopSignal : 0;
  } catch (const std::exception &e) {
    replicas.fail(e);
  }
  return 1;
}

} // namespace ferry::cli
