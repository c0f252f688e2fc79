// The executable cache: keys, entries, damage, the size bound, nearest-entry
// explanations. Each test uses its own directory.
#include "compiler/cache/ExecutableCache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace ferry;
namespace fs = std::filesystem;

namespace {

std::string freshDir(const std::string &name) {
  std::string dir =
      "/tmp/ferry-cache-test-" + name + "-" + std::to_string(::getpid());
  fs::remove_all(dir);
  return dir;
}

CacheKey key(const std::string &layers, const std::string &phased = "0") {
  CacheKey k;
  k.fields = {{"config.model.layers", layers}, {"pipeline.phased", phased}};
  return k;
}

std::vector<uint8_t> payload(size_t n, uint8_t seed) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i)
    p[i] = static_cast<uint8_t>(seed + i * 7);
  return p;
}

} // namespace

TEST(ExecutableCache, KeyIsTheSha256OfTheFields) {
  // python3 -c "import hashlib; print(hashlib.sha256(
  //   b'config.model.layers=2\npipeline.phased=0\n').hexdigest())"
  EXPECT_EQ(key("2").hex(),
            "d2f7ee3ee319f65fad04a674807879e85297bb1321e8678ec5bc3082a2b1b44f");
  EXPECT_NE(key("2").hex(), key("3").hex());
}

TEST(ExecutableCache, StoreThenLookupCountsAHit) {
  ExecutableCache cache(freshDir("hit"), 1 << 20);
  EXPECT_FALSE(cache.lookup(key("2"), nullptr));
  cache.store(key("2"), payload(1000, 1), nullptr);
  auto got = cache.lookup(key("2"), nullptr);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, payload(1000, 1));
  CacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.stores, 1u);
  EXPECT_EQ(cache.list().size(), 1u);
  cache.clear();
  EXPECT_EQ(cache.list().size(), 0u);
  EXPECT_EQ(cache.stats().hits, 0u);
}

TEST(ExecutableCache, EveryDamagedByteIsDetectedAndRemoved) {
  ExecutableCache cache(freshDir("damage"), 1 << 20);
  cache.store(key("2"), payload(300, 9), nullptr);
  std::string path = cache.list().at(0).path;
  std::ifstream in(path, std::ios::binary);
  std::string good((std::istreambuf_iterator<char>(in)), {});
  for (size_t i = 0; i < good.size(); i += 37) {
    std::string bad = good;
    bad[i] ^= 0x10;
    std::ofstream(path, std::ios::binary) << bad;
    EXPECT_FALSE(cache.lookup(key("2"), nullptr)) << "flipped byte " << i;
    EXPECT_FALSE(fs::exists(path)) << "damaged entry kept, byte " << i;
  }
  for (size_t cut : {size_t(0), size_t(10), good.size() - 1}) {
    std::ofstream(path, std::ios::binary) << good.substr(0, cut);
    EXPECT_FALSE(cache.lookup(key("2"), nullptr)) << "truncated to " << cut;
  }
  EXPECT_GT(cache.stats().discarded, 5u);
}

TEST(ExecutableCache, TheBoundEvictsTheLeastRecentlyUsed) {
  // Entries of ~1 KiB under a 2.5 KiB bound: two fit.
  ExecutableCache cache(freshDir("bound"), 2560);
  cache.store(key("1"), payload(1000, 1), nullptr);
  cache.store(key("2"), payload(1000, 2), nullptr);
  ::usleep(20000);                              // distinct last-use stamps
  ASSERT_TRUE(cache.lookup(key("1"), nullptr)); // 1 is now newer than 2
  ::usleep(20000);
  cache.store(key("3"), payload(1000, 3), nullptr);
  EXPECT_TRUE(cache.lookup(key("1"), nullptr));
  EXPECT_FALSE(cache.lookup(key("2"), nullptr));
  EXPECT_TRUE(cache.lookup(key("3"), nullptr));
  uint64_t total = 0;
  for (const CacheEntryInfo &e : cache.list())
    total += e.bytes;
  EXPECT_LE(total, 2560u);
  EXPECT_EQ(cache.stats().evictions, 1u);
}

TEST(ExecutableCache, NearestNamesTheDifferingFields) {
  ExecutableCache cache(freshDir("nearest"), 1 << 20);
  EXPECT_TRUE(cache.nearest(key("2")).first.empty());
  cache.store(key("2", "1"), payload(10, 1), nullptr);
  cache.store(key("7", "1"), payload(10, 2), nullptr); // differs in two
  auto [nearest, diffs] = cache.nearest(key("2", "0"));
  EXPECT_EQ(nearest, key("2", "1").hex());
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0], "pipeline.phased: 1 -> 0");
}

TEST(ExecutableCache, BadSizeSettingIsAnError) {
  ::setenv("FERRY_CACHE_MAX_SIZE", "big", 1);
  try {
    ExecutableCache::fromEnvironment();
    FAIL() << "expected an error";
  } catch (const CacheError &e) {
    EXPECT_NE(std::string(e.what()).find("FERRY_CACHE_MAX_SIZE='big'"),
              std::string::npos);
  }
  ::unsetenv("FERRY_CACHE_MAX_SIZE");
}
