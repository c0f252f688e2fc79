// ferry's CUDA simulator: runs a kernel's grid on the CPU. Each block's
// threads are fibers (Fiber.h) that run until a barrier, a warp shuffle or
// their end; the scheduler resumes them in a seeded order that changes every
// round, so a read of another thread's write that lacks a barrier sees a
// different value under some seed. After a warp completes a shuffle or
// __syncwarp, the scheduler may (seeded) let that warp alone run on to its
// next one, and on again, before the other warps move: a warp running ahead
// of the block, as a GPU's warp schedulers allow, so a read of another
// warp's shared-memory write that lacks its __syncthreads sees the old value
// (and the race checker, Race.h, names it). What CUDA leaves undefined is an
// error:
// a barrier that not every thread reaches (or that threads reach at
// different __syncthreads), a shuffle whose mask names a lane that is not
// there or does not take part, a deadlock.
#include "Fiber.h"
#include "Race.h"
#include "Sim.h"

#include <algorithm>
#include <memory>
#include <vector>

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;

namespace cudasim {
namespace {

struct ThreadState {
  uint3 threadIdx, blockIdx;
  dim3 blockDim, gridDim;
};

// Makes `s` the running thread's built-in variables.
void enter(const ThreadState &s) {
  ::threadIdx = s.threadIdx;
  ::blockIdx = s.blockIdx;
  ::blockDim = s.blockDim;
  ::gridDim = s.gridDim;
}

constexpr size_t kStackBytes = 256 << 10; // ASan's redzones need room

struct SimThread {
  ThreadState state;
  Fiber *fiber = nullptr;
  enum Status { Runnable, AtBarrier, AtShuffle, Done } status = Runnable;
  const char *file = nullptr;
  int line = 0;
  unsigned linear = 0;
  // A pending shuffle.
  unsigned mask = 0;
  uint64_t bits = 0, result = 0;
  ShuffleKind kind = kShflXor;
  int operand = 0, width = 32;
};

struct BlockRunner {
  std::vector<std::unique_ptr<Fiber>> fibers;
  std::vector<SimThread> threads;
  SimThread *running = nullptr;
  const std::function<void()> *body = nullptr;
  const std::string *kernel = nullptr;

  std::string where(const SimThread &t) const {
    const ThreadState &s = t.state;
    return "kernel " + *kernel + ", block (" + std::to_string(s.blockIdx.x) +
           "," + std::to_string(s.blockIdx.y) + "," +
           std::to_string(s.blockIdx.z) + "), thread (" +
           std::to_string(s.threadIdx.x) + "," + std::to_string(s.threadIdx.y) +
           "," + std::to_string(s.threadIdx.z) + ")";
  }
  static std::string at(const char *file, int line) {
    return std::string(file ? file : "?") + ":" + std::to_string(line);
  }

