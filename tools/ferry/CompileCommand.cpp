// `ferry compile CONFIG [--set K=V]... [--emit graph] [-o FILE] [--summary]`:
// loads and validates the config, builds the model's IR and prints or writes
// it. In a runtime-only build (-DFERRY_BUILD_COMPILER=OFF) it says so.
#include "tools/ferry/Commands.h"

#include "runtime/AtomicFile.h"
#include "runtime/config/Config.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#ifdef FERRY_HAVE_COMPILER
#include "compiler/GraphCompile.h"
#include "compiler/GraphSummary.h"
#include "compiler/Registration.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"
#endif

namespace ferry::cli {
namespace {

struct CompileOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::string emit = "graph";
  std::string output;
  bool summary = false;
  bool printConfig = false;
};

int runCompile(const CompileOptions &opts) {
  Config config;
  try {
    config = loadConfig(opts.config, opts.overrides);
  } catch (const ConfigError &e) {
    std::fprintf(stderr, "ferry: error: %s\n", e.what());
    return 1;
  }
  if (opts.printConfig) {
    std::fputs(config.canonicalText().c_str(), stdout);
    return 0;
  }
#ifndef FERRY_HAVE_COMPILER
  std::fprintf(stderr,
               "ferry: error: this ferry was built without the compiler "
               "(-DFERRY_BUILD_COMPILER=OFF). Compile on a machine with MLIR "
               "22 and carry the result here.\n");
  return 1;
#else
  auto start = std::chrono::steady_clock::now();
  mlir::DialectRegistry registry;
  registerFerryDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      compileGraph(context, config, moduleNameForConfig(opts.config));
  if (!module)
    return 1;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  std::string ir;
  llvm::raw_string_ostream irStream(ir);
  module->print(irStream);

  if (!opts.output.empty()) {
    if (auto error = writeFileAtomically(opts.output, ir)) {
      std::fprintf(stderr, "ferry: error: %s\n", error->c_str());
      return 1;
    }
  } else if (!opts.summary) {
    std::fputs(ir.c_str(), stdout);
  }
  if (opts.summary) {
    std::printf("ferry compile %s -> %s IR in %.1f ms%s%s\n",
                opts.config.c_str(), opts.emit.c_str(), seconds * 1e3,
                opts.output.empty() ? "" : ", written to ",
                opts.output.c_str());
    std::fputs(summarizeGraph(*module, config).c_str(), stdout);
  }
  return 0;
#endif
}

} // namespace

Runner addCompileCommand(CLI::App &app) {
  auto opts = std::make_shared<CompileOptions>();
  CLI::App *cmd = app.add_subcommand(
      "compile",
      "Compile a model config (configs/*.yaml) to IR. Prints the IR, or "
      "writes it with -o.");
  cmd->add_option("config", opts->config,
                  "Model config, e.g. configs/bert-tiny.yaml")
      ->required();
  cmd->add_option("--set", opts->overrides,
                  "Override a config key, e.g. --set model.layers=4 "
                  "(repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--emit", opts->emit,
                  "Stage to emit: graph (the model as the BERT builder "
                  "produces it; the phase and rt stages arrive with the "
                  "training passes)")
      ->check(CLI::IsMember({"graph"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output,
                  "Write the IR to FILE (atomically) instead of stdout")
      ->type_name("FILE");
  cmd->add_flag("--summary", opts->summary,
                "Print a summary of the IR (parameters, functions, layer "
                "loop, tied decoder) instead of the IR itself");
  cmd->add_flag("--print-config", opts->printConfig,
                "Print the resolved config (presets, defaults and --set "
                "applied) in canonical form and exit");
  return [opts] { return runCompile(*opts); };
}

} // namespace ferry::cli
