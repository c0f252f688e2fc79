//===- CompilerApi.h - the compiler as the CLI sees it, without MLIR ------===//
//
// The `ferry` executable does not link the compiler: LLVM and MLIR would
// cost every process (`--version`, a cache hit, `train FILE.fxe`) the time
// to map and initialise them. The compiler is the module
// libferry-compiler.so, opened on the first compile that misses the cache
// (or asks for IR); this header is the table of entry points it exports,
// in types the runtime already has.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_COMPILER_COMPILERAPI_H
#define FERRY_COMPILER_COMPILERAPI_H

#include "training/config/Config.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace ferry {

// The debugging side of one compile (compiler/CompileSession.h): not in the
// cache key, since none of it changes the executable.
struct CompileOptions {
  std::string dumpDir;    // --dump-ir: created if missing
  std::string printAfter; // --print-ir-after: a pass argument
  bool timing = false;    // --timing: time per pass on stderr
  std::string cacheKey;   // for the manifest, when known
  std::string configPath; // for the manifest
};

struct CompilerApi {
  int version;            // kCompilerApiVersion of the module's build
  const char *build;      // FERRY_VERSION " (" FERRY_GIT_HASH ")" of its build
  std::size_t configSize; // sizeof(Config) in its build
  // The executable's payload for `config`; empty after an error, which is
  // printed on `log` (with where a failing pass left its reproducer).
  std::vector<uint8_t> (*compile)(const Config &config, const std::string &name,
                                  const std::vector<std::string> &programs,
                                  const CompileOptions &options,
                                  std::FILE *log);
  // The IR after `stage` (graph, training, rt) in `ir`, and for the graph
  // stage its summary (parameters, functions, layer loop) in `summary`.
  // false after an error, printed on `log`.
  bool (*emit)(const Config &config, const std::string &name,
               const std::string &stage, const CompileOptions &options,
               std::string &ir, std::string &summary, std::FILE *log);
};

constexpr int kCompilerApiVersion = 1;

// The module's entry point: extern "C" const CompilerApi *ferry_compiler_api().
#define FERRY_COMPILER_MODULE_ENTRY "ferry_compiler_api"
#define FERRY_COMPILER_MODULE_FILE "libferry-compiler.so"

// The compiler linked into this program, else the module beside the
// executable (or in its ../lib/ferry), opened once. Null, with the reason in
// `why`, when neither is there.
const CompilerApi *openCompiler(std::string &why);

} // namespace ferry

#endif // FERRY_COMPILER_COMPILERAPI_H
