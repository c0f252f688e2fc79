// Progress lines, with an estimate of the time left, for long work: the
// compile of a large model, an evaluation over a large set, checkpoint
// writes over 1 GiB, ferry-datagen. Work that ends within 2 s prints
// nothing. After that, a line at most every second on a terminal (rewritten
// in place) or every 10 s otherwise (one per line, for logs), and a last
// line with the total time:
//
//   eval: 45% (28800/64000 samples), 12 s, about 15 s left
//
// FERRY_PROGRESS=off prints none; FERRY_PROGRESS=always prints from the
// first update and at every update (the tests use it).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ferry {

class Progress {
public:
  enum class Kind { Count, Bytes };

  // `total` is the amount of work (samples, bytes, passes) in `unit`
  // ("samples"; ignored for Bytes, which print as "1.50 GiB").
  Progress(std::string label, double total, std::string unit,
           Kind kind = Kind::Count, std::FILE *out = stderr);
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  // `done` of `total` now (it may only grow); `note` says what is under way
  // ("ferry-place-buffers").
  void update(double done, const std::string &note = "");
  // The last line, when any line was printed: "label: done, N in 12.3 s".
  void finish();

  // FERRY_PROGRESS=always: work smaller than its usual threshold (a
  // checkpoint under 1 GiB) shows progress too.
  static bool forced();

private:
  using Clock = std::chrono::steady_clock;
  std::string amount(double value) const;
  void print(const std::string &line, bool last);

  std::string label_, unit_;
  double total_, done_ = 0;
  Kind kind_;
  std::FILE *out_;
  bool always_, off_, terminal_;
  bool printed_ = false, finished_ = false;
  Clock::time_point start_, lastPrint_;
};

// "0.4 s", "12 s", "3 min 05 s", "2 h 10 min".
std::string formatDuration(double seconds);

} // namespace ferry
