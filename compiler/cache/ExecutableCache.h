// The compiled-executable cache (FERRY_CACHE_DIR, default ~/.cache/ferry):
// one file per entry, keyed by the SHA-256 of everything that shapes the
// executable (the resolved config in canonical form, the pass options, the
// target, the compiler's build and the libraries that shape the output).
//
// Entry file <dir>/<key>.fxc:
//   offset  size  field
//   0       8     magic "FERRYFXC"
//   8       4     entry format version (little-endian u32), kCacheFormatVersion
//   12      4     reserved, 0
//   16      8     key-fields text size K (u64)
//   24      8     payload size P (u64)
//   32      K     the key fields, "name=value" lines (for --explain-cache)
//   32+K    P     the executable's payload (an .fxe without its header)
//   32+K+P  8     xxHash64 (seed 0) of bytes [0, 32+K+P)
// Written to a temporary file in the directory, flushed and renamed, so two
// processes storing the same key both succeed and leave one valid entry.
// The last-use stamp is the entry's modification time, set explicitly on
// every hit; beyond FERRY_CACHE_MAX_SIZE (default 5 GiB) the least recently
// used entries are removed. Hits, misses, evictions and discarded entries are
// counted in <dir>/stats (updated under a lock file), which `ferry cache
// stats` reports and tests assert on.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ferry {

constexpr uint32_t kCacheFormatVersion = 1;

class CacheError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// What a cache key is made of, in order. The key is the SHA-256 of text().
struct CacheKey {
  std::vector<std::pair<std::string, std::string>> fields;
  std::string text() const; // "name=value\n" per field
  std::string hex() const;  // 64 hex digits
};

struct CacheEntryInfo {
  std::string key, path;
  uint64_t bytes = 0;
  int64_t lastUseNs = 0; // the last-use stamp (modification time)
  std::string model;     // the key's config.model.* summary, for listing
};

struct CacheStats {
  uint64_t hits = 0, misses = 0, stores = 0, evictions = 0, discarded = 0;
  // A damaged stats file: what is wrong with it ("" = nothing). Its counters
  // then read as 0, and the next count rewrites the file whole.
  std::string damaged;
};

class ExecutableCache {
public:
  ExecutableCache(std::string dir, uint64_t maxBytes);
  // FERRY_CACHE_DIR (default $HOME/.cache/ferry) and FERRY_CACHE_MAX_SIZE
  // (a size such as 5GiB; default 5 GiB). Throws CacheError on a bad value.
  static ExecutableCache fromEnvironment();

  const std::string &dir() const { return dir_; }
  uint64_t maxBytes() const { return maxBytes_; }

  // The payload stored under `key`, or nullopt (a miss). A damaged entry
  // (bad magic, version, size or checksum) is reported on `log` as a
  // warning, removed, and counted as discarded and missed.
  std::optional<std::vector<uint8_t>> lookup(const CacheKey &key,
                                             std::FILE *log);
  // Stores `payload` under `key` atomically, then evicts least recently used
  // entries beyond the size bound. Failures are warnings on `log`: a cache
  // that cannot be written never fails a compile. Returns the entry's path
  // when it is in the cache afterwards (not when the write failed or the
  // entry alone exceeds the bound and was evicted).
  std::optional<std::string> store(const CacheKey &key,
                                   const std::vector<uint8_t> &payload,
                                   std::FILE *log);

  // Where the entry for `key` lives (whether or not it exists).
  std::string entryPath(const CacheKey &key) const;

  std::vector<CacheEntryInfo> list() const; // most recently used first
  CacheStats stats() const;
  void clear(); // every entry and the counters

  // For a miss: the stored entry whose key fields differ from `key` in the
  // fewest fields, and those differences ("name: stored -> wanted"); empty
  // when the cache holds no readable entry.
  std::pair<std::string, std::vector<std::string>>
  nearest(const CacheKey &key) const;

private:
  void count(uint64_t CacheStats::*field, uint64_t n = 1);
  void evict(std::FILE *log);
  uint64_t removeBeyondBound(std::FILE *log); // under the lock

  std::string dir_;
  uint64_t maxBytes_;
};

} // namespace ferry
