// Writing files so that nothing is lost: the data goes to a temporary file in
// the target's directory, is flushed to disk, and is renamed over the target.
// A reader sees the old file or the new one, never a torn one.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ferry {

// Returns an error message naming the path and the cause, or nullopt.
// Missing parent directories are created first, as `mkdir -p` would.
// `written`, when given, hears the bytes written so far after each 64 MiB
// (progress lines for large checkpoints).
std::optional<std::string>
writeFileAtomically(const std::string &path, std::string_view data,
                    const std::function<void(size_t)> &written = {});

// Creates the directories above `path` that do not exist yet. Returns an
// error message naming the directory and the cause, or nullopt.
std::optional<std::string> createParentDirectories(const std::string &path);

} // namespace ferry
