// ferry: compile BERT-class model configs to executables and train them. This
// file sets up the command line; each subcommand lives in its own file.
#include "tools/ferry/Commands.h"

#include "runtime/BuildInfo.h"

#include <cstdio>

int main(int argc, char **argv) {
  CLI::App app{
      "ferry: a graph compiler and runtime that trains BERT-class models, "
      "including models larger than device memory.\n\n"
      "  ferry compile configs/bert-tiny.yaml --summary   what the compiler "
      "builds\n"
      "  ferry compile configs/bert-base.yaml --set model.layers=6 -o "
      "bert.mlir\n",
      "ferry"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version,
               "Print the version, git hash and built-in features (compiler, "
               "CUDA, MPI) and the CUDA devices visible");

  ferry::cli::Runner compile = ferry::cli::addCompileCommand(app);

  CLI11_PARSE(app, argc, argv);

  if (version) {
    std::fputs(ferry::describeBuild(/*probeDevices=*/true).c_str(), stdout);
    return 0;
  }
  if (app.got_subcommand("compile"))
    return compile();
  std::fputs(app.help().c_str(), stdout);
  return 0;
}
