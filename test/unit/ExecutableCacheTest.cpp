// The executable cache: keys, entries, damage, the size bound, nearest-entry
// explanations. Each test uses its own directory.
#include "compiler/cache/ExecutableCache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/wait.h>
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

// Many processes on one host storing and looking up at once (issue 32, item
// 6): the same keys (every process stores the same bytes under them, as
// ranks compiling one config do) and keys of their own. Children are forked
// and released together through a pipe; each checks that a lookup returns
// either nothing or exactly the bytes stored under that key, never another
// entry's or a torn one.
namespace {

constexpr int kProcesses = 8, kRounds = 12, kShared = 5;

CacheKey sharedKey(int i) { return key("shared" + std::to_string(i)); }
CacheKey ownKey(int process, int round) {
  return key("own" + std::to_string(process) + "." + std::to_string(round));
}
std::vector<uint8_t> sharedBytes(int i) { return payload(700 + i * 50, i); }
std::vector<uint8_t> ownBytes(int process, int round) {
  return payload(500 + round * 13, static_cast<uint8_t>(process * 31 + round));
}

// Exit status of one child: 0, or the round whose lookup was wrong + 1.
// Without eviction (`bounded` false) a process's own key, just stored, must
// be found.
int storeAndLookUp(ExecutableCache &cache, int process, bool bounded) {
  for (int round = 0; round < kRounds; ++round) {
    int s = (process + round) % kShared;
    cache.store(sharedKey(s), sharedBytes(s), nullptr);
    cache.store(ownKey(process, round), ownBytes(process, round), nullptr);
    std::optional<std::vector<uint8_t>> got =
        cache.lookup(sharedKey((s + 1) % kShared), nullptr);
    if (got && *got != sharedBytes((s + 1) % kShared))
      return round + 1;
    got = cache.lookup(ownKey(process, round), nullptr);
    if ((got && *got != ownBytes(process, round)) || (!got && !bounded))
      return round + 1;
  }
  return 0;
}

// Forks kProcesses children that start together, waits for them, and
// expects every one to exit 0.
void runAtOnce(const std::string &dir, uint64_t bound) {
  int release[2];
  ASSERT_EQ(::pipe(release), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    if (pid < 0) {
      ::close(release[1]); // the children started so far go, and are reaped
      for (pid_t child : children)
        ::waitpid(child, nullptr, 0);
      FAIL() << "fork failed";
    }
    if (pid == 0) {
      ::close(release[1]);
      char c;
      while (::read(release[0], &c, 1) < 0) {
      } // 0 (end of file) once the parent closes its end: go
      ExecutableCache cache(dir, bound);
      int status = 99;
      try {
        // The bounded test's bound (a few KiB) evicts; the other's never.
        status = storeAndLookUp(cache, p, bound < (1u << 20));
      } catch (...) {
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  ::close(release[0]);
  ::close(release[1]);
  for (int p = 0; p < kProcesses; ++p) {
    int status = 0;
    ASSERT_EQ(::waitpid(children[p], &status, 0), children[p]);
    ASSERT_TRUE(WIFEXITED(status)) << "process " << p << " did not exit";
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << "process " << p << ": a wrong lookup in round "
        << WEXITSTATUS(status) - 1 << " (99: an exception)";
  }
}

// No temporary file is left behind, and every entry in the directory reads
// back as the bytes of its key.
void expectOnlyWholeEntries(ExecutableCache &cache) {
  for (const auto &file : fs::directory_iterator(cache.dir()))
    EXPECT_EQ(file.path().filename().string().find(".tmp."), std::string::npos)
        << "left behind: " << file.path();
  for (int s = 0; s < kShared; ++s) {
    if (auto got = cache.lookup(sharedKey(s), nullptr)) {
      EXPECT_EQ(*got, sharedBytes(s)) << "shared key " << s;
    }
  }
  for (int p = 0; p < kProcesses; ++p) {
    for (int r = 0; r < kRounds; ++r) {
      if (auto got = cache.lookup(ownKey(p, r), nullptr)) {
        EXPECT_EQ(*got, ownBytes(p, r)) << "process " << p << " round " << r;
      }
    }
  }
}

} // namespace

TEST(ExecutableCache,
     ManyProcessesStoringAtOnceLeaveWholeEntriesAndExactCounts) {
  std::string dir = freshDir("processes");
  runAtOnce(dir, 1 << 24);
  ExecutableCache cache(dir, 1 << 24);
  // Unbounded: every key is present, and the counters, kept under the lock
  // file, add up to every process's calls exactly.
  EXPECT_EQ(cache.list().size(), size_t(kShared + kProcesses * kRounds));
  CacheStats s = cache.stats();
  EXPECT_EQ(s.stores, uint64_t(2 * kProcesses * kRounds));
  EXPECT_EQ(s.hits + s.misses, uint64_t(2 * kProcesses * kRounds));
  EXPECT_EQ(s.discarded, 0u);
  EXPECT_EQ(s.evictions, 0u);
  expectOnlyWholeEntries(cache);
  EXPECT_EQ(cache.stats().hits, s.hits + kShared + kProcesses * kRounds);
  fs::remove_all(dir);
}

TEST(ExecutableCache, ManyProcessesEvictingAtOnceKeepTheBound) {
  // About 8 entries fit: eviction runs in every process while others store
  // and read.
  const uint64_t bound = 6000;
  std::string dir = freshDir("processes-bound");
  runAtOnce(dir, bound);
  ExecutableCache cache(dir, bound);
  uint64_t total = 0;
  for (const CacheEntryInfo &e : cache.list())
    total += e.bytes;
  EXPECT_LE(total, bound);
  EXPECT_GT(cache.list().size(), 0u);
  CacheStats s = cache.stats();
  EXPECT_EQ(s.stores, uint64_t(2 * kProcesses * kRounds));
  EXPECT_EQ(s.discarded, 0u);
  EXPECT_GT(s.evictions, 0u);
  expectOnlyWholeEntries(cache);
  fs::remove_all(dir);
}
