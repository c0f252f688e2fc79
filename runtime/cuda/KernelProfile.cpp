// `ferry train --profile` on the CUDA backend (KernelProfile.h).
#include "runtime/cuda/KernelProfile.h"

#include "runtime/cuda/Launch.h"
#include "runtime/executable/KernelTable.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace ferry::cuda {
namespace {

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA ") + what +
                             " failed (profiling): " + cudaGetErrorString(e));
}

using Interval = std::pair<double, double>;

// The union of intervals, merged and sorted.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval &i : v) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

double length(const std::vector<Interval> &v) {
  double s = 0;
  for (const Interval &i : v)
    s += i.second - i.first;
  return s;
}

// The length of the intersection of two merged unions.
double overlap(const std::vector<Interval> &a, const std::vector<Interval> &b) {
  double s = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    double lo = std::max(a[i].first, b[j].first);
    double hi = std::min(a[i].second, b[j].second);
    if (hi > lo)
      s += hi - lo;
    (a[i].second < b[j].second ? i : j) += 1;
  }
  return s;
}

} // namespace

KernelProfile::~KernelProfile() {
  for (cudaEvent_t e : all_)
    cudaEventDestroy(e);
}

cudaEvent_t KernelProfile::pooled() {
  if (!pool_.empty()) {
    cudaEvent_t e = pool_.back();
    pool_.pop_back();
    return e;
  }
  cudaEvent_t e;
  check(cudaEventCreate(&e), "timing event creation");
  all_.push_back(e);
  return e;
}

void KernelProfile::programStart(const std::string &name,
                                 cudaStream_t compute, bool graph) {
  // A program that threw left its events behind: back to the pool.
  for (const Pending &p : pending_) {
    pool_.push_back(p.start);
    pool_.push_back(p.end);
  }
  pending_.clear();
  for (cudaEvent_t *e : {&reference_, &graphEnd_})
    if (*e) {
      pool_.push_back(*e);
      *e = nullptr;
    }
  graph_ = graph;
  graphNodes_ = 0;
  program_ = name;
  launchesAtStart_ = launchCount();
  copies_ = 0;
  reference_ = pooled();
  check(cudaEventRecord(reference_, compute), "event record");
}

void KernelProfile::graphLaunched(cudaStream_t compute, size_t nodes) {
  graphEnd_ = pooled();
  graphNodes_ = nodes;
  check(cudaEventRecord(graphEnd_, compute), "event record");
}

void KernelProfile::before(uint16_t kernel, ProfileStream which,
                           cudaStream_t stream) {
  Pending p{kernel, which, pooled(), pooled()};
  check(cudaEventRecord(p.start, stream), "event record");
  pending_.push_back(p);
  if (which != ProfileStream::Compute)
    ++copies_;
}

void KernelProfile::after(cudaStream_t stream) {
  if (pending_.empty())
    return;
  check(cudaEventRecord(pending_.back().end, stream), "event record");
}

void KernelProfile::programEnd() {
  if (!reference_)
    return;
  std::vector<Interval> compute, copies;
  for (const Pending &p : pending_) {
    float start = 0, end = 0;
    check(cudaEventElapsedTime(&start, reference_, p.start), "event timing");
    check(cudaEventElapsedTime(&end, reference_, p.end), "event timing");
    double s = 1e-3 * start, e = 1e-3 * std::max(start, end);
    if (kernelSeconds_.size() <= p.kernel) {
      kernelSeconds_.resize(p.kernel + 1, 0.0);
      kernelCalls_.resize(p.kernel + 1, 0);
    }
    kernelSeconds_[p.kernel] += e - s;
    kernelCalls_[p.kernel] += 1;
    streamBusy_[static_cast<int>(p.stream)] += e - s;
    (p.stream == ProfileStream::Compute ? compute : copies).push_back({s, e});
    pool_.push_back(p.start);
    pool_.push_back(p.end);
  }
  std::vector<Interval> c = merged(compute), t = merged(copies);
  copySeconds_ += length(t);
  overlapSeconds_ += overlap(c, t);
  double span = 0;
  for (const Interval &i : compute)
    span = std::max(span, i.second);
  for (const Interval &i : copies)
    span = std::max(span, i.second);
  ProgramRuns &program = programs_[program_];
  Runs &runs = graphEnd_ ? program.graph : program.direct;
  if (graphEnd_) { // the graph's work, copies included, ends on compute
    float ms = 0;
    check(cudaEventElapsedTime(&ms, reference_, graphEnd_), "event timing");
    span = 1e-3 * ms;
    program.graphNodes = graphNodes_;
    pool_.push_back(graphEnd_);
    graphEnd_ = nullptr;
  }
  runs.runs += 1;
  runs.launches += launchCount() - launchesAtStart_;
  runs.copies += copies_;
  runs.seconds += span;
  pending_.clear();
  pool_.push_back(reference_);
  reference_ = nullptr;
}

std::string KernelProfile::report() const {
  std::vector<std::pair<double, size_t>> rows;
  double total = 0;
  for (size_t k = 0; k < kernelSeconds_.size(); ++k)
    if (kernelCalls_[k] > 0) {
      rows.push_back({kernelSeconds_[k], k});
      total += kernelSeconds_[k];
    }
  std::sort(rows.rbegin(), rows.rend());
  std::string out =
      "CUDA backend profile (CUDA-event timestamps around every kernel and "
      "copy on its stream, or around each CUDA-graph launch; the events add "
      "some time of their own)\n";
  bool graphs = false;
  for (const auto &[name, r] : programs_)
    graphs = graphs || r.graph.runs > 0;
  if (graphs)
    out += "programs replayed as CUDA graphs are timed whole; for times per "
           "kernel and stream, run with --set execution.cuda_graphs=false\n";
  if (!rows.empty()) {
    out += fmt::format("{:<28}{:>10}{:>12}{:>8}\n", "kernel", "calls",
                       "seconds", "share");
    for (auto [seconds, k] : rows)
      out += fmt::format("{:<28}{:>10}{:>12.4f}{:>7.1f}%\n",
                         kernels::kernelName(static_cast<uint16_t>(k)),
                         kernelCalls_[k], seconds,
                         total > 0 ? 100 * seconds / total : 0.0);
    out += fmt::format(
        "streams: compute busy {:.4f} s, loads {:.4f} s, stores {:.4f} s; of "
        "the copy streams' {:.4f} s, {:.1f}% overlapped compute\n",
        streamBusy_[0], streamBusy_[1], streamBusy_[2], copySeconds_,
        copySeconds_ > 0 ? 100 * overlapSeconds_ / copySeconds_ : 0.0);
  }
  out += "host-side launches per program run (kernel launches, copies and "
         "sets, graph launches; host-link copies):\n";
  for (const auto &[name, p] : programs_)
    for (const Runs *r : {&p.direct, &p.graph}) {
      if (r->runs == 0)
        continue;
      double runs = static_cast<double>(r->runs);
      bool graph = r == &p.graph;
      out += fmt::format(
          "  {:<24} {:>6} {} {}, {:>8.0f} launches, {:>6.0f} copies, {:.4f} "
          "s on the device each{}\n",
          name, r->runs, r->runs == 1 ? "run" : "runs",
          graph ? "replayed" : "directly",
          static_cast<double>(r->launches) / runs,
          static_cast<double>(r->copies) / runs, r->seconds / runs,
          graph ? fmt::format(" (a CUDA graph of {} nodes)", p.graphNodes)
                : std::string());
    }
  return out;
}

} // namespace ferry::cuda
