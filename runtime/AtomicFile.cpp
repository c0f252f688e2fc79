// Temp file, fsync, rename; see AtomicFile.h.
#include "runtime/AtomicFile.h"

#include <algorithm>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ferry {
namespace {
mode_t modeForTarget(const std::string &path) {
  struct stat existing;
  if (::stat(path.c_str(), &existing) == 0 && S_ISREG(existing.st_mode))
    return existing.st_mode & 07777;
  mode_t mask = ::umask(0); // umask can only be read by setting it
  ::umask(mask);
  return 0666 & ~mask;
}
} // namespace

std::optional<std::string> createParentDirectories(const std::string &path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty())
    return std::nullopt;
  std::error_code error;
  std::filesystem::create_directories(parent, error);
  if (error)
    return path + ": cannot create its directory " + parent.string() + " (" +
           error.message() + "); choose a path whose directories can be made";
  return std::nullopt;
}

std::optional<std::string>
writeFileAtomically(const std::string &path, std::string_view data,
                    const std::function<void(size_t)> &reportWritten) {
  if (std::optional<std::string> error = createParentDirectories(path))
    return error;
  std::string temp = path + ".tmp.XXXXXX";
  int fd = mkstemp(temp.data());
  if (fd < 0)
    return path + ": cannot create a temporary file beside it (" +
           std::strerror(errno) + ")";
  auto fail = [&](const char *what) -> std::optional<std::string> {
    std::string message =
        path + ": cannot " + what + " (" + std::strerror(errno) + ")";
    ::close(fd);
    ::unlink(temp.c_str());
    return message;
  };
  size_t written = 0;
  while (written < data.size()) {
    constexpr size_t kPiece = size_t{64} << 20;
    ssize_t n = ::write(fd, data.data() + written,
                        std::min(data.size() - written, kPiece));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return fail("write");
    }
    written += static_cast<size_t>(n);
    if (reportWritten)
      reportWritten(written);
  }
  // mkstemp creates 0600: keep the mode of the file being replaced, or give a
  // new file what open() would (0666 less the umask).
  if (::fchmod(fd, modeForTarget(path)) != 0)
    return fail("set the permissions of the temporary file");
  if (::fsync(fd) != 0)
    return fail("flush to disk");
  if (::close(fd) != 0) {
    std::string message =
        path + ": cannot close (" + std::strerror(errno) + ")";
    ::unlink(temp.c_str());
    return message;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::string message = path +
                          ": cannot rename the temporary file into "
                          "place (" +
                          std::strerror(errno) + ")";
    ::unlink(temp.c_str());
    return message;
  }
  // Make the rename itself durable: flush the directory entry.
  std::string dir = path.substr(0, path.find_last_of('/') + 1);
  int dirFd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dirFd >= 0) {
    ::fsync(dirFd); // best effort: some file systems refuse it on directories
    ::close(dirFd);
  }
  return std::nullopt;
}

} // namespace ferry
