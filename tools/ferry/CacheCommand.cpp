// `ferry cache list|stats|clear`: the compiled-executable cache
// (FERRY_CACHE_DIR, default ~/.cache/ferry; bounded by FERRY_CACHE_MAX_SIZE).
#include "runtime/ByteSize.h"
#include "tools/ferry/Commands.h"

#include "compiler/cache/ExecutableCache.h"
#include "training/config/Config.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

namespace ferry::cli {
namespace {

std::string when(int64_t ns) {
  std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  return buf;
}

int runCache(const std::string &action) {
  try {
    ExecutableCache cache = ExecutableCache::fromEnvironment();
    if (action == "list") {
      auto entries = cache.list();
      std::printf("%s: %zu entries, most recently used first\n",
                  cache.dir().c_str(), entries.size());
      for (const CacheEntryInfo &e : entries)
        std::printf("  %s  %10s  last used %s  (%s)\n", e.key.c_str(),
                    formatByteSize(e.bytes).c_str(), when(e.lastUseNs).c_str(),
                    e.model.empty()
                        ? "unreadable: the entry is damaged; the next compile "
                          "of its config replaces it, or run ferry cache clear"
                        : e.model.c_str());
      return 0;
    }
    if (action == "stats") {
      auto entries = cache.list();
      uint64_t bytes = 0;
      for (const CacheEntryInfo &e : entries)
        bytes += e.bytes;
      CacheStats s = cache.stats();
      if (!s.damaged.empty())
        std::fprintf(stderr, "ferry: warning: %s\n", s.damaged.c_str());
      std::printf("cache %s\n", cache.dir().c_str());
      std::printf("  entries    %zu (%s of %s allowed, FERRY_CACHE_MAX_SIZE)\n",
                  entries.size(), formatByteSize(bytes).c_str(),
                  formatByteSize(cache.maxBytes()).c_str());
      std::printf("  hits       %llu\n",
                  static_cast<unsigned long long>(s.hits));
      std::printf("  misses     %llu\n",
                  static_cast<unsigned long long>(s.misses));
      std::printf("  stores     %llu\n",
                  static_cast<unsigned long long>(s.stores));
      std::printf("  evictions  %llu\n",
                  static_cast<unsigned long long>(s.evictions));
      std::printf("  discarded  %llu (damaged entries removed)\n",
                  static_cast<unsigned long long>(s.discarded));
      return 0;
    }
    size_t n = cache.list().size();
    cache.clear();
    std::printf("cleared %s: %zu entries removed, counters reset\n",
                cache.dir().c_str(), n);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ferry: error: %s\n", e.what());
    return 1;
  }
}

} // namespace

Runner addCacheCommand(CLI::App &app) {
  auto action = std::make_shared<std::string>();
  CLI::App *cmd = app.add_subcommand(
      "cache", "The compiled-executable cache (FERRY_CACHE_DIR, default "
               "~/.cache/ferry): list its entries, show its counters, or "
               "clear it.");
  cmd->add_option("action", *action, "list, stats or clear")
      ->required()
      ->check(CLI::IsMember({"list", "stats", "clear"}));
  return [action] { return runCache(*action); };
}

} // namespace ferry::cli
