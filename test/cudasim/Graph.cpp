// ferry's CUDA simulator: stream capture and CUDA graphs (cuda_runtime.h).
// Test-only.
//
// Capture follows the CUDA Programming Guide ("CUDA Graphs", "Creating a
// Graph Using Stream Capture"): work queued on a capturing stream becomes a
// node that depends on the stream's previous node; an event recorded on a
// capturing stream holds the stream's last nodes, and a stream that waits
// on it joins the capture (a fork) with those as its dependencies; the
// capture ends on its origin stream, which must by then have waited on
// every forked stream's last work (else cudaErrorStreamCaptureUnjoined).
// The strictest mode's rules apply whatever the mode: a synchronising or
// allocating call while a capture is under way fails (CUDA invalidates the
// capture), waiting inside a capture on an event recorded outside it fails
// (cudaErrorStreamCaptureIsolation), and an event last recorded in a
// capture cannot be queried or waited on afterwards (cudaErrorCapturedEvent).
//
// A launch replays the nodes on the simulator's own streams, one per
// captured stream, each node after its dependencies, so the device still
// interleaves them in a seeded order and a missing dependency shows as a
// wrong result, as with direct launches. The launch stream's later work
// waits for every node.
#include "Sim.h"

#include <algorithm>
#include <set>

struct CUgraph_st {
  std::vector<cudasim::GraphNode> nodes;
  size_t lanes = 1;
};
struct CUgraphExec_st {
  std::vector<cudasim::GraphNode> nodes;
  std::vector<CUstream_st *> lanes; // the simulator's streams replaying them
};

namespace cudasim {
namespace {

int &activeCaptures() {
  static int count = 0;
  return count;
}
int &unjoinedEnds() {
  static int count = 0;
  return count;
}

void addUnique(std::vector<size_t> &to, const std::vector<size_t> &from) {
  for (size_t n : from)
    if (std::find(to.begin(), to.end(), n) == to.end())
      to.push_back(n);
}

size_t laneOf(const Capture &c, const CUstream_st *s) {
  return static_cast<size_t>(std::find(c.lanes.begin(), c.lanes.end(), s) -
                             c.lanes.begin());
}

// Ends a capture: its streams capture no more.
void detach(Capture &c) {
  for (CUstream_st *s : c.lanes) {
    s->capture = nullptr;
    s->frontier.clear();
  }
  if (c.active)
    --activeCaptures();
  c.active = false;
}

} // namespace

void captureWork(CUstream_st *s, const char *what, std::function<void()> run) {
  Capture &c = *s->capture;
  GraphNode node{what, std::move(run), s->frontier, laneOf(c, s)};
  c.nodes.push_back(std::move(node));
  s->frontier = {c.nodes.size() - 1};
}

void refuseDuringCapture(const char *what) {
  if (activeCaptures() > 0)
    fail(std::string(what) + " while a stream is capturing: CUDA forbids it " +
         "(cudaErrorStreamCaptureUnsupported) and invalidates the capture");
}

void captureRecord(cudaEvent_t e, CUstream_st *s) {
  e->capture = s->capture;
  e->nodes = s->frontier;
  e->recorded = nullptr;
  e->time = nullptr;
}

bool captureWait(CUstream_st *s, cudaEvent_t e, cudaError_t &status) {
  if (e->capture) {
    if (!e->capture->active) { // recorded in a capture that has ended
      status = result(cudaErrorCapturedEvent);
      return true;
    }
    if (s->capture && s->capture != e->capture)
      fail("a stream waits on an event of another capture "
           "(cudaErrorStreamCaptureMerge)");
    if (!s->capture) { // a fork: the stream joins the capture
      if (s->legacy)
        fail("the legacy default stream joins a capture "
             "(cudaErrorStreamCaptureImplicit)");
      s->capture = e->capture;
      s->capture->lanes.push_back(s);
      s->frontier = e->nodes;
    } else {
      addUnique(s->frontier, e->nodes);
    }
    status = cudaSuccess;
    return true;
  }
  if (s->capture && e->recorded)
    fail("a capturing stream waits on an event recorded outside the capture "
         "(cudaErrorStreamCaptureIsolation): the graph cannot wait for "
         "work that is not in it");
  if (s->capture) { // never recorded: no work to wait for
    status = cudaSuccess;
    return true;
  }
  return false;
}

} // namespace cudasim

