//===- Staging.cpp - remote buffers staged through device buffers ---------===//
//
// See Staging.h. The program is handled as a tree (a loop node owns its
// body) so loads and stores can be inserted at the start and end of a
// phase or loop body, and before or after a loop, without recounting
// positions; it is flattened back at the end.
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/Staging.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <map>

using namespace ferry;
using namespace ferry::lowering;
using llvm::SmallVector;
using llvm::StringRef;
using mlir::failed;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;

namespace {

struct Node {
  Instr in;
  std::vector<Node> body; // a loop's body
  // Instructions placed right before / after this node (a loop's prefetch
  // of its first iteration, its wait for the last stores).
  std::vector<Node> before, after;
  bool isLoop() const { return in.kernel.empty(); }
};

std::vector<Node> toTree(const std::vector<Instr> &instrs, size_t &p,
                         size_t end) {
  std::vector<Node> out;
  while (p < end) {
    Node n{instrs[p], {}};
    ++p;
    if (n.isLoop()) {
      size_t bodyEnd = p + n.in.loopBody;
      n.body = toTree(instrs, p, bodyEnd);
    }
    out.push_back(std::move(n));
  }
  return out;
}

void flatten(const std::vector<Node> &nodes, std::vector<Instr> &out) {
  for (const Node &n : nodes) {
    flatten(n.before, out);
    size_t at = out.size();
    out.push_back(n.in);
    if (n.isLoop()) {
      flatten(n.body, out);
      out[at].loopBody = static_cast<int64_t>(out.size() - at - 1);
    }
    flatten(n.after, out);
  }
}

// Whether two ranges of one buffer can overlap at run time.
bool mayOverlap(const Ref &a, const Ref &b) {
  Affine d = a.offset + (b.offset * -1);
  if (!d.isConstant())
    return true;
  return d.c < b.bytes && -d.c < a.bytes;
}

struct Staging {
  std::vector<Buffer> &buffers;
  const std::vector<bool> &host; // by buffer id (states first)
  const std::vector<StateInfo> &states;
  int64_t &registers;    // the program's register count (parity registers)
  PrefetchLevels levels; // what to double-buffer
  int64_t nextEvent = 0;
  int64_t prefetchedGroups = 0, syncGroups = 0;
  std::string error;

  // One staged range.
  struct Group {
    Node *scope = nullptr; // null: the phase
    int depth = -1;        // the scope's loop depth inside the phase
    int buffer = -1;
    Ref range;
    bool load = false, store = false, seen = false;
    int temp = -1;
    std::vector<Ref *> refs;
    Node *prefetchLoop = nullptr; // double-buffered over this loop
  };

  void collect(std::vector<Node> &nodes, std::vector<Node *> &loops,
               std::vector<Group> &groups) {
    for (Node &n : nodes) {
      if (n.isLoop()) {
        loops.push_back(&n);
        collect(n.body, loops, groups);
        loops.pop_back();
        continue;
      }
      // Transfers already name the remote side on purpose.
      if (n.in.kernel == "load" || n.in.kernel == "store")
        continue;
      for (size_t b = 0; b < n.in.buffers.size(); ++b) {
        Ref &r = n.in.buffers[b];
        if (r.buffer < 0 || r.buffer >= static_cast<int>(host.size()) ||
            !host[r.buffer])
          continue;
        Node *scope = nullptr;
        int depth = -1;
        for (auto [d, loop] : llvm::enumerate(loops))
          if (r.offset.usesRegister(loop->in.loopRegister)) {
            scope = loop;
            depth = static_cast<int>(d);
          }
        Group *g = nullptr;
        for (Group &cand : groups)
          if (cand.scope == scope && cand.buffer == r.buffer &&
              cand.range.bytes == r.bytes && cand.range.offset == r.offset)
            g = &cand;
        if (!g) {
          groups.push_back(Group{scope, depth, r.buffer, r});
          g = &groups.back();
        }
        bool reads = false, writes = false;
        accessOf(n.in, b, reads, writes);
        if (!g->seen)
          g->load = reads;
        g->seen = true;
        g->store |= writes;
        g->refs.push_back(&r);
      }
    }
  }

