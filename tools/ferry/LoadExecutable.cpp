// Compiles a config or loads a compiled executable for `ferry train` and
// `ferry eval`.
#include "tools/ferry/LoadExecutable.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#ifdef FERRY_HAVE_COMPILE_CACHE
#include "compiler/CompileCache.h"
#endif

namespace ferry::cli {
namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Keys a compiled executable can still take: they change what the runtime
// feeds, evaluates, saves and allows, not the program.
// Whether a --set applies to a compiled executable: the key's declared stage
// is a run-time one (an unknown key is left to the config parser's error).
bool runtimeOnlyKey(const std::string &assignment) {
  std::optional<KeyStage> stage =
      keyStage(assignment.substr(0, assignment.find('=')));
  return !stage || *stage != KeyStage::Compile;
}

// The run-time keys, for the message that refuses a compile-time one.
std::string runTimeKeyList() {
  std::string list;
  for (const std::string &key : configKeys())
    if (keyStage(key) != KeyStage::Compile)
      list += (list.empty() ? "" : ", ") + key;
  return list;
}

} // namespace

void addCompileFlags(CLI::App *cmd, CompileFlags &flags) {
  cmd->add_flag("--no-cache", flags.noCache,
                "Compile without looking in or writing to the executable "
                "cache (FERRY_CACHE_DIR, default ~/.cache/ferry)");
  cmd->add_flag("--explain-cache", flags.explainCache,
                "Say whether the cache hit, and on a miss which key fields "
                "differ from the nearest entry");
  cmd->add_option("--dump-ir", flags.dumpIr,
                  "Write the IR after every pass to DIR/NN_<pass>.mlir (each "
                  "headed by the pass and its options) with DIR/manifest.json; "
                  "a failing pass leaves DIR/reproducer.mlir")
      ->type_name("DIR");
  cmd->add_option("--print-ir-after", flags.printIrAfter,
                  "Print the IR after the pass with this argument (e.g. "
                  "ferry-phased-execution) to stderr")
      ->type_name("PASS");
  cmd->add_flag("--timing", flags.timing,
                "Print the time each pass took (stderr)");
}

void addCompileOnlyFlag(CLI::App *cmd, CompileFlags &flags) {
  cmd->add_flag("--compile-only", flags.compileOnly,
                "Compile what this command would run into the executable "
                "cache (FERRY_CACHE_DIR), then stop without running it");
}

bool stopAfterCompile(const CompileFlags &flags, const std::string &input,
                      const LoadedExecutable &loaded, std::FILE *out) {
  if (!flags.compileOnly)
    return false;
  std::fprintf(out, "ferry: --compile-only: %s %s (%.0f ms); not run\n",
               input.c_str(),
               endsWith(input, ".fxe") ? "is already compiled"
               : loaded.cacheHit       ? "was in the executable cache"
               : flags.noCache         ? "compiled (--no-cache: not stored)"
                                       : "compiled into the executable cache",
               loaded.compileMs);
  std::fflush(out);
  return true;
}

#ifdef FERRY_HAVE_COMPILE_CACHE
namespace {

// Rank 0's executable to every other rank of `job`: its size and checksum,
// then its bytes. The others wait as long as rank 0 compiles (a compile is
// not a stalled collective; a failed one reaches them as its failure
// notice) and check what they receive.
std::optional<ExecutableFile> shareExecutable(comm::Communicator &job,
                                              std::optional<ExecutableFile> exe,
                                              const std::string &input) {
  double timeout = job.timeoutSeconds();
  job.setTimeoutSeconds(std::max(timeout, 7 * 24 * 3600.0));
  uint64_t header[2] = {0, 0}; // bytes, checksum
  if (job.rank() == 0) {
    header[0] = exe->payload().size();
    header[1] = exe->checksum();
  }
  job.broadcast(header, sizeof header, 0, "the wait for rank 0's compile");
  job.setTimeoutSeconds(timeout);
  std::vector<uint8_t> bytes(job.rank() == 0 ? 0 : header[0]);
  uint8_t *data = job.rank() == 0 ? const_cast<uint8_t *>(exe->payload().data())
                                  : bytes.data();
  job.broadcast(data, static_cast<int64_t>(header[0]), 0,
                "the executable from rank 0");
  if (job.rank() == 0)
    return exe;
  ExecutableFile received =
      ExecutableFile::fromPayload(std::move(bytes), input + " (from rank 0)");
  if (received.checksum() != header[1])
    throw RuntimeError(fmt::format(
        "{}the executable received from rank 0 has checksum {:016x}, but "
        "rank 0 sent {:016x}; the transfer was damaged: start the run again",
        job.prefix(), received.checksum(), header[1]));
  return received;
}

} // namespace
#endif

std::optional<LoadedExecutable>
loadExecutable(const std::string &input,
               const std::vector<std::string> &overrides,
               const CompileFlags &flags,
               const std::function<void(const Config &)> &checkConfig,
               comm::Communicator *job) {
  LoadedExecutable out;
  auto start = std::chrono::steady_clock::now();
  if (endsWith(input, ".fxe")) {
    out.exe = ExecutableFile::load(input);
    for (const std::string &o : overrides)
      if (!runtimeOnlyKey(o)) {
        std::fprintf(stderr,
                     "ferry: error: --set %s changes the compiled program in "
                     "%s; recompile with `ferry compile CONFIG --set %s -o "
                     "FILE.fxe` (a compiled executable accepts only the "
                     "run-time keys: %s)\n",
                     o.c_str(), input.c_str(), o.c_str(),
                     runTimeKeyList().c_str());
        return std::nullopt;
      }
    out.config = parseConfig(out.exe->root().config_yaml()->str(),
                             input + " (embedded config)", overrides);
    if (checkConfig)
      checkConfig(out.config);
  } else {
    out.config = loadConfig(input, overrides);
    if (checkConfig)
      checkConfig(out.config);
#ifndef FERRY_HAVE_COMPILE_CACHE
    std::fprintf(stderr,
                 "ferry: error: this ferry was built without the compiler "
                 "(-DFERRY_BUILD_COMPILER=OFF): use a compiled executable "
                 "instead (FILE.fxe)\n");
    return std::nullopt;
#else
    // One executable for every rank: rank 0 compiles it and sends it.
    const bool shared = job && job->size() > 1 && !flags.compileOnly;
    if (shared && job->rank() != 0) {
      out.exe = shareExecutable(*job, std::nullopt, input);
      out.compileMs = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      return out;
    }
    CompileRequest request;
    request.useCache = !flags.noCache;
    request.explain = flags.explainCache;
    request.debug.dumpDir = flags.dumpIr;
    request.debug.printAfter = flags.printIrAfter;
    request.debug.timing = flags.timing;
    request.debug.configPath = input;
    CompileResult compiled = compileThroughCache(
        out.config, moduleNameForConfig(input), request, stderr);
    if (compiled.payload.empty())
      return std::nullopt;
    out.cacheHit = compiled.hit;
    out.exe = ExecutableFile::fromPayload(std::move(compiled.payload), input);
    if (shared)
      out.exe = shareExecutable(*job, std::move(out.exe), input);
#endif
  }
  out.compileMs = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  return out;
}

} // namespace ferry::cli
