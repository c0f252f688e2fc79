// The compiled-executable cache: entry files, the size bound, the counters.
#include "compiler/cache/ExecutableCache.h"

#include "runtime/AtomicFile.h"
#include "runtime/ByteSize.h"
#include "training/config/Config.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace ferry;
namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'F', 'E', 'R', 'R', 'Y', 'F', 'X', 'C'};
constexpr size_t kHeaderBytes = 32;
constexpr const char *kSuffix = ".fxc";

void putU32(std::string &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void putU64(std::string &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t getU64(const char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint32_t getU32(const char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::optional<std::string> readWhole(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A parsed entry, or the reason it is unusable.
struct Entry {
  std::string keyText;
  std::string payload;
  std::string error;
};

Entry parseEntry(const std::string &bytes) {
  Entry e;
  if (bytes.size() < kHeaderBytes + 8 ||
      std::memcmp(bytes.data(), kMagic, 8) != 0) {
    e.error = "not a ferry cache entry (bad magic or shorter than a header)";
    return e;
  }
  uint32_t version = getU32(bytes.data() + 8);
  if (version != kCacheFormatVersion) {
    e.error = "has cache entry format version " + std::to_string(version) +
              ", this ferry reads version " +
              std::to_string(kCacheFormatVersion);
    return e;
  }
  uint64_t keyBytes = getU64(bytes.data() + 16);
  uint64_t payloadBytes = getU64(bytes.data() + 24);
  if (keyBytes > bytes.size() || payloadBytes > bytes.size() ||
      kHeaderBytes + keyBytes + payloadBytes + 8 != bytes.size()) {
    e.error = "is truncated or has trailing bytes (header says " +
              std::to_string(kHeaderBytes + keyBytes + payloadBytes + 8) +
              " bytes, file has " + std::to_string(bytes.size()) + ")";
    return e;
  }
  size_t body = kHeaderBytes + keyBytes + payloadBytes;
  if (XXH64(bytes.data(), body, 0) != getU64(bytes.data() + body)) {
    e.error = "is corrupted (checksum mismatch)";
    return e;
  }
  e.keyText = bytes.substr(kHeaderBytes, keyBytes);
  e.payload = bytes.substr(kHeaderBytes + keyBytes, payloadBytes);
  return e;
}

std::map<std::string, std::string> fieldsOf(const std::string &text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos)
      out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

int64_t mtimeNs(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
         st.st_mtim.tv_nsec;
}

void touch(const std::string &path) {
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); // now: the last-use stamp
}

// An exclusive lock on <dir>/lock for the counters and eviction.
class DirLock {
public:
  explicit DirLock(const std::string &dir) {
    fd_ = ::open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0)
      ::flock(fd_, LOCK_EX);
  }
  ~DirLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  DirLock(const DirLock &) = delete;
  DirLock &operator=(const DirLock &) = delete;

private:
  int fd_ = -1;
};

} // namespace

std::string CacheKey::text() const {
  std::string out;
  for (const auto &[name, value] : fields)
    out += name + "=" + value + "\n";
  return out;
}

std::string CacheKey::hex() const {
  std::string t = text();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(t.data(), t.size(), digest, &length, EVP_sha256(), nullptr) !=
      1)
    throw CacheError("cannot compute SHA-256 of the cache key (OpenSSL)");
  static const char *hexDigits = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(hexDigits[digest[i] >> 4]);
    out.push_back(hexDigits[digest[i] & 15]);
  }
  return out;
}

ExecutableCache::ExecutableCache(std::string dir, uint64_t maxBytes)
    : dir_(std::move(dir)), maxBytes_(maxBytes) {}

ExecutableCache ExecutableCache::fromEnvironment() {
  std::string dir;
  if (const char *d = std::getenv("FERRY_CACHE_DIR"); d && *d)
    dir = d;
  else if (const char *home = std::getenv("HOME"); home && *home)
    dir = std::string(home) + "/.cache/ferry";
  else
    throw CacheError("neither FERRY_CACHE_DIR nor HOME is set: set "
                     "FERRY_CACHE_DIR to a directory for compiled "
                     "executables, or pass --no-cache");
  uint64_t maxBytes = uint64_t(5) << 30;
  if (const char *m = std::getenv("FERRY_CACHE_MAX_SIZE"); m && *m) {
    std::optional<uint64_t> parsed = parseByteSize(m);
    if (!parsed)
      throw CacheError(std::string("FERRY_CACHE_MAX_SIZE='") + m +
                       "' is not a size; use e.g. 5GiB, 512MiB or a number "
                       "of bytes");
    maxBytes = *parsed;
  }
  return ExecutableCache(dir, maxBytes);
}

