// ferry's CUDA simulator: fibers, the stacks a block's simulated threads run
// on. A fiber runs until it switches back to the scheduler (at a barrier, a
// warp shuffle, or its end); the scheduler resumes it later.
//
// The switch is a few instructions of x86-64 assembly, written here because
// the alternatives cost too much or cannot be checked: glibc's swapcontext
// makes a signal-mask system call on every switch (a training step switches
// millions of times), and Debian builds Boost.Context with its assembly
// backend, which has no AddressSanitizer support (BOOST_USE_ASAN needs the
// ucontext backend). Every switch is announced to AddressSanitizer
// (__sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber), so
// ASan checks the kernels' stack and heap accesses inside fibers too.
#pragma once

#include <cstddef>

namespace cudasim {

class Fiber {
public:
  using Entry = void (*)(void *);
  explicit Fiber(size_t stackBytes);
  ~Fiber();
  Fiber(const Fiber &) = delete;
  Fiber &operator=(const Fiber &) = delete;

  // Prepares the fiber to run entry(argument) from the top of its stack.
  void start(Entry entry, void *argument);
  // From the scheduler: runs the fiber until it yields or finishes.
  void resume();
  // From inside the fiber: back to the scheduler (resume continues here).
  void yield();
  // From inside the fiber, last: back to the scheduler for good. Not
  // declared [[noreturn]] on purpose: ASan precedes calls to such functions
  // with __asan_handle_no_return, a system call per thread.
  void finish();

  // The stack's bytes (the race checker takes accesses there as private).
  const char *stackBegin() const { return stack_; }
  const char *stackEnd() const { return stack_ + stackBytes_; }

private:
  static void trampoline(Fiber *self);
  char *stack_ = nullptr; // mmap'd, with a guard page below
  size_t stackBytes_ = 0, mappedBytes_ = 0;
  void *fiberSp_ = nullptr, *schedulerSp_ = nullptr;
  Entry entry_ = nullptr;
  void *argument_ = nullptr;
  // The scheduler's stack, learnt on the first switch (for ASan).
  const void *schedulerBottom_ = nullptr;
  size_t schedulerSize_ = 0;
  void *fakeStack_ = nullptr; // ASan's fake stack of the suspended side
};

} // namespace cudasim
