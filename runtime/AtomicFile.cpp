// Temp file, fsync, rename; see AtomicFile.h.
#include "runtime/AtomicFile.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ferry {

std::optional<std::string> writeFileAtomically(const std::string &path,
                                               std::string_view data) {
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
    ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return fail("write");
    }
    written += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; give the file the usual permissions.
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0)
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
  return std::nullopt;
}

} // namespace ferry
