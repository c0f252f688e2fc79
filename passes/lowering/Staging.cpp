//===- Staging.cpp - remote buffers staged through device buffers ---------===//
//
// See Staging.h. Per phase (the instructions between an rt.phase_begin and
// its rt.phase_end in one block), every range of a remote state the
// phase's calls take becomes a group; each group gets a device rt.alloc
// the calls take instead, and copies at its scope's edges, planned as data
// (StagingTransfers.h) and then created in place: at the start and end of
// the phase or loop body, and right before or after a loop for a
// double-buffered range's first iteration and last copies.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/Staging.h"
#include "passes/lowering/StagingTransfers.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <map>

using namespace mlir;
using namespace ferry;
using namespace ferry::lowering;

namespace {

// Whether two ranges of one buffer can overlap at run time.
bool mayOverlap(const BufferRange &a, const BufferRange &b) {
  Affine d = a.offset + (b.offset * -1);
  if (!d.isConstant())
    return true;
  return d.c < b.bytes && -d.c < a.bytes;
}

// One staged range of a remote state, and the calls that take it.
struct Group {
  rt::LoopOp scope; // null: the phase
  int depth = -1;   // the scope's loop depth inside the phase
  size_t state = 0;
  BufferRange range; // of the state's rt.state_ref
  bool load = false, store = false, seen = false;
  SmallVector<std::pair<Operation *, unsigned>> refs;
  rt::LoopOp prefetchLoop; // double-buffered over this loop
};

// What goes right before and after a loop.
struct AroundLoop {
  std::vector<Transfer> before, after;
};

// The copies at one scope's edges.
struct Edges {
  rt::LoopOp scope;                    // null: the phase
  std::vector<Transfer> loads, stores; // synchronous
  std::vector<Transfer> next, output;  // double-buffered
};

struct Staging {
  Staging(rt::ProgramOp program, const std::vector<StateInfo> &states)
      : program(program), states(states) {}
  rt::ProgramOp program;
  const std::vector<StateInfo> &states;
  llvm::StringMap<size_t> stateIndex;
  PrefetchLevels levels;
  int64_t registers = 0;
  int64_t nextEvent = 0;
  int64_t prefetchedGroups = 0, syncGroups = 0;
  std::string error;
  LoopTransfers loopTransfers;

  void collect(Block::iterator begin, Block::iterator end,
               SmallVectorImpl<rt::LoopOp> &loops, std::vector<Group> &groups,
               llvm::DenseMap<Operation *, int> &loopOrder) {
    for (Operation &op : llvm::make_range(begin, end)) {
      if (auto loop = dyn_cast<rt::LoopOp>(op)) {
        loopOrder.try_emplace(loop, static_cast<int>(loopOrder.size()));
        loops.push_back(loop);
        Block &body = loop.getBody().front();
        collect(body.begin(), body.end(), loops, groups, loopOrder);
        loops.pop_back();
        continue;
      }
      auto call = dyn_cast<rt::KernelCallOpInterface>(op);
      // Transfers already name the remote side on purpose.
      if (!call || isa<rt::LoadOp, rt::StoreOp>(op))
        continue;
      for (OpOperand &operand : op.getOpOperands()) {
        rt::SliceOp slice = sliceOf(operand.get());
        StringAttr state = stateOf(slice.getSource());
        if (!state || !states[stateIndex.lookup(state)].host)
          continue;
        BufferRange r{slice.getSource(), offsetOf(slice),
                      static_cast<int64_t>(slice.getBytes())};
        size_t index = stateIndex.lookup(state);
        rt::LoopOp scope;
        int depth = -1;
        for (auto [d, loop] : llvm::enumerate(loops))
          if (r.offset.usesRegister(loop.getRegisterIndex())) {
            scope = loop;
            depth = static_cast<int>(d);
          }
        Group *g = nullptr;
        for (Group &cand : groups)
          if (cand.scope == scope && cand.state == index &&
              cand.range.bytes == r.bytes && cand.range.offset == r.offset)
            g = &cand;
        if (!g) {
          groups.push_back(Group{scope, depth, index, r});
          g = &groups.back();
        }
        bool reads = false, writes = false;
        accessOf(call, operand.getOperandNumber(), reads, writes);
        if (!g->seen)
          g->load = reads;
        g->seen = true;
        g->store |= writes;
        g->refs.push_back({&op, operand.getOperandNumber()});
      }
    }
  }

