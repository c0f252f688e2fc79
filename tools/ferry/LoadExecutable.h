// What `ferry train` and `ferry eval` share: a config compiled on the fly, or
// a compiled executable (FILE.fxe) with the overrides it can still take.
#pragma once

#include "runtime/comm/Communicator.h"

#include "runtime/executable/ExecutableFile.h"
#include "training/config/Config.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ferry::cli {

// How a config is compiled: through the cache or not, and what the compile
// records for debugging (none of which changes the executable).
struct CompileFlags {
  bool noCache = false;
  bool explainCache = false;
  std::string dumpIr;
  std::string printIrAfter;
  bool timing = false;
  bool compileOnly = false; // the run commands' --compile-only
};
// --no-cache, --explain-cache, --dump-ir DIR, --print-ir-after PASS, --timing.
void addCompileFlags(CLI::App *cmd, CompileFlags &flags);
// --compile-only, for the commands that run what they compile (train, eval,
// squad train/predict): compile exactly what the command would run into the
// executable cache, say so, and stop; e.g. to fill a cache here for a
// machine whose ferry has no compiler (the GPU kit, docs/gpu-kit.md).
void addCompileOnlyFlag(CLI::App *cmd, CompileFlags &flags);

struct LoadedExecutable {
  Config config;
  std::optional<ExecutableFile> exe;
  double compileMs = 0;
  bool cacheHit = false;
};

// After loadExecutable, with --compile-only: prints what was compiled (to
// `out`) and returns true, the command then exits 0.
bool stopAfterCompile(const CompileFlags &flags, const std::string &input,
                      const LoadedExecutable &loaded, std::FILE *out);

// Loads `input` (a config or FILE.fxe) with `overrides`. Returns nullopt after
// printing an error (a compile error, an override a compiled executable
// cannot take, a ferry built without the compiler given a config). Throws
// ConfigError / ExecutableError for the caller to print.
// `checkConfig`, when given, sees the config before anything is compiled
// (and may throw). `job`, the processes of a run (null or one: this one
// alone): every rank calls it; rank 0 compiles a config (or hits the
// cache) and sends the executable to the others, which check it (format,
// size, checksum) and that its checksum is the one rank 0 sent (SPMD: one
// executable for every rank).
std::optional<LoadedExecutable>
loadExecutable(const std::string &input,
               const std::vector<std::string> &overrides,
               const CompileFlags &flags = {},
               const std::function<void(const Config &)> &checkConfig = {},
               comm::Communicator *job = nullptr);

} // namespace ferry::cli