  void runBlock(const dim3 &grid, const dim3 &block, uint3 blockIdx);
  bool completeShuffles();
  void releaseBarrier();
  void resume(SimThread &t);
  void runWarpAhead(unsigned warp, std::vector<unsigned> &order);
  std::vector<unsigned> released; // warps whose shuffle just completed
};

thread_local BlockRunner *tRunner = nullptr;

void threadEntry(void *argument) {
  (*tRunner->body)();
  static_cast<SimThread *>(argument)->status = SimThread::Done;
}

void BlockRunner::runBlock(const dim3 &grid, const dim3 &block,
                           uint3 blockIndex) {
  unsigned count = block.x * block.y * block.z;
  while (fibers.size() < count)
    fibers.push_back(std::make_unique<Fiber>(kStackBytes));
  threads.assign(count, SimThread{});
  for (unsigned i = 0; i < count; ++i) {
    SimThread &t = threads[i];
    t.linear = i;
    t.state.threadIdx = {i % block.x, (i / block.x) % block.y,
                         i / (block.x * block.y)};
    t.state.blockIdx = blockIndex;
    t.state.blockDim = block;
    t.state.gridDim = grid;
    t.fiber = fibers[i].get();
    t.fiber->start(&threadEntry, &t);
  }
  race::blockBegin(blockIndex.x, blockIndex.y, blockIndex.z, count, block.x,
                   block.y);
  std::vector<unsigned> order(count), lanes;
  for (unsigned i = 0; i < count; ++i)
    order[i] = i;
  for (;;) {
    std::shuffle(order.begin(), order.end(), rng());
    for (unsigned i : order) {
      SimThread &t = threads[i];
      if (t.status == SimThread::Runnable)
        resume(t);
    }
    running = nullptr;
    if (completeShuffles()) {
      // Half the time (seeded), one of the warps just released runs ahead.
      if (!released.empty() && rng()() % 2 == 0)
        runWarpAhead(released[rng()() % released.size()], lanes);
      continue;
    }
    unsigned done = 0, waiting = 0;
    for (const SimThread &t : threads) {
      done += t.status == SimThread::Done;
      waiting += t.status == SimThread::AtBarrier;
    }
    if (done == count) {
      race::blockEnd();
      return;
    }
    if (waiting == count) {
      releaseBarrier();
      continue;
    }
    // Nothing can move: name one thread of each state.
    const SimThread *barrier = nullptr, *exited = nullptr, *shuffle = nullptr;
    for (const SimThread &t : threads) {
      if (t.status == SimThread::AtBarrier && !barrier)
        barrier = &t;
      if (t.status == SimThread::Done && !exited)
        exited = &t;
      if (t.status == SimThread::AtShuffle && !shuffle)
        shuffle = &t;
    }
    std::string message;
    if (barrier && exited)
      message = "__syncthreads at " + at(barrier->file, barrier->line) +
                " is not reached by every thread of the block (" +
                where(*exited) + " has exited; CUDA leaves this undefined)";
    else if (shuffle)
      message = "the warp shuffle at " + at(shuffle->file, shuffle->line) +
                " of " + where(*shuffle) +
                " waits for lanes of its mask that never join it";
    else
      message = "the block cannot make progress (" + std::to_string(done) +
                " of " + std::to_string(count) + " threads done, " +
                std::to_string(waiting) + " at a barrier)";
    fail(message);
  }
}

void BlockRunner::resume(SimThread &t) {
  running = &t;
  enter(t.state);
  race::running(static_cast<int>(t.linear), t.fiber->stackBegin(),
                t.fiber->stackEnd());
  t.fiber->resume();
  race::running(-1, nullptr, nullptr);
}

// Runs `warp`'s lanes alone, each until it blocks, for as long as they
// complete their warp-level syncs among themselves.
void BlockRunner::runWarpAhead(unsigned warp, std::vector<unsigned> &lanes) {
  unsigned count = static_cast<unsigned>(threads.size());
  for (;;) {
    lanes.clear();
    for (unsigned i = warp * 32; i < std::min(count, warp * 32 + 32); ++i)
      lanes.push_back(i);
    std::shuffle(lanes.begin(), lanes.end(), rng());
    bool ran = false;
    for (unsigned i : lanes)
      if (threads[i].status == SimThread::Runnable) {
        resume(threads[i]);
        ran = true;
      }
    running = nullptr;
    if (!ran || !completeShuffles())
      return;
    if (std::find(released.begin(), released.end(), warp) == released.end())
      return; // other warps' shuffles completed, not this one's
  }
}

// Completes every shuffle whose mask's lanes have all arrived; true if any.
bool BlockRunner::completeShuffles() {
  bool any = false;
  released.clear();
  unsigned count = static_cast<unsigned>(threads.size());
  for (SimThread &t : threads) {
    if (t.status != SimThread::AtShuffle)
      continue;
    unsigned warp = t.linear / 32, lanes = std::min(32u, count - warp * 32);
    bool complete = true;
    for (unsigned lane = 0; lane < 32; ++lane) {
      if (!(t.mask >> lane & 1u))
        continue;
      if (lane >= lanes)
        fail("the warp shuffle at " + at(t.file, t.line) + " of " + where(t) +
             " has mask " + std::to_string(t.mask) + ", which names lane " +
             std::to_string(lane) + " of a warp of " + std::to_string(lanes) +
             " threads (a partial warp needs a partial mask)");
      SimThread &other = threads[warp * 32 + lane];
      if (other.status == SimThread::Done && t.kind == kWarpWhole)
        fail("the warp matrix function at " + at(t.file, t.line) + " of " +
             where(t) + " needs every lane of the warp, and lane " +
             std::to_string(lane) + " has exited");
      if (other.status == SimThread::Done)
        continue; // exited lanes of the mask need not take part (sm_70+)
      if (other.status != SimThread::AtShuffle) {
        complete = false;
        break;
      }
      if (other.mask != t.mask || other.file != t.file ||
          other.line != t.line || other.kind != t.kind ||
          other.width != t.width)
        fail("lanes of one mask are at different warp shuffles: " +
             at(t.file, t.line) + " (" + where(t) + ") and " +
             at(other.file, other.line) + " (" + where(other) + ")");
    }
    if (!complete)
      continue;
    // Every lane of the mask is here: exchange.
    unsigned base = warp * 32;
    for (unsigned lane = 0; lane < 32; ++lane) {
      if (!(t.mask >> lane & 1u))
        continue;
      SimThread &me = threads[base + lane];
      if (me.status != SimThread::AtShuffle)
        continue; // exited
      int w = me.width;
      if (w <= 0 || w > 32 || (w & (w - 1)))
        fail("warp shuffle width " + std::to_string(w) + " at " +
             at(me.file, me.line) + " is not a power of two up to 32");
      int segment = static_cast<int>(lane) / w * w,
          inSegment = static_cast<int>(lane) % w;
      int source = static_cast<int>(lane);
      switch (me.kind) {
      case kShflXor: { // a later segment's lane: the lane's own value
        int j = static_cast<int>(lane) ^ (me.operand & 31);
        source = j < segment + w ? j : static_cast<int>(lane);
        break;
      }
      case kShflDown:
        if (inSegment + me.operand < w)
          source = static_cast<int>(lane) + me.operand;
        break;
      case kShflUp:
        if (inSegment >= me.operand)
          source = static_cast<int>(lane) - me.operand;
        break;
      case kShflIdx:
      case kWarpWhole:
        source = segment + (me.operand & (w - 1));
        break;
      }
      if (!(t.mask >> source & 1u) ||
          threads[base + source].status != SimThread::AtShuffle)
        fail("the warp shuffle at " + at(me.file, me.line) + " of " +
             where(me) + " reads lane " + std::to_string(source) +
             ", which is not in its mask or has exited (the value is "
             "undefined)");
      me.result = threads[base + source].bits;
    }
    for (unsigned lane = 0; lane < 32; ++lane)
      if (t.mask >> lane & 1u &&
          threads[base + lane].status == SimThread::AtShuffle)
        threads[base + lane].status = SimThread::Runnable;
    race::warpSynchronised(warp);
    if (std::find(released.begin(), released.end(), warp) == released.end())
      released.push_back(warp);
    any = true;
  }
  return any;
}

void BlockRunner::releaseBarrier() {
  const SimThread &first = threads.front();
  for (SimThread &t : threads) {
    if (t.file != first.file || t.line != first.line)
      fail("threads of one block wait at different __syncthreads: " +
           at(first.file, first.line) + " (" + where(first) + ") and " +
           at(t.file, t.line) + " (" + where(t) + ")");
  }
  for (SimThread &t : threads)
    t.status = SimThread::Runnable;
  race::barrierReleased();
}

} // namespace

void syncThreads(const char *file, int line) {
  SimThread *t = tRunner ? tRunner->running : nullptr;
  if (!t)
    fail("__syncthreads called outside a kernel");
  t->status = SimThread::AtBarrier;
  t->file = file;
  t->line = line;
  t->fiber->yield();
}

uint64_t shuffle(unsigned mask, uint64_t bits, ShuffleKind kind, int operand,
                 int width, const char *file, int line) {
  SimThread *t = tRunner ? tRunner->running : nullptr;
  if (!t)
    fail("a warp shuffle called outside a kernel");
  unsigned lane = t->linear % 32;
  if (!(mask >> lane & 1u))
    fail("the warp shuffle at " + BlockRunner::at(file, line) + " of " +
         tRunner->where(*t) + " is called by lane " + std::to_string(lane) +
         ", which is not in its own mask");
  t->status = SimThread::AtShuffle;
  t->mask = mask;
  t->bits = bits;
  t->kind = kind;
  t->operand = operand;
  t->width = width;
  t->file = file;
  t->line = line;
  t->fiber->yield();
  return t->result;
}

void runGrid(const dim3 &grid, const dim3 &block,
             const std::function<void()> &body, const std::string &kernel) {
  static thread_local BlockRunner runner;
  if (tRunner)
    fail("kernel " + kernel + " launched from inside kernel " +
         *tRunner->kernel + " (the simulator has no dynamic parallelism)");
  runner.body = &body;
  runner.kernel = &kernel;
  tRunner = &runner;
  race::kernelBegin(kernel);
  uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
  std::vector<uint64_t> order(blocks);
  for (uint64_t b = 0; b < blocks; ++b)
    order[b] = b;
  std::shuffle(order.begin(), order.end(), rng());
  for (uint64_t b : order) {
    uint3 index{static_cast<unsigned>(b % grid.x),
                static_cast<unsigned>(b / grid.x % grid.y),
                static_cast<unsigned>(b / (uint64_t(grid.x) * grid.y))};
    runner.runBlock(grid, block, index);
  }
  race::kernelEnd();
  tRunner = nullptr;
}

} // namespace cudasim
