// The crash-isolating helper process (IsolatedHelper.h): a forked copy of
// this process that reads length-prefixed requests from a socket pair, runs
// the check on each and answers one byte.
#include "training/data/IsolatedHelper.h"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ferry::data {
namespace {

// Moves all `size` bytes through `socket` (send or recv), retrying after
// signals; false when the other side is gone.
template <typename Transfer>
bool transferAll(int socket, char *at, size_t size, Transfer transfer) {
  while (size > 0) {
    ssize_t n = transfer(socket, at, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool sendAll(int socket, const void *data, size_t size) {
  // MSG_NOSIGNAL: a dead helper is an error here, not a SIGPIPE.
  return transferAll(socket, static_cast<char *>(const_cast<void *>(data)),
                     size, [](int s, char *at, size_t n) {
                       return ::send(s, at, n, MSG_NOSIGNAL);
                     });
}

bool receiveAll(int socket, void *data, size_t size) {
  return transferAll(socket, static_cast<char *>(data), size,
                     [](int s, char *at, size_t n) {
                       return ::recv(s, at, n, 0);
                     });
}

} // namespace

IsolatedHelper::~IsolatedHelper() { stop(); }

bool IsolatedHelper::start() {
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0)
    return false;
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    ::close(sockets[0]);
    ::close(sockets[1]);
    return false;
  }
  if (pid == 0) {
    ::close(sockets[0]);
    serve(sockets[1]);
  }
  ::close(sockets[1]);
  pid_ = pid;
  socket_ = sockets[0];
  return true;
}

void IsolatedHelper::stop() {
  if (pid_ < 0)
    return;
  ::close(socket_); // the helper reads end-of-file and exits
  int status;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  socket_ = -1;
}

void IsolatedHelper::serve(int socket) {
  // Die of a fault's signal itself, without a sanitizer's or a handler's
  // report: the caller names the file.
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
    std::signal(signal, SIG_DFL);
  for (;;) {
    uint64_t size = 0;
    if (!receiveAll(socket, &size, sizeof size))
      _exit(0);
    std::string request(size, '\0');
    if (!receiveAll(socket, request.data(), size))
      _exit(0);
    try {
      check_(request);
    } catch (...) {
    }
    char done = 1;
    if (!sendAll(socket, &done, 1))
      _exit(0);
  }
}

std::optional<std::string> IsolatedHelper::run(const std::string &request) {
  // A new helper now and then: what a library leaks on damaged inputs (as
  // libhdf5 does) stays bounded.
  constexpr int kRequestsPerHelper = 10000;
  if (pid_ >= 0 && requests_ >= kRequestsPerHelper)
    stop();
  if (pid_ < 0) {
    if (!start())
      return std::nullopt;
    requests_ = 0;
  }
  ++requests_;
  uint64_t size = request.size();
  char done = 0;
  if (sendAll(socket_, &size, sizeof size) &&
      sendAll(socket_, request.data(), request.size()) &&
      receiveAll(socket_, &done, 1))
    return std::nullopt;
  // The helper died on this request: say how, and make a new one next time.
  ::close(socket_);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  socket_ = -1;
  if (WIFSIGNALED(status))
    return std::string(strsignal(WTERMSIG(status)));
  return "exit code " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status)
                                                          : -1);
}

} // namespace ferry::data
