// ferry: compile BERT-class model configs to executables and train them. This
// file sets up the command line; each subcommand lives in its own file.
#include "tools/ferry/Commands.h"
#include "tools/ferry/RunApi.h"

#include "runtime/BuildInfo.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

// The CPU backend runs OpenMP loops between OpenBLAS calls, and OpenBLAS
// (Debian's pthread build) has its own threads. libgomp's default lets idle
// OpenMP threads spin, taking the cores OpenBLAS's threads need: bert-mini
// trains at ~28 samples/s with the default, 8 with OMP_WAIT_POLICY=active and
// 39 with passive (2 cores; docs/benchmarks.md). libgomp reads the variable
// once, before main, so when the user has not chosen a policy ferry sets
// passive and re-executes itself; if that fails it runs on as it is. Only the
// commands that run kernels (train, eval) pay for the second start.
static void preferPassiveOpenMPThreads(int argc, char **argv) {
  if (std::getenv("OMP_WAIT_POLICY"))
    return;
  bool runsKernels = false;
  for (int i = 1; i < argc && !runsKernels; ++i)
    runsKernels =
        std::strcmp(argv[i], "train") == 0 || std::strcmp(argv[i], "eval") == 0;
  if (!runsKernels)
    return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);
}

int main(int argc, char **argv) {
  preferPassiveOpenMPThreads(argc, argv);
  CLI::App app{
      "ferry: a graph compiler and runtime that trains BERT-class models, "
      "including models larger than device memory.\n\n"
      "  ferry compile configs/bert-tiny.yaml                         compile into the cache\n"
      "  ferry compile configs/bert-tiny.yaml --emit graph --summary  what the builder makes\n"
      "  ferry compile configs/bert-base.yaml --set model.layers=6 -o bert.fxe\n"
      "  ferry train configs/bert-tiny.yaml --steps 30                train on the CPU\n"
      "  ferry inspect bert.fxe                                       what an executable holds\n"
      "  ferry report run.jsonl --html -o curves.html                 training curves\n",
      "ferry"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version,
               "Print the version, git hash and built-in features (compiler, "
               "CUDA, MPI); `ferry devices` lists the devices");

  ferry::cli::Runner compile = ferry::cli::addCompileCommand(app);
  ferry::cli::Runner train = ferry::cli::addTrainCommand(app);
  ferry::cli::Runner eval = ferry::cli::addEvalCommand(app);
  ferry::cli::Runner inspect = ferry::cli::addInspectCommand(app);
  ferry::cli::Runner plan = ferry::cli::addPlanCommand(app);
  ferry::cli::Runner cache = ferry::cli::addCacheCommand(app);
  ferry::cli::Runner report = ferry::cli::addReportCommand(app);
  ferry::cli::Runner tokenize = ferry::cli::addTokenizeCommand(app);
  ferry::cli::Runner squad = ferry::cli::addSquadCommand(app);
  CLI::App *devices = app.add_subcommand(
      "devices", "List the devices each backend can use (opens the CUDA "
                 "backend, so it maps the CUDA libraries)");

  CLI11_PARSE(app, argc, argv);

  if (version) {
    std::fputs(ferry::describeBuild().c_str(), stdout);
    return 0;
  }
  if (devices->parsed()) {
    std::string why;
    const ferry::cli::RunApi *run = ferry::cli::openRunModule(why);
    if (!run) {
      std::fprintf(stderr, "ferry: error: %s\n", why.c_str());
      return 1;
    }
    return run->devices();
  }
  if (app.got_subcommand("compile"))
    return compile();
  if (app.got_subcommand("train"))
    return train();
  if (app.got_subcommand("eval"))
    return eval();
  if (app.got_subcommand("inspect"))
    return inspect();
  if (app.got_subcommand("plan"))
    return plan();
  if (app.got_subcommand("cache"))
    return cache();
  if (app.got_subcommand("report"))
    return report();
  if (app.got_subcommand("tokenize"))
    return tokenize();
  if (app.got_subcommand("squad"))
    return squad();
  std::fputs(app.help().c_str(), stdout);
  return 0;
}
