// ferry's CUDA simulator: fibers (see Fiber.h).
#include "Fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDASIM_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define CUDASIM_ASAN 1
#endif

#ifdef CUDASIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#error "ferry's CUDA simulator switches fibers with x86-64 assembly"
#endif

// void cudasim_switch(void **saveSp, void *loadSp): saves the callee-saved
// registers, the SSE and x87 control words and the stack pointer of the
// running side, and resumes the other.
asm(R"(
  .text
  .globl cudasim_switch
  .type cudasim_switch, @function
cudasim_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cudasim_switch, .-cudasim_switch

  .globl cudasim_fiber_start
  .type cudasim_fiber_start, @function
cudasim_fiber_start:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size cudasim_fiber_start, .-cudasim_fiber_start
  .section .note.GNU-stack,"",@progbits
  .text
)");

extern "C" void cudasim_switch(void **saveSp, void *loadSp);
extern "C" void cudasim_fiber_start();

namespace cudasim {

namespace {
constexpr size_t kClearedTop = 4096;
}

Fiber::Fiber(size_t stackBytes) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  stackBytes_ = (stackBytes + page - 1) / page * page;
  mappedBytes_ = stackBytes_ + page;
  void *m = mmap(nullptr, mappedBytes_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    std::fprintf(stderr, "ferry cuda-sim: cannot map a fiber stack\n");
    std::abort();
  }
  mprotect(m, page, PROT_NONE); // overflowing the stack faults here
  stack_ = static_cast<char *>(m) + page;
}

Fiber::~Fiber() { munmap(stack_ - (mappedBytes_ - stackBytes_), mappedBytes_); }

void Fiber::start(Entry entry, void *argument) {
  entry_ = entry;
  argument_ = argument;
#ifdef CUDASIM_ASAN
  // A recycled stack may hold the poisoned redzones of an earlier thread's
  // frames (its entry frame never returns). New frames rewrite the shadow
  // of their own redzones and variables as they enter, so only the top,
  // where the entry frames sit, is cleared: clearing the whole stack costs
  // more than the thread's work.
  __asan_unpoison_memory_region(stack_ + stackBytes_ - kClearedTop,
                                kClearedTop);
#endif
  // The initial frame cudasim_switch pops: control words, six registers
  // (r12 = this, r13 = trampoline), then the return address into
  // cudasim_fiber_start at the 16-byte aligned top, so that the stack is
  // aligned when cudasim_fiber_start calls (the System V ABI's rule).
  auto top = reinterpret_cast<uintptr_t>(stack_ + stackBytes_) & ~uintptr_t(15);
  auto *sp = reinterpret_cast<uint64_t *>(top) - 1; // the return address
  sp[0] = reinterpret_cast<uint64_t>(&cudasim_fiber_start);
  sp -= 6;
  sp[5] = 0;                                       // rbp
  sp[4] = 0;                                       // rbx
  sp[3] = reinterpret_cast<uint64_t>(this);        // r12
  sp[2] = reinterpret_cast<uint64_t>(&trampoline); // r13
  sp[1] = 0;                                       // r14
  sp[0] = 0;                                       // r15
  sp -= 2;
  uint32_t mxcsr = 0x1f80;
  uint16_t fpu = 0x037f;
  std::memcpy(reinterpret_cast<char *>(sp) + 8, &mxcsr, 4);
  std::memcpy(reinterpret_cast<char *>(sp), &fpu, 2);
  fiberSp_ = sp;
}

void Fiber::trampoline(Fiber *self) {
#ifdef CUDASIM_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &self->schedulerBottom_,
                                  &self->schedulerSize_);
#endif
  self->entry_(self->argument_);
  self->finish();
}

void Fiber::resume() {
#ifdef CUDASIM_ASAN
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, stack_, stackBytes_);
#endif
  cudasim_switch(&schedulerSp_, fiberSp_);
#ifdef CUDASIM_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

void Fiber::yield() {
#ifdef CUDASIM_ASAN
  __sanitizer_start_switch_fiber(&fakeStack_, schedulerBottom_, schedulerSize_);
#endif
  cudasim_switch(&fiberSp_, schedulerSp_);
#ifdef CUDASIM_ASAN
  __sanitizer_finish_switch_fiber(fakeStack_, &schedulerBottom_,
                                  &schedulerSize_);
#endif
}

void Fiber::finish() {
#ifdef CUDASIM_ASAN
  __sanitizer_start_switch_fiber(nullptr, schedulerBottom_, schedulerSize_);
#endif
  void *unused;
  cudasim_switch(&unused, schedulerSp_); // never resumed
}

} // namespace cudasim
