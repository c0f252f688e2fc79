// `ferry compile CONFIG [--set K=V]... [--emit graph|training|rt] [-o FILE]
// [--summary]`: loads and validates the config and compiles it. Without
// --emit it compiles the executable through the cache and prints a summary
// (the key, the size, the arena, the phases and the cache entry); -o FILE.fxe
// also writes it to FILE. With --emit it prints or writes the IR of that
// stage. In a runtime-only build (-DFERRY_BUILD_COMPILER=OFF) it says the
// compiler is not built in.
#include "tools/ferry/Commands.h"
#include "tools/ferry/LoadExecutable.h"

#include "runtime/AtomicFile.h"
#include "runtime/ByteSize.h"
#include "training/config/Config.h"
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
  std::string emit; // "" = the executable (into the cache, and -o FILE)
  std::string output;
  bool summary = false;
  bool printConfig = false;
};

#ifdef FERRY_HAVE_COMPILER
// What `ferry compile CONFIG` made, in one short block: the executable's size,
// the arena, the phases, the cache key and where the cache keeps it.
std::string executableSummary(const std::string &configPath,
                              const ferry::CompileResult &compiled, double ms) {
  ExecutableFile file =
      ExecutableFile::fromPayload(compiled.payload, configPath);
  const fxe::Executable &exe = file.root();
  std::string phases;
  for (const fxe::Program *p : *exe.programs()) {
    size_t n = p->phases() ? p->phases()->size() : 0;
    if (n > 0)
      phases += (phases.empty() ? "" : ", ") + std::to_string(n) + " in @" +
                p->name()->str();
  }
  if (phases.empty())
    phases = "none (resident: everything stays in device memory)";
  else if (exe.host_bytes() > 0)
    phases += "; " + formatByteSize(exe.host_bytes()) +
              " of remote buffers in host memory";
  char head[64];
  std::snprintf(head, sizeof head, "%s in %.0f ms",
                compiled.hit ? "found in the cache" : "compiled", ms);
  std::string text = "ferry compile " + configPath + ": " + head + "\n";
  text += "  executable  " + formatByteSize(file.payloadBytes()) + ", " +
          exe.backend()->str() + " backend, " +
          std::to_string(exe.parameter_count()) + " parameters\n";
  text += "  arena       " + formatByteSize(exe.arena_bytes()) + " (states " +
          formatByteSize(exe.state_bytes()) + " + temporaries)\n";
  text += "  phases      " + phases + "\n";
  text += "  key         " + compiled.key + "\n";
  if (compiled.cacheEntry.empty()) {
    text += "  not cached  (--no-cache, or the cache could not be written); "
            "-o FILE.fxe writes it to a file\n";
  } else {
    text += "  cached at   " + compiled.cacheEntry + "\n";
    text += "`ferry train " + configPath +
            "` (with the same --set) loads it from the cache; -o FILE.fxe "
            "writes a copy.\n";
  }
  return text;
}
#endif

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

  // The executable, through the cache; with -o also to FILE.
  if (opts.emit.empty()) {
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
    double ms = elapsedMs();
    if (!opts.output.empty()) {
      try {
        writeExecutableFile(opts.output, payload);
      } catch (const ExecutableError &e) {
        std::fprintf(stderr, "ferry: error: %s\n", e.what());
        return 1;
      }
      if (opts.summary)
        std::printf("ferry compile %s -> %s (%zu bytes) in %.1f ms%s\n",
                    opts.config.c_str(), opts.output.c_str(), payload.size(),
                    ms, compiled.hit ? " (cache hit)" : "");
      return 0;
    }
    std::string summary = executableSummary(opts.config, compiled, ms);
    std::fputs(summary.c_str(), stdout);
    return 0;
  }

  // A stage's IR: compiled here (the cache holds executables only).
  std::string stage = opts.emit;
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
      "Compile a model config (configs/*.yaml) into the executable cache and "
      "print a summary; -o FILE.fxe also writes the executable; --emit STAGE "
      "prints (or with -o writes) the IR of a stage instead.");
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
                "With --emit graph, print a summary of the IR (parameters, "
                "functions, layer loop, tied decoder) instead of the IR "
                "itself; with -o, one line on what was written");
  cmd->add_flag("--print-config", opts->printConfig,
                "Print the resolved config (presets, defaults and --set "
                "applied) in canonical form and exit");
  return [opts] { return runCompile(*opts); };
}

} // namespace ferry::cli
