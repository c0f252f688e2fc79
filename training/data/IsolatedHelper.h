// A helper process that runs a check a library might crash on, so the crash
// kills the helper and not ferry. Debian's libhdf5 follows some damaged
// metadata into wild reads (docs/reliability.md); Hdf5File.cpp opens each
// file in the helper first. The helper is forked on first use and kept:
// each check is one request over a socket pair (microseconds), and only a
// crash costs a new fork. Forking per file instead cost 10 ms per file under
// AddressSanitizer, which made the fuzz target 8x slower.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>

namespace ferry::data {

class IsolatedHelper {
public:
  // `check` runs in the helper on each request's bytes; whatever it throws
  // is ignored there (the caller meets the same error when it does the work
  // itself). It must not return to the caller's code paths in any other way.
  explicit IsolatedHelper(void (*check)(const std::string &request))
      : check_(check) {}
  ~IsolatedHelper();
  IsolatedHelper(const IsolatedHelper &) = delete;
  IsolatedHelper &operator=(const IsolatedHelper &) = delete;

  // Runs the check on `request` in the helper. Returns how the helper died
  // ("Segmentation fault", "exit code 1"), or nothing when the check
  // finished. No other thread may fork or use what `check` uses meanwhile
  // (the caller holds its library's lock). When no helper can be made (no
  // fork, no socket), returns nothing and the caller goes on in-process.
  std::optional<std::string> run(const std::string &request);

private:
  bool start();
  void stop();
  [[noreturn]] void serve(int socket);

  void (*check_)(const std::string &);
  pid_t pid_ = -1;
  int socket_ = -1;
  int requests_ = 0; // answered by this helper
};

} // namespace ferry::data
