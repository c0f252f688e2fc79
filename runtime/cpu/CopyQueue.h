// The CPU backend's copy queue: host <-> "device" copies of phased execution
// run on their own thread, in the order they were issued, while the compute
// thread goes on (as CUDA copies on a copy stream would). Each copy gets a
// ticket; waitFor(ticket) blocks until that copy and every earlier one are
// done, and rethrows nothing: copies are plain memcpy on checked ranges.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

namespace ferry {

class CopyQueue {
public:
  CopyQueue();
  ~CopyQueue();
  CopyQueue(const CopyQueue &) = delete;
  CopyQueue &operator=(const CopyQueue &) = delete;

  // Queues memcpy(dst, src, bytes); returns its ticket (1, 2, ...).
  uint64_t issue(void *dst, const void *src, size_t bytes);
  // Blocks until the copy with `ticket` (and all before it) has finished.
  void waitFor(uint64_t ticket);
  // Seconds the compute thread spent blocked in waitFor, in total.
  double waitedSeconds() const { return waitedSeconds_; }
  // Seconds the copy thread spent copying, in total.
  double busySeconds() {
    std::lock_guard<std::mutex> lock(mutex_);
    return busySeconds_;
  }

private:
  void run();

  struct Copy {
    void *dst;
    const void *src;
    size_t bytes;
  };
  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<Copy> pending_;
  uint64_t issued_ = 0, finished_ = 0;
  bool stopping_ = false;
  double waitedSeconds_ = 0, busySeconds_ = 0;
  std::thread thread_;
};

} // namespace ferry
