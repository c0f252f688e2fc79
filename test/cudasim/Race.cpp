// ferry's CUDA simulator: the race checker (Race.h). Test-only. Compiled
// without instrumentation: only the kernels' translation units call it.
#include "Race.h"

#include "Sim.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include <dlfcn.h>

namespace cudasim::race {
namespace {

// One 2-byte granule's shadow: the last writer and the last reader (linear
// thread index in its block, -1 for none), their block (device memory
// only), barrier epoch and warp sync count; `generation` says which block
// (shared) or kernel (device memory) the entry belongs to.
struct Entry {
  uint32_t generation = 0;
  int32_t writer = -1, reader = -1;
  uint32_t writerBlock = 0, readerBlock = 0;
  uint32_t writerEpoch = 0, readerEpoch = 0;
  uint32_t writerSync = 0, readerSync = 0;
};

// Shadow granules in pages of 1024 (2 KiB of memory), made on first touch and
// reused: a new generation empties them without clearing.
class Table {
public:
  Entry &at(uintptr_t word) {
    uintptr_t page = word >> 10;
    if (page != lastPage_ || !last_) {
      std::unique_ptr<Entry[]> &p = pages_[page];
      if (!p)
        p.reset(new Entry[1024]);
      last_ = p.get();
      lastPage_ = page;
    }
    Entry &e = last_[word & 1023];
    if (e.generation != generation_) {
      e = Entry{};
      e.generation = generation_;
    }
    return e;
  }
  void next() {
    if (++generation_ == 0) { // wrapped: forget every page
      pages_.clear();
      last_ = nullptr;
      generation_ = 1;
    }
  }

private:
  std::unordered_map<uintptr_t, std::unique_ptr<Entry[]>> pages_;
  Entry *last_ = nullptr;
  uintptr_t lastPage_ = 0;
  uint32_t generation_ = 1;
};

struct State {
  bool inKernel = false;
  std::string kernelName;
  unsigned bx = 0, by = 0, bz = 0, dimX = 1, dimY = 1;
  uint32_t block = 0; // linear index among the kernel's blocks run so far
  int thread = -1;
  uintptr_t stackBegin = 0, stackEnd = 0;
  uint32_t epoch = 0;
  std::vector<uint32_t> warpSyncs;
  Table shared, device;
  // The device allocation of the last device access (most accesses fall
  // into the same one).
  uintptr_t allocBegin = 0, allocEnd = 0;
  uintptr_t sharedLow = UINTPTR_MAX; // this block's lowest shared address
  // Per block: its coordinates, for messages about another block.
  std::vector<uint3> blocks;
};

thread_local State *tState = nullptr;
bool gInstrumented = false;

bool &checksFlag() {
  static bool on = [] {
    const char *v = std::getenv("FERRY_CUDA_SIM_RACECHECK");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}
bool checksOn() { return checksFlag(); }

State &state() {
  static thread_local State s;
  return s;
}

std::string threadName(const State &s, uint32_t block, int32_t linear) {
  const uint3 &b = s.blocks[block];
  unsigned x = static_cast<unsigned>(linear) % s.dimX,
           y = static_cast<unsigned>(linear) / s.dimX % s.dimY,
           z = static_cast<unsigned>(linear) / (s.dimX * s.dimY);
  return "block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," +
         std::to_string(b.z) + ") thread (" + std::to_string(x) + "," +
         std::to_string(y) + "," + std::to_string(z) + ")";
}

[[noreturn]] void report(const State &s, const char *kind, bool device,
                         uintptr_t address, uint32_t otherBlock, int32_t other,
                         const void *pc) {
  std::string where;
  if (device) {
    const Allocation *a =
        findAllocation(reinterpret_cast<const void *>(address), 1);
    where =
        "device memory at byte " +
        std::to_string(a ? address - reinterpret_cast<uintptr_t>(a->base) : 0) +
        " of the allocation at " +
        std::to_string(a ? reinterpret_cast<uintptr_t>(a->base) : 0);
  } else {
    where = "shared memory at byte " + std::to_string(address - s.sharedLow) +
            " above the lowest shared address the block used";
  }
  // The access's code as addr2line takes it: the file and the offset in it.
  char buf[96];
  Dl_info info{};
  if (dladdr(pc, &info) && info.dli_fname)
    std::snprintf(buf, sizeof buf, "%s+0x%zx", info.dli_fname,
                  reinterpret_cast<uintptr_t>(pc) -
                      reinterpret_cast<uintptr_t>(info.dli_fbase));
  else
    std::snprintf(buf, sizeof buf, "%p", pc);
  fail(std::string("race (") + kind + ") in kernel " + s.kernelName + " on " +
       where + ": " + threadName(s, s.block, s.thread) + " (at pc " + buf +
       ") and " + threadName(s, otherBlock, other) +
       (otherBlock == s.block
            ? " access it in the same barrier interval without a "
              "__syncthreads between them (nor, in one warp, a __syncwarp "
              "or shuffle)"
            : " access it in one kernel, which nothing orders across "
              "blocks"));
}

void check(State &s, uintptr_t address, unsigned bytes, bool write,
           const void *pc) {
  bool device = false;
  if (address >= s.allocBegin && address < s.allocEnd) {
    device = true;
  } else if (const Allocation *a =
                 findAllocation(reinterpret_cast<const void *>(address), 1)) {
    device = true;
    s.allocBegin = reinterpret_cast<uintptr_t>(a->base);
    s.allocEnd = s.allocBegin + a->bytes;
  }
  if (!device && address < s.sharedLow)
    s.sharedLow = address;
  Table &table = device ? s.device : s.shared;
  int32_t me = s.thread;
  uint32_t sync = s.warpSyncs[static_cast<size_t>(me) / 32];
  auto conflicts = [&](int32_t other, uint32_t otherBlock, uint32_t otherEpoch,
                       uint32_t otherSync) {
    if (other < 0)
      return false;
    if (otherBlock != s.block) // device memory only: another block
      return true;
    if (other == me || otherEpoch != s.epoch)
      return false; // the same thread, or a barrier since
    // Lanes of one warp that synchronised since.
    return !(other / 32 == me / 32 && sync > otherSync);
  };
  // Two-byte granules: bf16 and fp16 neighbours are different threads'
  // (no ferry kernel stores single bytes).
  for (uintptr_t word = address >> 1, last = (address + bytes - 1) >> 1;
       word <= last; ++word) {
    Entry &e = table.at(word);
    if (write) {
      if (conflicts(e.writer, e.writerBlock, e.writerEpoch, e.writerSync))
        report(s, "write after write", device, word << 1, e.writerBlock,
               e.writer, pc);
      if (conflicts(e.reader, e.readerBlock, e.readerEpoch, e.readerSync))
        report(s, "write after read", device, word << 1, e.readerBlock,
               e.reader, pc);
      e.writer = me, e.writerBlock = s.block, e.writerEpoch = s.epoch,
      e.writerSync = sync;
      e.reader = -1;
    } else {
      if (conflicts(e.writer, e.writerBlock, e.writerEpoch, e.writerSync))
        report(s, "read after write", device, word << 1, e.writerBlock,
               e.writer, pc);
      e.reader = me, e.readerBlock = s.block, e.readerEpoch = s.epoch,
      e.readerSync = sync;
    }
  }
}

inline void access(const void *p, unsigned bytes, bool write, const void *pc) {
  gInstrumented = true;
  State *s = tState;
  if (!s || s->thread < 0)
    return;
  auto a = reinterpret_cast<uintptr_t>(p);
  if (a >= s->stackBegin && a < s->stackEnd)
    return; // the thread's own stack: private
  check(*s, a, bytes, write, pc);
}

} // namespace

bool enabled() { return gInstrumented && checksOn(); }

void kernelBegin(const std::string &kernel) {
  if (!checksOn())
    return;
  State &s = state();
  s.inKernel = true;
  s.kernelName = kernel;
  s.device.next();
  s.blocks.clear();
  s.allocBegin = s.allocEnd = 0;
  tState = &s;
}

void kernelEnd() {
  State &s = state();
  s.inKernel = false;
  s.thread = -1;
  tState = nullptr;
}

void blockBegin(unsigned bx, unsigned by, unsigned bz, unsigned threads,
                unsigned blockDimX, unsigned blockDimY) {
  State &s = state();
  if (!s.inKernel)
    return;
  s.blocks.push_back(uint3{bx, by, bz});
  s.block = static_cast<uint32_t>(s.blocks.size() - 1);
  s.dimX = blockDimX, s.dimY = blockDimY;
  s.epoch = 0;
  s.warpSyncs.assign((threads + 31) / 32, 0);
  s.shared.next();
  s.sharedLow = UINTPTR_MAX;
  s.thread = -1;
}

void blockEnd() { state().thread = -1; }

void running(int linear, const char *stackBegin, const char *stackEnd) {
  State &s = state();
  s.thread = s.inKernel ? linear : -1;
  s.stackBegin = reinterpret_cast<uintptr_t>(stackBegin);
  s.stackEnd = reinterpret_cast<uintptr_t>(stackEnd);
}

void barrierReleased() { ++state().epoch; }

void warpSynchronised(unsigned warp) {
  State &s = state();
  if (warp < s.warpSyncs.size())
    ++s.warpSyncs[warp];
}

} // namespace cudasim::race

bool cudaSimRaceChecksEnabled() { return cudasim::race::enabled(); }
void cudaSimSetRaceChecks(bool on) { cudasim::race::checksFlag() = on; }

// The hooks GCC's -fsanitize=thread instrumentation calls (with GCC's
// built-in declarations' signatures) (the kernels'
// translation units only; no ThreadSanitizer runtime is linked).
using cudasim::race::access;
#define FERRY_RACE_HOOKS(n)                                                    \
  extern "C" void __tsan_read##n(void *p) {                                    \
    access(p, n, false, __builtin_return_address(0));                          \
  }                                                                            \
  extern "C" void __tsan_write##n(void *p) {                                   \
    access(p, n, true, __builtin_return_address(0));                           \
  }                                                                            \
  extern "C" void __tsan_unaligned_read##n(void *p) {                          \
    access(p, n, false, __builtin_return_address(0));                          \
  }                                                                            \
  extern "C" void __tsan_unaligned_write##n(void *p) {                         \
    access(p, n, true, __builtin_return_address(0));                           \
  }
