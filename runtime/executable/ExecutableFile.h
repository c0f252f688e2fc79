// The .fxe file: a fixed 32-byte header, then a FlatBuffer (Executable.fbs).
//
//   offset  size  field
//   0       8     magic "FERRYFXE"
//   8       4     format version (little-endian u32), kFormatVersion
//   12      4     reserved, 0
//   16      8     payload size in bytes (u64)
//   24      8     xxHash64 (seed 0) of the payload (u64)
//   32      ...   payload: the FlatBuffer
//
// Written atomically (temp file, fsync, rename). Reading checks the magic, the
// version, the size against the file's (truncation), the checksum, and the
// FlatBuffer's own structure, and says which failed.
#pragma once

#include "runtime/executable/Executable_generated.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry {

constexpr uint32_t kExecutableFormatVersion = 4;

class ExecutableError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Writes header + payload to `path` atomically.
void writeExecutableFile(const std::string &path,
                         const std::vector<uint8_t> &payload);

// A verified executable in memory.
class ExecutableFile {
public:
  // Throws ExecutableError naming the file and what is wrong.
  static ExecutableFile load(const std::string &path);
  // An executable compiled in this process; `name` stands in for the path in
  // messages.
  static ExecutableFile fromPayload(std::vector<uint8_t> payload,
                                    const std::string &name);
  const fxe::Executable &root() const {
    return *fxe::GetExecutable(payload_.data());
  }
  const std::string &path() const { return path_; }
  uint64_t checksum() const { return checksum_; }
  // The executable's bytes, as fromPayload takes them.
  const std::vector<uint8_t> &payload() const { return payload_; }
  size_t payloadBytes() const { return payload_.size(); }

private:
  std::string path_;
  std::vector<uint8_t> payload_;
  uint64_t checksum_ = 0;
};

} // namespace ferry
