// `ferry compile CONFIG [--set K=V]... [--emit graph|training|rt] [-o FILE]
// [--summary]`: loads and validates the config and compiles it. With -o
// FILE.fxe (and no --emit) it writes the executable; with --emit it prints
// or writes the IR of that stage. In a runtime-only build
// (-DFERRY_BUILD_COMPILER=OFF) it says the compiler is not built in.
#include "tools/ferry/Commands.h"
#include "tools/ferry/LoadExecutable.h"

#include "runtime/AtomicFile.h"
#include "runtime/config/Config.h"
#include "runtime/executable/ExecutableFile.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#ifdef FERRY_HAVE_COMPILER
#include "compiler/CompileCache.h"
#include "compiler/CompilerApi.h"
#endif

namespace ferry::cli {
namespace {

struct CompileOptions {
  CompileFlags compile;
  std::string config;
  std::vector<std::string> overrides;
  std::string emit; // "" = graph IR to stdout, or the executable with -o
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
  auto elapsedMs = [&] {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
        .count();
  };
  std::string name = moduleNameForConfig(opts.config);

  ferry::CompileRequest request;
  request.useCache = !opts.compile.noCache;
  request.explain = opts.compile.explainCache;
  request.debug.dumpDir = opts.compile.dumpIr;
  request.debug.printAfter = opts.compile.printIrAfter;
  request.debug.timing = opts.compile.timing;
  request.debug.configPath = opts.config;

  // The executable: -o without --emit, through the cache.
  if (opts.emit.empty() && !opts.output.empty()) {
    ferry::CompileResult compiled;
    try {
      compiled = compileThroughCache(config, name, request, stderr);
    } catch (const CacheError &e) {
      std::fprintf(stderr, "ferry: error: %s\n", e.what());
      return 1;
    }
    std::vector<uint8_t> &payload = compiled.payload;
    if (payload.empty())
      return 1;
    try {
      writeExecutableFile(opts.output, payload);
    } catch (const ExecutableError &e) {
      std::fprintf(stderr, "ferry: error: %s\n", e.what());
      return 1;
    }
    if (opts.summary)
      std::printf("ferry compile %s -> %s (%zu bytes) in %.1f ms%s\n",
                  opts.config.c_str(), opts.output.c_str(), payload.size(),
                  elapsedMs(), compiled.hit ? " (cache hit)" : "");
    return 0;
  }

  // A stage's IR: compiled here (the cache holds executables only).
  std::string stage = opts.emit.empty() ? "graph" : opts.emit;
  std::string why;
  const CompilerApi *compiler = openCompiler(why);
  if (!compiler) {
    std::fprintf(stderr, "ferry: error: %s\n", why.c_str());
    return 1;
  }
  std::string ir, graphSummary;
  if (!compiler->emit(config, name, stage, request.debug, ir, graphSummary,
                      stderr))
    return 1;
  double ms = elapsedMs();

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
                opts.config.c_str(), stage.c_str(), ms,
                opts.output.empty() ? "" : ", written to ",
                opts.output.c_str());
    if (stage == "graph")
      std::fputs(graphSummary.c_str(), stdout);
  }
  return 0;
#endif
}

} // namespace

Runner addCompileCommand(CLI::App &app) {
  auto opts = std::make_shared<CompileOptions>();
  CLI::App *cmd = app.add_subcommand(
      "compile",
      "Compile a model config (configs/*.yaml): -o FILE.fxe writes the "
      "executable; --emit STAGE prints (or with -o writes) the IR of a "
      "stage; with neither, prints the graph IR.");
  addCompileFlags(cmd, opts->compile);
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
                  "produces it), training (after autodiff and optimizer "
                  "insertion), rt (kernel calls on the planned arena)")
      ->check(CLI::IsMember({"graph", "training", "rt"}));
  cmd->add_option("-o,--output", opts->output,
                  "Write the executable (or with --emit, the IR) to FILE, "
                  "atomically")
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