FERRY_RACE_HOOKS(1)
FERRY_RACE_HOOKS(2)
FERRY_RACE_HOOKS(4)
FERRY_RACE_HOOKS(8)
FERRY_RACE_HOOKS(16)
extern "C" void __tsan_read_range(void *p, long n) {
  if (n > 0)
    access(p, static_cast<unsigned>(n), false, __builtin_return_address(0));
}
extern "C" void __tsan_write_range(void *p, long n) {
  if (n > 0)
    access(p, static_cast<unsigned>(n), true, __builtin_return_address(0));
}
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void *) {}
extern "C" void __tsan_func_exit(void *) {}
extern "C" void __tsan_vptr_update(void *, void *) {}
extern "C" void __tsan_vptr_read(void *) {}

// Atomic operations in instrumented code (the test framework's reference
// counts in RaceTest.cpp; kernels' atomics are not instrumented, Device.h):
// done, without checks, with the compiler's own atomics.
#define FERRY_RACE_ATOMICS(bits, type)                                         \
  extern "C" type __tsan_atomic##bits##_load(const volatile void *a, int) {    \
    return __atomic_load_n(static_cast<const volatile type *>(a),              \
                           __ATOMIC_SEQ_CST);                                  \
  }                                                                            \
  extern "C" void __tsan_atomic##bits##_store(volatile void *a, type v, int) { \
    __atomic_store_n(static_cast<volatile type *>(a), v, __ATOMIC_SEQ_CST);    \
  }                                                                            \
  extern "C" type __tsan_atomic##bits##_exchange(volatile void *a, type v,     \
                                                 int) {                        \
    return __atomic_exchange_n(static_cast<volatile type *>(a), v,             \
                               __ATOMIC_SEQ_CST);                              \
  }                                                                            \
  extern "C" type __tsan_atomic##bits##_fetch_add(volatile void *a, type v,    \
                                                  int) {                       \
    return __atomic_fetch_add(static_cast<volatile type *>(a), v,              \
                              __ATOMIC_SEQ_CST);                               \
  }                                                                            \
  extern "C" type __tsan_atomic##bits##_fetch_sub(volatile void *a, type v,    \
                                                  int) {                       \
    return __atomic_fetch_sub(static_cast<volatile type *>(a), v,              \
                              __ATOMIC_SEQ_CST);                               \
  }                                                                            \
  extern "C" type __tsan_atomic##bits##_fetch_and(volatile void *a, type v,    \
                                                  int) {                       \
    return __atomic_fetch_and(static_cast<volatile type *>(a), v,              \
                              __ATOMIC_SEQ_CST);                               \
  }                                                                            \
  extern "C" type __tsan_atomic##bits##_fetch_or(volatile void *a, type v,     \
                                                 int) {                        \
    return __atomic_fetch_or(static_cast<volatile type *>(a), v,               \
                             __ATOMIC_SEQ_CST);                                \
  }                                                                            \
  extern "C" type __tsan_atomic##bits##_fetch_xor(volatile void *a, type v,    \
                                                  int) {                       \
    return __atomic_fetch_xor(static_cast<volatile type *>(a), v,              \
                              __ATOMIC_SEQ_CST);                               \
  }                                                                            \
  extern "C" bool __tsan_atomic##bits##_compare_exchange_strong(               \
      volatile void *a, void *expected, type v, int, int) {                    \
    return __atomic_compare_exchange_n(                                        \
        static_cast<volatile type *>(a), static_cast<type *>(expected), v,     \
        false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                            \
  }                                                                            \
  extern "C" bool __tsan_atomic##bits##_compare_exchange_weak(                 \
      volatile void *a, void *expected, type v, int, int) {                    \
    return __atomic_compare_exchange_n(static_cast<volatile type *>(a),        \
                                       static_cast<type *>(expected), v, true, \
                                       __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
  }
FERRY_RACE_ATOMICS(8, uint8_t)
FERRY_RACE_ATOMICS(16, uint16_t)
FERRY_RACE_ATOMICS(32, uint32_t)
FERRY_RACE_ATOMICS(64, uint64_t)
extern "C" void __tsan_atomic_thread_fence(int) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
extern "C" void __tsan_atomic_signal_fence(int) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
