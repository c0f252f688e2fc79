// What the fuzz targets share: the readers take paths, so each input is
// written to a file of this process's own (in TMPDIR, default /tmp) before the
// reader opens it. A reader's documented errors are caught by the target;
// anything else (a crash, a sanitizer report, another exception, a leak) is a
// finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace ferry::fuzz {

// A path unique to this process, ending in `suffix`.
inline std::string scratchPath(const std::string &suffix) {
  const char *tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/ferry-fuzz-" +
         std::to_string(::getpid()) + suffix;
}

// Writes `size` bytes to `path`, replacing it; aborts if it cannot (the
// harness is broken, not the reader).
inline void writeInput(const std::string &path, const uint8_t *data,
                       size_t size) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) ||
      std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

} // namespace ferry::fuzz