std::optional<std::vector<uint8_t>> ExecutableCache::lookup(const CacheKey &key,
                                                            std::FILE *log) {
  std::string path = entryPath(key);
  std::optional<std::string> bytes = readWhole(path);
  if (!bytes) {
    count(&CacheStats::misses);
    return std::nullopt;
  }
  Entry e = parseEntry(*bytes);
  if (e.error.empty() && e.keyText != key.text())
    e.error = "holds another key (a SHA-256 collision or a renamed file)";
  if (!e.error.empty()) {
    if (log)
      std::fprintf(log,
                   "ferry: warning: cache entry %s %s; removing it and "
                   "compiling again\n",
                   path.c_str(), e.error.c_str());
    std::error_code ec;
    fs::remove(path, ec);
    count(&CacheStats::discarded);
    count(&CacheStats::misses);
    return std::nullopt;
  }
  touch(path);
  count(&CacheStats::hits);
  return std::vector<uint8_t>(e.payload.begin(), e.payload.end());
}

std::optional<std::string>
ExecutableCache::store(const CacheKey &key, const std::vector<uint8_t> &payload,
                       std::FILE *log) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    if (log)
      std::fprintf(log,
                   "ferry: warning: cannot create the cache directory %s "
                   "(%s); the executable is not cached\n",
                   dir_.c_str(), ec.message().c_str());
    return std::nullopt;
  }
  std::string keyText = key.text();
  std::string bytes(kMagic, 8);
  putU32(bytes, kCacheFormatVersion);
  putU32(bytes, 0);
  putU64(bytes, keyText.size());
  putU64(bytes, payload.size());
  bytes += keyText;
  bytes.append(reinterpret_cast<const char *>(payload.data()), payload.size());
  putU64(bytes, XXH64(bytes.data(), bytes.size(), 0));
  std::string path = entryPath(key);
  if (std::optional<std::string> error = writeFileAtomically(path, bytes)) {
    if (log)
      std::fprintf(log, "ferry: warning: %s; the executable is not cached\n",
                   error->c_str());
    return std::nullopt;
  }
  count(&CacheStats::stores);
  evict(log);
  if (!fs::exists(path, ec))
    return std::nullopt; // larger than the bound on its own
  return path;
}

void ExecutableCache::evict(std::FILE *log) {
  uint64_t evicted = removeBeyondBound(log);
  if (evicted > 0)
    count(&CacheStats::evictions, evicted);
}

uint64_t ExecutableCache::removeBeyondBound(std::FILE *log) {
  DirLock lock(dir_);
  std::vector<CacheEntryInfo> entries = list();
  uint64_t total = 0;
  for (const CacheEntryInfo &e : entries)
    total += e.bytes;
  uint64_t evicted = 0;
  // Oldest last-use first.
  for (auto it = entries.rbegin(); it != entries.rend() && total > maxBytes_;
       ++it) {
    std::error_code ec;
    if (fs::remove(it->path, ec)) {
      total -= it->bytes;
      ++evicted;
    } else if (ec && log) {
      std::fprintf(log, "ferry: warning: cannot evict %s: %s\n",
                   it->path.c_str(), ec.message().c_str());
    }
  }
  return evicted;
}

std::string ExecutableCache::entryPath(const CacheKey &key) const {
  return dir_ + "/" + key.hex() + kSuffix;
}

