// Progress lines (runtime/Progress.h): silent for short work, then lines
// with the percentage, the amounts, the time and the time left; a last line
// when any was printed; FERRY_PROGRESS=off and =always.
#include "runtime/Progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>

namespace {

// Runs `work` with a Progress writing to a temporary file; returns the text.
template <typename Work> std::string captured(Work work) {
  std::FILE *file = std::tmpfile();
  work(file);
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0)
    text.append(buffer, n);
  std::fclose(file);
  return text;
}

TEST(Progress, ShortWorkPrintsNothing) {
  unsetenv("FERRY_PROGRESS");
  std::string text = captured([](std::FILE *out) {
    ferry::Progress progress("eval x", 100, "samples",
                             ferry::Progress::Kind::Count, out);
    for (int i = 0; i <= 100; ++i)
      progress.update(i);
  });
  EXPECT_EQ(text, "");
}

TEST(Progress, LongWorkPrintsTheFractionAndTheTimeLeft) {
  unsetenv("FERRY_PROGRESS");
  std::string text = captured([](std::FILE *out) {
    ferry::Progress progress("eval x", 200, "samples",
                             ferry::Progress::Kind::Count, out);
    progress.update(0);
    // Past the 2 s of silence, a quarter done.
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    progress.update(50);
    progress.update(60); // within 10 s of the last line: not printed
  });
  // 50 of 200 after ~2.1 s: about 6.3 s left (the times are not checked:
  // a loaded machine sleeps longer).
  EXPECT_TRUE(std::regex_search(
      text, std::regex(R"(eval x: 25% \(50/200 samples\), [0-9.]+ s, about [0-9.]+ s left\n)")))
      << text;
  EXPECT_EQ(text.find("(60/200"), std::string::npos) << text;
  EXPECT_TRUE(std::regex_search(
      text, std::regex(R"(eval x: done, 60 samples in [0-9.]+ s\n$)")))
      << text;
}

TEST(Progress, AlwaysPrintsEveryUpdateAndBytesReadAsSizes) {
  setenv("FERRY_PROGRESS", "always", 1);
  EXPECT_TRUE(ferry::Progress::forced());
  std::string text = captured([](std::FILE *out) {
    ferry::Progress progress("saving ck", 4.0 * (1 << 30), "",
                             ferry::Progress::Kind::Bytes, out);
    progress.update(1.0 * (1 << 30));
    progress.update(8.0 * (1 << 30)); // more than the total: shown as all
  });
  unsetenv("FERRY_PROGRESS");
  EXPECT_NE(text.find("saving ck: 25% (1 GiB/4 GiB), "), std::string::npos)
      << text;
  EXPECT_NE(text.find("saving ck: 100% (4 GiB/4 GiB), "), std::string::npos)
      << text;
  EXPECT_NE(text.find("saving ck: done, 4 GiB in "), std::string::npos)
      << text;
}

TEST(Progress, OffPrintsNothing) {
  setenv("FERRY_PROGRESS", "off", 1);
  std::string text = captured([](std::FILE *out) {
    ferry::Progress progress("x", 10, "things", ferry::Progress::Kind::Count,
                             out);
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    progress.update(5);
  });
  unsetenv("FERRY_PROGRESS");
  EXPECT_EQ(text, "");
}

TEST(Progress, Durations) {
  EXPECT_EQ(ferry::formatDuration(0.42), "0.4 s");
  EXPECT_EQ(ferry::formatDuration(12.4), "12 s");
  EXPECT_EQ(ferry::formatDuration(185), "3 min 05 s");
  EXPECT_EQ(ferry::formatDuration(7800), "2 h 10 min");
}

} // namespace
