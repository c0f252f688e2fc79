// Where the GPU tests find ferry's binaries and sources, and where they
// write, so that the same test binary runs from a build tree and from the
// GPU kit (docs/gpu-kit.md), where no path of the machine that built it
// exists:
//   FERRY_BINARY_DIR  the directory holding `ferry` and `ferry-datagen`;
//                     default: the test binary's own directory (both build/bin
//                     and the kit's bin/ hold them beside it);
//   FERRY_SOURCE_DIR  the tree holding configs/ and test/e2e/Inputs/;
//                     default: the source tree compiled in, where it still
//                     exists, else the directory above the binary's (the
//                     kit's root);
//   FERRY_TEST_TMPDIR where runs write (one directory per run, named
//                     after it); default /tmp/ferry-CLI-PID-NAME. Set, the
//                     paths are the same on every machine, so the config
//                     keys (and the executable cache's keys) are too;
//   FERRY_CACHE_DIR   set: the runs compile through this executable cache
//                     (the kit's is prefilled); unset: --no-cache;
//   FERRY_TEST_COMPILE_ONLY=1  every ferry command only compiles
//                     (--compile-only): how scripts/gpu-kit.sh fills the
//                     kit's cache with exactly what the tests will run. The
//                     tests' checks then fail, by design, and nothing skips
//                     for want of a device.
#pragma once

#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#ifndef FERRY_SOURCE_DIR
#define FERRY_SOURCE_DIR ""
#endif

namespace ferry::test {

inline std::string fromEnvironment(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}

inline bool isDirectory(const std::string &path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The directory of the running binary (/proc/self/exe).
inline std::string executableDir() {
  char path[4096];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0)
    return ".";
  std::string p(path, static_cast<size_t>(n));
  return p.substr(0, p.find_last_of('/'));
}

inline std::string binaryDir() {
  std::string env = fromEnvironment("FERRY_BINARY_DIR");
  return env.empty() ? executableDir() : env;
}

inline std::string sourceDir() {
  std::string env = fromEnvironment("FERRY_SOURCE_DIR");
  if (!env.empty())
    return env;
  std::string built = FERRY_SOURCE_DIR;
  if (isDirectory(built + "/configs"))
    return built;
  return executableDir() + "/..";
}

// A fresh path for run `name` of binary `cli` (not created).
inline std::string workDir(const std::string &cli, const std::string &name) {
  std::string env = fromEnvironment("FERRY_TEST_TMPDIR");
  if (!env.empty())
    return env + "/" + name;
  return "/tmp/ferry-" + cli + "-" + std::to_string(::getpid()) + "-" + name;
}

inline bool compileOnly() {
  return fromEnvironment("FERRY_TEST_COMPILE_ONLY") == "1";
}

// The flags every compiling command takes (with a trailing space).
inline std::string cacheFlag() {
  return std::string(fromEnvironment("FERRY_CACHE_DIR").empty() ? "--no-cache "
                                                                : "") +
         (compileOnly() ? "--compile-only " : "");
}

} // namespace ferry::test