  // Whether `g` may load its next iteration's range while this one runs:
  // consecutive iterations touch disjoint bytes, and no other group of the
  // phase stores into the bytes it reads ahead (a store issued later would
  // land after the early read).
  bool canPrefetch(const Group &g, const std::vector<Group> &groups,
                   rt::LoopOp loop) {
    auto r = static_cast<int64_t>(loop.getRegisterIndex());
    auto n = static_cast<int64_t>(loop.getCount());
    int64_t cg = g.range.offset.coeff(r);
    if (n < 2 || std::abs(cg) < g.range.bytes)
      return false;
    Affine base = g.range.offset.withRegister(r, 0);
    for (const Group &other : groups) {
      if (&other == &g || other.state != g.state || !other.store)
        continue;
      // Only offsets that differ by a constant elsewhere can be compared.
      Affine shift = other.range.offset.withRegister(r, 0) + (base * -1);
      if (!shift.isConstant())
        return false;
      int64_t co = other.range.offset.coeff(r);
      int64_t a0 = std::min<int64_t>(0, cg * (n - 1));
      int64_t a1 = std::max<int64_t>(0, cg * (n - 1)) + g.range.bytes;
      int64_t b0 = shift.c + std::min<int64_t>(0, co * (n - 1));
      int64_t b1 =
          shift.c + std::max<int64_t>(0, co * (n - 1)) + other.range.bytes;
      if (a0 < b1 && b0 < a1)
        return false; // the other group writes bytes this one reads ahead
    }
    return true;
  }