std::vector<CacheEntryInfo> ExecutableCache::list() const {
  std::vector<CacheEntryInfo> out;
  std::error_code ec;
  if (!fs::is_directory(dir_, ec))
    return out;
  for (const fs::directory_entry &d : fs::directory_iterator(dir_, ec)) {
    std::string name = d.path().filename().string();
    if (name.size() != 64 + 4 || name.compare(64, 4, kSuffix) != 0)
      continue;
    CacheEntryInfo info;
    info.key = name.substr(0, 64);
    info.path = d.path().string();
    info.bytes = d.file_size(ec);
    info.lastUseNs = mtimeNs(info.path);
    if (std::optional<std::string> bytes = readWhole(info.path);
        bytes && bytes->size() >= kHeaderBytes) {
      uint64_t keyBytes = getU64(bytes->data() + 16);
      if (kHeaderBytes + keyBytes <= bytes->size()) {
        auto fields = fieldsOf(bytes->substr(kHeaderBytes, keyBytes));
        info.model = fields["config.model.layers"] + " layers, hidden " +
                     fields["config.model.hidden_size"] + ", seq " +
                     fields["config.model.seq_length"] + ", " +
                     fields["config.execution.mode"];
      }
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) {
    return a.lastUseNs > b.lastUseNs;
  });
  return out;
}

CacheStats ExecutableCache::stats() const {
  CacheStats s;
  std::optional<std::string> text = readWhole(dir_ + "/stats");
  if (!text)
    return s;
  auto fields = fieldsOf(*text);
  // Each line is NAME=COUNT; anything else is named, not silently read as 0.
  size_t start = 0;
  for (int line = 1; start < text->size(); ++line) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos)
      end = text->size();
    std::string row = text->substr(start, end - start);
    size_t eq = row.find('=');
    bool ok = eq != std::string::npos && eq > 0 && eq + 1 < row.size() &&
              row.find_first_not_of("0123456789", eq + 1) == std::string::npos;
    if (!row.empty() && !ok && s.damaged.empty())
      s.damaged = dir_ + "/stats: line " + std::to_string(line) + " '" +
                  row.substr(0, 40) +
                  "' is not NAME=COUNT; the counters below read it as 0, and "
                  "the next compile rewrites the file (or run ferry cache "
                  "clear)";
    start = end + 1;
  }
  auto get = [&](const char *name) -> uint64_t {
    auto it = fields.find(name);
    return it == fields.end() ? 0
                              : std::strtoull(it->second.c_str(), nullptr, 10);
  };
  s.hits = get("hits");
  s.misses = get("misses");
  s.stores = get("stores");
  s.evictions = get("evictions");
  s.discarded = get("discarded");
  return s;
}

void ExecutableCache::count(uint64_t CacheStats::*field, uint64_t n) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    return;
  DirLock lock(dir_);
  CacheStats s = stats();
  s.*field += n;
  std::string text = "hits=" + std::to_string(s.hits) +
                     "\nmisses=" + std::to_string(s.misses) +
                     "\nstores=" + std::to_string(s.stores) +
                     "\nevictions=" + std::to_string(s.evictions) +
                     "\ndiscarded=" + std::to_string(s.discarded) + "\n";
  (void)writeFileAtomically(dir_ + "/stats", text);
}

void ExecutableCache::clear() {
  DirLock lock(dir_);
  for (const CacheEntryInfo &e : list()) {
    std::error_code ec;
    fs::remove(e.path, ec);
  }
  std::error_code ec;
  fs::remove(dir_ + "/stats", ec);
}

std::pair<std::string, std::vector<std::string>>
ExecutableCache::nearest(const CacheKey &key) const {
  std::map<std::string, std::string> wanted;
  for (const auto &[name, value] : key.fields)
    wanted[name] = value;
  std::pair<std::string, std::vector<std::string>> best;
  size_t bestCount = SIZE_MAX;
  for (const CacheEntryInfo &info : list()) {
    std::optional<std::string> bytes = readWhole(info.path);
    if (!bytes)
      continue;
    Entry e = parseEntry(*bytes);
    if (!e.error.empty())
      continue;
    auto stored = fieldsOf(e.keyText);
    std::vector<std::string> diffs;
    for (const auto &[name, value] : wanted) {
      auto it = stored.find(name);
      std::string old = it == stored.end() ? "(absent)" : it->second;
      if (old != value)
        diffs.push_back(name + ": " + old + " -> " + value);
    }
    for (const auto &[name, value] : stored)
      if (!wanted.count(name))
        diffs.push_back(name + ": " + value + " -> (absent)");
    if (diffs.size() < bestCount) {
      bestCount = diffs.size();
      best = {info.key, diffs};
    }
  }
  return best;
}
