// The CPU backend's copy queue: copies run in issue order on their own
// thread, and waitFor(ticket) returns only after that copy is done.
#include "runtime/cpu/CopyQueue.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

using namespace ferry;

TEST(CopyQueue, CopiesFinishInIssueOrder) {
  CopyQueue queue;
  // Many copies into one destination: the last one issued wins, because the
  // queue is FIFO (the runtime relies on it: a store then a load of the same
  // host bytes see each other in order).
  std::vector<std::vector<float>> sources;
  for (int k = 0; k < 64; ++k)
    sources.emplace_back(4096, static_cast<float>(k));
  std::vector<float> dst(4096, -1.0f);
  uint64_t last = 0;
  for (auto &src : sources)
    last = queue.issue(dst.data(), src.data(), src.size() * sizeof(float));
  EXPECT_EQ(last, 64u);
  queue.waitFor(last);
  for (float v : dst)
    ASSERT_EQ(v, 63.0f);
}

TEST(CopyQueue, WaitForAnEarlierTicketSeesThatCopy) {
  CopyQueue queue;
  std::vector<int> a(1 << 16), b(1 << 16, 0), c(1 << 16, 0);
  std::iota(a.begin(), a.end(), 1);
  uint64_t first = queue.issue(b.data(), a.data(), a.size() * sizeof(int));
  uint64_t second = queue.issue(c.data(), b.data(), b.size() * sizeof(int));
  queue.waitFor(first);
  EXPECT_EQ(b, a);
  queue.waitFor(second);
  EXPECT_EQ(c, a);       // the second copy read what the first wrote
  queue.waitFor(second); // waiting again returns at once
  EXPECT_GE(queue.busySeconds(), 0.0);
}
