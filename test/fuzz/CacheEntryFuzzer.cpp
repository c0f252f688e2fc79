// libFuzzer target: the compile cache's entry reader (header, sizes, key
// fields, checksum) through lookup, list, nearest and stats, and a hit's
// payload loaded as the CLI loads it. The entry is stored under the key its
// own key-fields section names when that parses, so a well-formed input
// reaches the key comparison and the payload.
#include "compiler/cache/ExecutableCache.h"
#include "runtime/executable/ExecutableFile.h"
#include "test/fuzz/FuzzFile.h"

#include <cstring>
#include <filesystem>
#include <sstream>

namespace {

// The "name=value" lines at [32, 32+K) of an entry, as a key; a fixed key
// when the header does not give them.
ferry::CacheKey keyOfEntry(const uint8_t *data, size_t size) {
  ferry::CacheKey key;
  uint64_t keySize = 0;
  if (size >= 32)
    std::memcpy(&keySize, data + 16, 8);
  if (size < 32 || keySize > size - 32) {
    key.fields.push_back({"fuzz", "fixed"});
    return key;
  }
  std::istringstream lines(
      std::string(reinterpret_cast<const char *>(data) + 32, keySize));
  std::string line;
  while (std::getline(lines, line)) {
    size_t eq = line.find('=');
    key.fields.push_back({line.substr(0, eq), eq == std::string::npos
                                                  ? std::string()
                                                  : line.substr(eq + 1)});
  }
  return key;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string dir = ferry::fuzz::scratchPath(".cache");
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  ferry::ExecutableCache cache(dir, 64 << 20);
  ferry::CacheKey key = keyOfEntry(data, size);
  ferry::fuzz::writeInput(cache.entryPath(key), data, size);
  try {
    (void)cache.list();
    (void)cache.nearest(key);
    if (auto payload = cache.lookup(key, nullptr)) {
      try {
        ferry::ExecutableFile::fromPayload(std::move(*payload), "cache entry");
      } catch (const ferry::ExecutableError &) {
      }
    }
    (void)cache.stats();
  } catch (const ferry::CacheError &) {
  }
  std::filesystem::remove(cache.entryPath(key), ignored);
  return 0;
}
