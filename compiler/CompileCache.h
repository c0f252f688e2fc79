//===- CompileCache.h - compile through the executable cache ----*- C++ -*-===//
//
// `ferry compile` and `ferry train CONFIG` look compiled executables up in
// the cache (compiler/cache/ExecutableCache.h) before compiling. The key is
// the SHA-256 of: every key of the resolved config in canonical form, the
// pass options the config selects, the target (backend, CUDA architectures),
// ferry's version and git hash, and the versions of LLVM/MLIR, FlatBuffers
// and the executable format. Dump and debug flags are not in it. No MLIR
// here: a miss opens the compiler module (CompilerApi.h).
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_COMPILER_COMPILECACHE_H
#define FERRY_COMPILER_COMPILECACHE_H

#include "compiler/CompilerApi.h"
#include "compiler/cache/ExecutableCache.h"
#include "training/config/Config.h"

#include <cstdio>
#include <string>
#include <vector>

namespace ferry {

// "configs/bert-tiny.yaml" -> "bert_tiny": the module's symbol name.
std::string moduleNameForConfig(const std::string &configPath);

CacheKey executableCacheKey(const Config &config,
                            const std::vector<std::string> &programs);

struct CompileRequest {
  bool useCache = true; // --no-cache turns it off
  bool explain = false; // --explain-cache
  CompileOptions debug; // --dump-ir, --print-ir-after, --timing
};

struct CompileResult {
  std::vector<uint8_t> payload; // empty after a compile error
  bool hit = false;
  std::string key;
  std::string cacheEntry; // the entry file it was read from or stored in;
                          // empty when not cached (--no-cache, a failed store)
};

// Looks the config up in the cache (unless the request turns it off or asks
// for dumps, which need the passes to run), compiles on a miss and stores
// the result. Cache trouble is a warning on `log`, never a failed compile.
CompileResult compileThroughCache(const Config &config, const std::string &name,
                                  const CompileRequest &request, std::FILE *log,
                                  const std::vector<std::string> &programs = {
                                      "train_step", "eval_step"});

} // namespace ferry

#endif // FERRY_COMPILER_COMPILECACHE_H