using namespace cudasim;

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  if (!knownStream(stream))
    return result(cudaErrorInvalidResourceHandle);
  CUstream_st *s = streamOf(stream);
  if (s->legacy)
    return result(cudaErrorStreamCaptureUnsupported);
  if (s->capture)
    return result(cudaErrorIllegalState);
  s->capture = std::make_shared<Capture>();
  s->capture->origin = s;
  s->capture->lanes = {s};
  s->frontier.clear();
  ++activeCaptures();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph) {
  if (!knownStream(stream) || !graph)
    return result(cudaErrorInvalidValue);
  CUstream_st *s = streamOf(stream);
  if (!s->capture)
    return result(cudaErrorIllegalState);
  std::shared_ptr<Capture> c = s->capture;
  if (c->origin != s)
    return result(cudaErrorStreamCaptureUnmatched);
  // Every forked stream's last nodes must be among the origin's ancestors.
  std::set<size_t> joined;
  std::vector<size_t> todo = s->frontier;
  while (!todo.empty()) {
    size_t n = todo.back();
    todo.pop_back();
    if (!joined.insert(n).second)
      continue;
    for (size_t d : c->nodes[n].deps)
      todo.push_back(d);
  }
  for (CUstream_st *lane : c->lanes)
    for (size_t n : lane->frontier)
      if (!joined.count(n)) {
        ++unjoinedEnds();
        detach(*c);
        *graph = nullptr;
        return result(cudaErrorStreamCaptureUnjoined);
      }
  auto *g = new CUgraph_st;
  g->nodes = std::move(c->nodes);
  g->lanes = c->lanes.size();
  detach(*c);
  *graph = g;
  return cudaSuccess;
}

int cudaSimUnjoinedCaptureEnds() { return unjoinedEnds(); }

cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                  cudaStreamCaptureStatus *status) {
  if (!knownStream(stream) || !status)
    return result(cudaErrorInvalidValue);
  *status = streamOf(stream)->capture ? cudaStreamCaptureStatusActive
                                      : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long) {
  if (!exec || !graph)
    return result(cudaErrorInvalidValue);
  auto *x = new CUgraphExec_st;
  x->nodes = graph->nodes;
  for (size_t l = 0; l < graph->lanes; ++l) {
    auto *lane = new CUstream_st;
    lane->blocking = false;
    allStreams().push_back(lane);
    x->lanes.push_back(lane);
  }
  *exec = x;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (!exec || !knownStream(stream))
    return result(cudaErrorInvalidResourceHandle);
  CUstream_st *s = streamOf(stream);
  if (s->capture)
    fail("a graph launched into a capturing stream (a child graph) is not "
         "simulated");
  // The nodes start after the launch stream's earlier work.
  std::shared_ptr<bool> start = s->lastDone;
  std::vector<std::shared_ptr<bool>> done(exec->nodes.size());
  for (size_t i = 0; i < exec->nodes.size(); ++i) {
    const GraphNode &node = exec->nodes[i];
    CUstream_st *lane = exec->lanes[node.lane];
    Work work;
    work.what = "graph node: " + node.what;
    work.run = node.run;
    for (size_t d : node.deps)
      work.after.push_back(done[d]);
    if (start)
      work.after.push_back(start);
    if (!lane->queue.empty())
      work.after.push_back(lane->lastDone);
    done[i] = work.done;
    lane->lastDone = work.done;
    lane->queue.push_back(std::move(work));
  }
  enqueue(
      stream, "cudaGraphLaunch", [] {}, done);
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes,
                              size_t *count) {
  if (!graph || !count || nodes) // ferry asks for the count only
    return result(cudaErrorInvalidValue);
  *count = graph->nodes.size();
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (!graph)
    return result(cudaErrorInvalidValue);
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (!exec)
    return result(cudaErrorInvalidValue);
  // The replay streams go once their queued work has run.
  for (CUstream_st *lane : exec->lanes) {
    if (lane->queue.empty()) {
      auto &all = allStreams();
      all.erase(std::find(all.begin(), all.end(), lane));
      delete lane;
    } else {
      lane->destroyed = true;
    }
  }
  delete exec;
  return cudaSuccess;
}