  Node transfer(StringRef kind, Ref device, Ref remote, int64_t event) {
    Instr in;
    in.kernel = kind.str();
    in.buffers = kind == "load" ? SmallVector<Ref>{remote, device}
                                : SmallVector<Ref>{device, remote};
    in.ints = {Affine::constant(device.bytes), Affine::constant(event)};
    return Node{in, {}};
  }
  Node wait(int64_t event) {
    Instr in;
    in.kernel = "wait";
    in.ints = {Affine::constant(event)};
    return Node{in, {}};
  }

  // Whether `g` may load its next iteration's range while this one runs:
  // consecutive iterations touch disjoint bytes, and no other group of the
  // phase stores into the bytes it reads ahead (a store issued later would
  // land after the early read).
  bool canPrefetch(const Group &g, const std::vector<Group> &groups,
                   Node *loop) {
    int64_t r = loop->in.loopRegister, n = loop->in.loopCount;
    int64_t cg = g.range.offset.coeff(r);
    if (n < 2 || std::abs(cg) < g.range.bytes)
      return false;
    Affine base = g.range.offset.withRegister(r, 0);
    for (const Group &other : groups) {
      if (&other == &g || other.buffer != g.buffer || !other.store)
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

  // Stages the phase whose contents are nodes[begin, end) of a block.
  // `enclosing` is the loop whose whole body the phase is (a layer loop), or
  // null.
  LogicalResult stagePhase(std::vector<Node> &block, size_t begin, size_t end,
                           const std::string &phase, Node *enclosing) {
    std::vector<Node> inner(std::make_move_iterator(block.begin() + begin),
                            std::make_move_iterator(block.begin() + end));
    std::vector<Group> groups;
    groups.reserve(1024);
    std::vector<Node *> loops;
    collect(inner, loops, groups);
    if (groups.size() >= 1024) {
      error = "phase " + phase + " touches more than 1024 remote ranges";
      return failure();
    }
    // Two staged copies of overlapping bytes would diverge.
    for (size_t i = 0; i < groups.size(); ++i)
      for (size_t j = i + 1; j < groups.size(); ++j)
        if (groups[i].buffer == groups[j].buffer &&
            (groups[i].store || groups[j].store) &&
            mayOverlap(groups[i].range, groups[j].range)) {
          error = "phase " + phase + " touches overlapping ranges of @" +
                  states[groups[i].buffer].name +
                  " in different ways; it cannot be staged";
          return failure();
        }
    // Double-buffered groups: a loop inside the phase whose counter the
    // address uses (micro-batch i + 1 while i computes), or the layer loop
    // the phase is the body of (layer l + 1's weights while l computes).
    for (Group &g : groups) {
      Node *loop = nullptr;
      if (g.scope && levels.nextMicroBatch)
        loop = g.scope;
      else if (!g.scope && enclosing && levels.nextLayer &&
               g.range.offset.usesRegister(enclosing->in.loopRegister))
        loop = enclosing;
      if (loop && canPrefetch(g, groups, loop))
        g.prefetchLoop = loop;
    }
    // By scope, deepest first (inserting into a body moves the loops in
    // it), the phase itself last.
    struct Edges {
      std::vector<Node> loads, stores;         // synchronous
      std::vector<Node> current, next, output; // double-buffered
      Node *loop = nullptr;
    };
    std::map<std::pair<int, Node *>, Edges, std::greater<>> edges;
    std::map<Node *, std::pair<int64_t, int64_t>> loopEvents; // in, out
    for (Group &g : groups) {
      Buffer t;
      t.label = "@" + states[g.buffer].name + " (staged)";
      Edges &e = edges[{g.depth, g.scope}];
      int64_t bytes = g.range.bytes;
      if (!g.prefetchLoop) {
        ++syncGroups;
        t.bytes = bytes;
        buffers.push_back(t);
        g.temp = static_cast<int>(buffers.size() - 1);
        Ref device{g.temp, Affine(), bytes};
        for (Ref *r : g.refs)
          *r = device;
        if (g.load)
          e.loads.push_back(transfer("load", device, g.range, 0));
        if (g.store)
          e.stores.push_back(transfer("store", device, g.range, 0));
        continue;
      }
      ++prefetchedGroups;
      Node *loop = g.prefetchLoop;
      e.loop = loop;
      if (loop->in.parityRegister < 0)
        loop->in.parityRegister = registers++;
      int64_t p = loop->in.parityRegister, r = loop->in.loopRegister;
      auto [events, added] = loopEvents.try_emplace(loop);
      if (added) {
        events->second = {nextEvent, nextEvent + 1};
        nextEvent += 2;
      }
      auto [in, out] = events->second;
      t.bytes = 2 * bytes;
      buffers.push_back(t);
      g.temp = static_cast<int>(buffers.size() - 1);
      Ref thisHalf{g.temp, Affine::reg(p) * bytes, bytes};
      Ref otherHalf{g.temp, Affine::constant(bytes) + Affine::reg(p) * -bytes,
                    bytes};
      for (Ref *ref : g.refs)
        *ref = thisHalf;
      if (g.load) {
        // Before the loop: iteration 0 into half 0.
        Ref first{g.range.buffer, g.range.offset.withRegister(r, 0), bytes};
        loop->before.push_back(
            transfer("load", Ref{g.temp, Affine(), bytes}, first, in));
        // In iteration r: r + 1 into the other half, if there is one.
        Ref next{g.range.buffer,
                 g.range.offset + Affine::constant(g.range.offset.coeff(r)),
                 bytes};
        Node n = transfer("load", otherHalf, next, in);
        n.in.ints.push_back(Affine::reg(r) + Affine::constant(1));
        n.in.ints.push_back(Affine::constant(loop->in.loopCount));
        e.next.push_back(std::move(n));
      }
      if (g.store)
        e.output.push_back(transfer("store", thisHalf, g.range, out));
      // Both halves are in use for the whole loop (one computing, the other
      // loading or storing on the copy thread), so the buffer stays live
      // from before the loop to the wait after it: the waits name it.
      Ref whole{g.temp, Affine(), 2 * bytes};
      auto hold = [&](std::vector<Node> &nodes, int64_t event) {
        for (Node &n : nodes)
          if (n.in.kernel == "wait" && n.in.ints[0].c == event) {
            n.in.buffers.push_back(whole);
            return;
          }
        nodes.push_back(wait(event));
        nodes.back().in.buffers.push_back(whole);
      };
      if (!g.load)
        hold(loop->before, out);
      hold(loop->after, g.store ? out : in);
    }
    for (auto &[key, e] : edges) {
      Node *scope = key.second;
      std::vector<Node> head, tail;
      int64_t in = nextEvent++, out = nextEvent++;
      for (Node &n : e.loads) {
        n.in.ints[1] = Affine::constant(in);
        head.push_back(std::move(n));
      }
      if (!e.next.empty()) {
        // This iteration's data (loaded by the previous one or before the
        // loop), then the next iteration's, which overlaps this compute.
        head.push_back(wait(e.next.front().in.ints[1].c));
        for (Node &n : e.next)
          head.push_back(std::move(n));
      }
      if (!e.loads.empty())
        head.push_back(wait(in));
      for (Node &n : e.stores) {
        n.in.ints[1] = Affine::constant(out);
        tail.push_back(std::move(n));
      }
      if (!e.output.empty()) {
        // The other half is written by the next iteration's kernels, which
        // the copy queue does not order: its store (issued one iteration
        // ago, overlapping this one) must be done first.
        tail.push_back(wait(e.output.front().in.ints[1].c));
        for (Node &n : e.output)
          tail.push_back(std::move(n));
      }
      if (!e.stores.empty())
        tail.push_back(wait(out));
      std::vector<Node> &body = scope ? scope->body : inner;
      body.insert(body.begin(), std::make_move_iterator(head.begin()),
                  std::make_move_iterator(head.end()));
      body.insert(body.end(), std::make_move_iterator(tail.begin()),
                  std::make_move_iterator(tail.end()));
    }
    block.erase(block.begin() + begin, block.begin() + end);
    block.insert(block.begin() + begin, std::make_move_iterator(inner.begin()),
                 std::make_move_iterator(inner.end()));
    return success();
  }

  LogicalResult stageBlock(std::vector<Node> &block,
                           const std::vector<std::string> &phaseNames,
                           Node *owner) {
    for (size_t i = 0; i < block.size(); ++i) {
      if (block[i].isLoop()) {
        if (failed(stageBlock(block[i].body, phaseNames, &block[i])))
          return failure();
        continue;
      }
      if (block[i].in.kernel != "phase_begin")
        continue;
      size_t end = i + 1;
      while (end < block.size() && block[end].in.kernel != "phase_end")
        ++end;
      Node *enclosing =
          owner && i == 0 && end + 1 == block.size() ? owner : nullptr;
      size_t before = block.size();
      if (failed(stagePhase(block, i + 1, end,
                            phaseNames[block[i].in.ints[0].c], enclosing)))
        return failure();
      i = end + (block.size() - before); // the phase_end marker
    }
    return success();
  }

  static bool storesInto(const std::vector<Node> &nodes, size_t begin,
                         size_t end, int buffer) {
    for (size_t k = begin; k < end; ++k) {
      const Node &n = nodes[k];
      if (n.in.kernel == "store" && n.in.buffers[1].buffer == buffer)
        return true;
      if (storesInto(n.before, 0, n.before.size(), buffer) ||
          storesInto(n.body, 0, n.body.size(), buffer) ||
          storesInto(n.after, 0, n.after.size(), buffer))
        return true;
    }
    return false;
  }

  // Across phases (levels.firstLayerEarly): a layer loop's first-iteration
  // loads move into the phase before the loop, right after that phase's own
  // loads, so they overlap its compute (heads.fwd_bwd computes while layer
  // L-1's weights arrive). Not a load whose host bytes that phase stores.
  void hoistIntoPreviousPhase(std::vector<Node> &block) {
    for (size_t k = 1; k < block.size(); ++k) {
      Node &loop = block[k];
      if (!loop.isLoop() || loop.before.empty() ||
          block[k - 1].in.kernel != "phase_end")
        continue;
      size_t begin = k - 1;
      while (begin > 0 && block[begin].in.kernel != "phase_begin")
        --begin;
      if (block[begin].in.kernel != "phase_begin")
        continue;
      // After the phase's own loads and their wait, if any.
      size_t at = begin + 1;
      while (at < k - 1 && block[at].in.kernel == "load")
        ++at;
      if (at > begin + 1 && block[at].in.kernel == "wait")
        ++at;
      else
        at = begin + 1;
      std::vector<Node> hoisted, kept;
      for (Node &n : loop.before) {
        if (n.in.kernel == "load" &&
            !storesInto(block, begin, k, n.in.buffers[0].buffer))
          hoisted.push_back(std::move(n));
        else
          kept.push_back(std::move(n));
      }
      loop.before = std::move(kept);
      hoistedLoads += static_cast<int64_t>(hoisted.size());
      block.insert(block.begin() + at, std::make_move_iterator(hoisted.begin()),
                   std::make_move_iterator(hoisted.end()));
      k += hoisted.size();
    }
  }
  int64_t hoistedLoads = 0;
};

} // namespace

StagingResult lowering::stageProgram(Program &p,
                                     const std::vector<StateInfo> &states,
                                     PrefetchLevels levels) {
  StagingResult result;
  std::vector<bool> host;
  bool anyHost = false;
  for (const StateInfo &s : states) {
    host.push_back(s.host);
    anyHost |= s.host;
  }
  if (!anyHost)
    return result;
  size_t pos = 0;
  std::vector<Node> tree = toTree(p.instrs, pos, p.instrs.size());
  Staging staging{p.buffers, host, states, p.registers, levels};
  if (failed(staging.stageBlock(tree, p.phaseNames, nullptr))) {
    result.error = staging.error;
    return result;
  }
  if (levels.firstLayerEarly && levels.nextLayer)
    staging.hoistIntoPreviousPhase(tree);
  result.prefetchedGroups = staging.prefetchedGroups;
  result.syncGroups = staging.syncGroups;
  p.instrs.clear();
  flatten(tree, p.instrs);
  return result;
}