  LogicalResult stagePhase(rt::PhaseBeginOp begin, Operation *end,
                           const std::string &phase, rt::LoopOp enclosing);
  LogicalResult stageBlock(Block &block, rt::LoopOp owner,
                           const std::vector<std::string> &phaseNames);
};

// Stages the phase whose contents are the ops strictly between `begin` and
// `end` (its rt.phase_end, or null: the rest of the block). `enclosing` is
// the loop whose whole body the phase is (a layer loop), or null.
LogicalResult Staging::stagePhase(rt::PhaseBeginOp begin, Operation *end,
                                  const std::string &phase,
                                  rt::LoopOp enclosing) {
  Block *block = begin->getBlock();
  Block::iterator first = std::next(begin->getIterator());
  Block::iterator last = end ? end->getIterator() : block->end();
  std::vector<Group> groups;
  SmallVector<rt::LoopOp> loops;
  llvm::DenseMap<Operation *, int> loopOrder; // pre-order inside the phase
  collect(first, last, loops, groups, loopOrder);
  if (groups.size() >= 1024) {
    error = "phase " + phase + " touches more than 1024 remote ranges";
    return failure();
  }
  // Two staged copies of overlapping bytes would diverge.
  for (size_t i = 0; i < groups.size(); ++i)
    for (size_t j = i + 1; j < groups.size(); ++j)
      if (groups[i].state == groups[j].state &&
          (groups[i].store || groups[j].store) &&
          mayOverlap(groups[i].range, groups[j].range)) {
        error = "phase " + phase + " touches overlapping ranges of @" +
                states[groups[i].state].name +
                " in different ways; it "
                "cannot be staged";
        return failure();
      }
  // Double-buffered groups: a loop inside the phase whose counter the
  // address uses (micro-batch i + 1 while i computes), or the layer loop the
  // phase is the body of (layer l + 1's weights while l computes).
  for (Group &g : groups) {
    rt::LoopOp loop;
    if (g.scope && levels.nextMicroBatch)
      loop = g.scope;
    else if (!g.scope && enclosing && levels.nextLayer &&
             g.range.offset.usesRegister(enclosing.getRegisterIndex()))
      loop = enclosing;
    if (loop && canPrefetch(g, groups, loop))
      g.prefetchLoop = loop;
  }
  // By scope, deepest first, later loops first among equals (the order
  // the scopes' events are numbered in), the phase itself last.
  std::map<std::pair<int, int>, Edges, std::greater<>> edges;
  llvm::MapVector<Operation *, AroundLoop> around;
  llvm::DenseMap<Operation *, std::pair<int64_t, int64_t>> loopEvents;
  Builder b(program.getContext());
  for (Group &g : groups) {
    std::string label = "@" + states[g.state].name + " (staged)";
    Edges &e = edges[{g.depth, g.scope ? loopOrder.lookup(g.scope) : -1}];
    e.scope = g.scope;
    int64_t bytes = g.range.bytes;
    if (!g.prefetchLoop) {
      ++syncGroups;
      Value temp = appendAlloc(program, bytes, label);
      BufferRange device{temp, Affine(), bytes};
      for (auto [op, index] : g.refs)
        setRange(op, index, temp, device.offset, bytes);
      if (g.load)
        e.loads.push_back(Transfer::load(device, g.range, 0));
      if (g.store)
        e.stores.push_back(Transfer::store(device, g.range, 0));
      continue;
    }
    ++prefetchedGroups;
    rt::LoopOp loop = g.prefetchLoop;
    if (!loop.getParityRegister())
      loop.setParityRegisterAttr(b.getI64IntegerAttr(registers++));
    auto p = static_cast<int64_t>(*loop.getParityRegister());
    auto r = static_cast<int64_t>(loop.getRegisterIndex());
    auto [events, added] = loopEvents.try_emplace(loop);
    if (added) {
      events->second = {nextEvent, nextEvent + 1};
      nextEvent += 2;
    }
    auto [in, out] = events->second;
    Value temp = appendAlloc(program, 2 * bytes, label);
    BufferRange thisHalf{temp, Affine::reg(p) * bytes, bytes};
    BufferRange otherHalf{
        temp, Affine::constant(bytes) + Affine::reg(p) * -bytes, bytes};
    for (auto [op, index] : g.refs)
      setRange(op, index, temp, thisHalf.offset, bytes);
    AroundLoop &edge = around[loop];
    if (g.load) {
      // Before the loop: iteration 0 into half 0.
      BufferRange firstIteration{g.range.buffer,
                                 g.range.offset.withRegister(r, 0), bytes};
      edge.before.push_back(Transfer::load(BufferRange{temp, Affine(), bytes},
                                           firstIteration, in));
      // In iteration r: r + 1 into the other half, if there is one.
      BufferRange nextIteration{
          g.range.buffer,
          g.range.offset + Affine::constant(g.range.offset.coeff(r)), bytes};
      Transfer next = Transfer::load(otherHalf, nextIteration, in);
      next.guard = Affine::reg(r) + Affine::constant(1);
      next.limit = static_cast<int64_t>(loop.getCount());
      e.next.push_back(std::move(next));
    }
    if (g.store)
      e.output.push_back(Transfer::store(thisHalf, g.range, out));
    // Both halves are in use for the whole loop (one computing, the other
    // loading or storing on the copy thread), so the buffer stays live from
    // before the loop to the wait after it: the waits name it.
    BufferRange whole{temp, Affine(), 2 * bytes};
    if (!g.load)
      holdUntilWait(edge.before, out, whole);
    holdUntilWait(edge.after, g.store ? out : in, whole);
  }
  Location loc = program.getLoc();
  for (auto &[key, e] : edges) {
    std::vector<Transfer> head, tail;
    int64_t in = nextEvent++, out = nextEvent++;
    for (Transfer &t : e.loads) {
      t.event = in;
      head.push_back(t);
    }
    if (!e.next.empty()) {
      // This iteration's data (loaded by the previous one or before the
      // loop), then the next iteration's, which overlaps this compute.
      head.push_back(Transfer::wait(e.next.front().event));
      head.insert(head.end(), e.next.begin(), e.next.end());
    }
    if (!e.loads.empty())
      head.push_back(Transfer::wait(in));
    for (Transfer &t : e.stores) {
      t.event = out;
      tail.push_back(t);
    }
    if (!e.output.empty()) {
      // The other half is written by the next iteration's kernels, which
      // the copy queue does not order: its store (issued one iteration ago,
      // overlapping this one) must be done first.
      tail.push_back(Transfer::wait(e.output.front().event));
      tail.insert(tail.end(), e.output.begin(), e.output.end());
    }
    if (!e.stores.empty())
      tail.push_back(Transfer::wait(out));
    OpBuilder at(program.getContext());
    if (e.scope)
      at.setInsertionPointToStart(&e.scope.getBody().front());
    else
      at.setInsertionPointAfter(begin);
    for (const Transfer &t : head)
      emitTransfer(at, loc, t);
    if (e.scope)
      at.setInsertionPointToEnd(&e.scope.getBody().front());
    else if (end)
      at.setInsertionPoint(end);
    else
      at.setInsertionPointToEnd(block);
    for (const Transfer &t : tail)
      emitTransfer(at, loc, t);
  }
  for (auto &[loop, edge] : around) {
    OpBuilder at(loop);
    for (const Transfer &t : edge.before) {
      Operation *op = emitTransfer(at, loc, t);
      loopTransfers.before[loop].push_back(op);
      loopTransfers.attached.insert(op);
    }
    at.setInsertionPointAfter(loop);
    for (const Transfer &t : edge.after)
      loopTransfers.attached.insert(emitTransfer(at, loc, t));
  }
  return success();
}

// Whether an instruction (a call or a loop) comes before / after `op` in
// its block.
bool instructionBefore(Operation *op) {
  for (op = op->getPrevNode(); op; op = op->getPrevNode())
    if (isa<rt::KernelCallOpInterface, rt::LoopOp>(op))
      return true;
  return false;
}
bool instructionAfter(Operation *op) {
  for (op = op->getNextNode(); op; op = op->getNextNode())
    if (isa<rt::KernelCallOpInterface, rt::LoopOp>(op))
      return true;
  return false;
}

LogicalResult Staging::stageBlock(Block &block, rt::LoopOp owner,
                                  const std::vector<std::string> &phaseNames) {
  for (Operation *op = block.empty() ? nullptr : &block.front(); op;
       op = op->getNextNode()) {
    if (auto loop = dyn_cast<rt::LoopOp>(op)) {
      if (failed(stageBlock(loop.getBody().front(), loop, phaseNames)))
        return failure();
      continue;
    }
    auto begin = dyn_cast<rt::PhaseBeginOp>(op);
    if (!begin)
      continue;
    Operation *end = begin->getNextNode();
    while (end && !isa<rt::PhaseEndOp>(end))
      end = end->getNextNode();
    rt::LoopOp enclosing;
    if (owner && end && !instructionBefore(begin) && !instructionAfter(end))
      enclosing = owner;
    if (failed(
            stagePhase(begin, end, phaseNames[begin.getPhase()[0]], enclosing)))
      return failure();
    if (!end)
      break;
    op = end;
  }
  return success();
}

} // namespace

StagingResult lowering::stageProgram(rt::ProgramOp program,
                                     const std::vector<StateInfo> &states,
                                     PrefetchLevels levels) {
  StagingResult result;
  if (llvm::none_of(states, [](const StateInfo &s) { return s.host; }))
    return result;
  Staging staging(program, states);
  for (auto [i, s] : llvm::enumerate(states))
    staging.stateIndex[s.name] = i;
  staging.levels = levels;
  staging.registers = static_cast<int64_t>(program.getRegisters());
  Block &top = program.getBody().front();
  if (failed(staging.stageBlock(top, rt::LoopOp(), phaseNamesOf(program)))) {
    result.error = staging.error;
    return result;
  }
  if (levels.firstLayerEarly && levels.nextLayer)
    hoistIntoPreviousPhase(top, staging.loopTransfers);
  program.setRegisters(static_cast<uint64_t>(staging.registers));
  result.prefetchedGroups = staging.prefetchedGroups;
  result.syncGroups = staging.syncGroups;
  return result;
}
