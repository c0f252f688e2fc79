// One copy thread, FIFO, tickets counted in issue order.
#include "runtime/cpu/CopyQueue.h"

#include <chrono>
#include <cstring>

using namespace ferry;

CopyQueue::CopyQueue() : thread_([this] { run(); }) {}

CopyQueue::~CopyQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  thread_.join();
}

uint64_t CopyQueue::issue(void *dst, const void *src, size_t bytes) {
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({dst, src, bytes});
    ticket = ++issued_;
  }
  work_.notify_one();
  return ticket;
}

void CopyQueue::waitFor(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (finished_ >= ticket)
    return;
  auto start = std::chrono::steady_clock::now();
  done_.wait(lock, [&] { return finished_ >= ticket; });
  waitedSeconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
}

void CopyQueue::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty())
      return; // stopping, nothing left
    Copy c = pending_.front();
    pending_.pop_front();
    lock.unlock();
    auto start = std::chrono::steady_clock::now();
    std::memcpy(c.dst, c.src, c.bytes);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    lock.lock();
    busySeconds_ += seconds;
    ++finished_;
    done_.notify_all();
  }
}
