//===- CompileCache.cpp - compile through the executable cache -----------===//

#include "compiler/CompileCache.h"
#include "compiler/PipelineOptionsFor.h"

#include "runtime/executable/ExecutableFile.h"

#include "ferry/Version.h"
#include "llvm/Config/llvm-config.h"

#include <flatbuffers/base.h>

#include <cctype>
#include <sstream>

using namespace ferry;

std::string ferry::moduleNameForConfig(const std::string &configPath) {
  std::string stem = configPath;
  if (size_t slash = stem.find_last_of('/'); slash != std::string::npos)
    stem = stem.substr(slash + 1);
  if (size_t dot = stem.find('.'); dot != std::string::npos)
    stem = stem.substr(0, dot);
  for (char &c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  if (stem.empty() || std::isdigit(static_cast<unsigned char>(stem[0])))
    stem = "model_" + stem;
  return stem;
}

CacheKey ferry::executableCacheKey(const Config &config,
                                   const std::vector<std::string> &programs) {
  CacheKey key;
  // The resolved config, one field per key (canonical: schema order, every
  // key, resolved values; comments and key order in the file do not count).
  std::istringstream lines(config.canonicalText());
  std::string line;
  while (std::getline(lines, line)) {
    size_t colon = line.find(": ");
    if (colon == std::string::npos)
      continue;
    key.fields.push_back(
        {"config." + line.substr(0, colon), line.substr(colon + 2)});
  }
  // What the passes are asked to do: the pipelines' options as `ferry
  // compile` derives them (the one derivation, PipelineOptionsFor.h), so a
  // change in how they derive changes the key.
  for (const auto &[flag, value] :
       pipelineOptionsFor(config, programs).fields())
    key.fields.push_back({"pipeline." + flag, value});
  key.fields.push_back({"target.backend", config.execution.backend});
  key.fields.push_back({"target.cuda_architectures",
#ifdef FERRY_CUDA_ARCHITECTURES
                        FERRY_CUDA_ARCHITECTURES
#else
                        "none"
#endif
  });
  key.fields.push_back({"compiler.version", FERRY_VERSION});
  key.fields.push_back({"compiler.git_hash", FERRY_GIT_HASH});
  key.fields.push_back({"library.llvm", LLVM_VERSION_STRING});
  key.fields.push_back({"library.flatbuffers",
                        std::to_string(FLATBUFFERS_VERSION_MAJOR) + "." +
                            std::to_string(FLATBUFFERS_VERSION_MINOR) + "." +
                            std::to_string(FLATBUFFERS_VERSION_REVISION)});
  key.fields.push_back(
      {"executable.format", std::to_string(kExecutableFormatVersion)});
  return key;
}

CompileResult
ferry::compileThroughCache(const Config &config, const std::string &name,
                           const CompileRequest &request, std::FILE *log,
                           const std::vector<std::string> &programs) {
  CompileResult result;
  CacheKey key = executableCacheKey(config, programs);
  result.key = key.hex();
  const CompileOptions &debug = request.debug;
  bool wantsPasses =
      !debug.dumpDir.empty() || !debug.printAfter.empty() || debug.timing;
  std::optional<ExecutableCache> cache;
  if (request.useCache)
    cache.emplace(ExecutableCache::fromEnvironment());
  if (cache && !wantsPasses) {
    if (std::optional<std::vector<uint8_t>> hit = cache->lookup(key, log)) {
      if (request.explain && log)
        std::fprintf(log, "cache: hit %s in %s\n", result.key.c_str(),
                     cache->dir().c_str());
      result.payload = std::move(*hit);
      result.hit = true;
      result.cacheEntry = cache->entryPath(key);
      return result;
    }
    if (request.explain && log) {
      auto [nearest, diffs] = cache->nearest(key);
      if (nearest.empty()) {
        std::fprintf(log, "cache: miss %s: %s holds no entry\n",
                     result.key.c_str(), cache->dir().c_str());
      } else {
        std::fprintf(log,
                     "cache: miss %s; the nearest entry %s differs in %zu "
                     "field%s:\n",
                     result.key.c_str(), nearest.c_str(), diffs.size(),
                     diffs.size() == 1 ? "" : "s");
        for (const std::string &d : diffs)
          std::fprintf(log, "  %s\n", d.c_str());
      }
    }
  } else if (request.explain && log) {
    std::fprintf(log, "cache: not consulted (%s)\n",
                 cache ? "dumps and timing need the passes to run"
                       : "--no-cache");
  }
  std::string why;
  const CompilerApi *compiler = openCompiler(why);
  if (!compiler) {
    if (log)
      std::fprintf(log, "ferry: error: %s\n", why.c_str());
    return result;
  }
  CompileOptions options = debug;
  options.cacheKey = result.key;
  result.payload = compiler->compile(config, name, programs, options, log);
  if (!result.payload.empty() && cache)
    result.cacheEntry = cache->store(key, result.payload, log).value_or("");
  return result;
}
