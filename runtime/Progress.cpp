// Progress lines with an estimated time left (Progress.h).
#include "runtime/Progress.h"

#include "runtime/ByteSize.h"

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <unistd.h>

namespace ferry {

std::string formatDuration(double seconds) {
  if (seconds < 10)
    return fmt::format("{:.1f} s", seconds);
  int64_t s = std::llround(seconds);
  if (s < 60)
    return fmt::format("{} s", s);
  if (s < 3600)
    return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
}

Progress::Progress(std::string label, double total, std::string unit,
                   Kind kind, std::FILE *out)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total),
      kind_(kind), out_(out) {
  const char *mode = std::getenv("FERRY_PROGRESS");
  std::string setting = mode ? mode : "";
  always_ = setting == "always";
  off_ = setting == "off";
  terminal_ = !always_ && isatty(fileno(out_));
  start_ = lastPrint_ = Clock::now();
}

Progress::~Progress() { finish(); }

bool Progress::forced() {
  const char *mode = std::getenv("FERRY_PROGRESS");
  return mode && std::string(mode) == "always";
}

std::string Progress::amount(double value) const {
  if (kind_ == Kind::Bytes)
    return formatByteSize(static_cast<uint64_t>(value));
  // Whole units done: 2.7 of 3 pipelines is 2.
  return fmt::format("{:.0f}", std::floor(value));
}

void Progress::print(const std::string &line, bool last) {
  if (terminal_) {
    // Rewrite the line in place; clear what a longer line left.
    std::fprintf(out_, "\r%s\033[K%s", line.c_str(), last ? "\n" : "");
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
  printed_ = true;
}

void Progress::update(double done, const std::string &note) {
  if (off_ || finished_)
    return;
  done_ = std::min(std::max(done_, done), total_);
  Clock::time_point now = Clock::now();
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double sinceLast = std::chrono::duration<double>(now - lastPrint_).count();
  if (!always_) {
    if (elapsed < 2.0)
      return;
    if (printed_ && sinceLast < (terminal_ ? 1.0 : 10.0))
      return;
  }
  lastPrint_ = now;
  double fraction = total_ > 0 ? std::min(done_ / total_, 1.0) : 0;
  std::string line = fmt::format("{}: {:.0f}% ({}/{}{}{}), {}", label_,
                                 100 * fraction, amount(done_), amount(total_),
                                 kind_ == Kind::Bytes ? "" : " ",
                                 kind_ == Kind::Bytes ? "" : unit_,
                                 formatDuration(elapsed));
  if (fraction > 0 && fraction < 1)
    line += ", about " + formatDuration(elapsed * (1 - fraction) / fraction) +
            " left";
  if (!note.empty())
    line += " (" + note + ")";
  print(line, false);
}

void Progress::finish() {
  if (finished_)
    return;
  finished_ = true;
  if (!printed_ || off_)
    return;
  double elapsed =
      std::chrono::duration<double>(Clock::now() - start_).count();
  print(fmt::format("{}: done, {}{}{} in {}", label_, amount(done_),
                    kind_ == Kind::Bytes ? "" : " ",
                    kind_ == Kind::Bytes ? "" : unit_,
                    formatDuration(elapsed)),
        true);
}

} // namespace ferry
