// Replays rt programs on the CPU: resolves each instruction's affine addresses
// and parameters against the registers and calls the kernel (CpuKernels.h).
#include "runtime/cpu/CpuBackend.h"
#include "runtime/ByteSize.h"

#include "runtime/backend/Collectives.h"
#include "runtime/comm/Communicator.h"
#include "runtime/cpu/Bf16Staging.h"
#include "runtime/cpu/CpuKernelContext.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/executable/KernelTable.h"
#include "runtime/executable/Validate.h"
#include "runtime/random/Philox.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

using namespace ferry;

namespace {

using kernels::Kernel;
using kernels::kernelName;

// An instruction's operands as the generated decoding (KernelArgs.h) reads
// them: its integers evaluated, its buffers' addresses (those stored as bf16
// staged as fp32, so none reads as bf16 here).
struct CpuCall {
  const fxe::Instr &in;
  const std::vector<int64_t> &ints;
  char *const *buf;
  size_t nb;

  int64_t integer(size_t k) const { return k < ints.size() ? ints[k] : 0; }
  kernels::StepInt stepInteger(size_t k) const {
    return {integer(k), static_cast<uint32_t>(k)};
  }
  kernels::IntList integers(size_t first) const {
    first = std::min(first, ints.size());
    return {ints.data() + first, ints.size() - first};
  }
  size_t integerCount() const { return ints.size(); }
  double real(size_t k) const {
    return in.floats() && k < in.floats()->size() ? in.floats()->Get(k) : 0.0;
  }
  char *buffer(size_t b) const { return b < nb ? buf[b] : nullptr; }
  char *const *buffers() const { return buf; }
  size_t bufferCount() const { return nb; }
  bool bf16(size_t) const { return false; }
  int64_t bufferBytes(size_t b) const {
    return b < nb ? in.buffers()->Get(b)->bytes() : 0;
  }
};

int64_t evaluate(const fxe::Affine *a, const std::vector<int64_t> &registers) {
  return evaluateAffine(a, registers);
}

// Physical memory of this machine in bytes (0 when unknown).
uint64_t physicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0
             ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size)
             : 0;
}

} // namespace

CpuBackend::CpuBackend(const fxe::Executable &executable,
                       std::optional<uint64_t> limitBytes,
                       comm::Communicator *group)
    : Backend(executable, group) {
  validateExecutable(executable, limitBytes);
  arenaBytes_ = static_cast<uint64_t>(exe_.arena_bytes());
  hostBytes_ = static_cast<uint64_t>(exe_.host_bytes());
  // The arena and the remote buffers both live in this machine's memory.
  // The compiler never took its own machine for the target, so a plan too
  // large for this one is refused here, before anything is allocated.
  uint64_t needed = arenaBytes_ + hostBytes_;
  if (uint64_t machine = physicalMemoryBytes(); machine > 0 && needed > machine)
    throw RuntimeError(fmt::format(
        "the plan needs {} of memory ({} bytes: the arena {}{}) but this "
        "machine has {}; reduce the model or execution.micro_batch_size, set "
        "execution.recompute: layer, or run on a machine with more memory",
        formatByteSize(needed), needed, formatByteSize(arenaBytes_),
        hostBytes_ ? " and remote buffers " + formatByteSize(hostBytes_)
                   : std::string(),
        formatByteSize(machine)));
  size_t bytes = (arenaBytes_ + 63) / 64 * 64;
  arena_ = static_cast<char *>(std::aligned_alloc(64, bytes ? bytes : 64));
  if (!arena_)
    throw RuntimeError(fmt::format("cannot allocate the {} arena",
                                   formatByteSize(arenaBytes_)));
  std::memset(arena_, 0, bytes);
  if (hostBytes_ > 0) {
    size_t hbytes = (hostBytes_ + 63) / 64 * 64;
    host_ = static_cast<char *>(std::aligned_alloc(64, hbytes));
    if (!host_)
      throw RuntimeError(fmt::format(
          "cannot allocate {} of host memory for the remote buffers",
          formatByteSize(hostBytes_)));
    std::memset(host_, 0, hbytes);
  }
}

CpuBackend::~CpuBackend() {
  std::free(arena_);
  std::free(host_);
}

void CpuBackend::read(const fxe::State *s, int64_t offset, void *dst,
                      int64_t bytes) {
  if (offset < 0 || bytes < 0 || offset + bytes > s->bytes())
    throw RuntimeError("read outside state " + s->name()->str());
  std::memcpy(dst, data(s) + offset, static_cast<size_t>(bytes));
}

void CpuBackend::write(const fxe::State *s, int64_t offset, const void *src,
                       int64_t bytes) {
  if (offset < 0 || bytes < 0 || offset + bytes > s->bytes())
    throw RuntimeError("write outside state " + s->name()->str());
  std::memcpy(data(s) + offset, src, static_cast<size_t>(bytes));
}

void CpuBackend::initialiseStates(uint64_t seed) {
  for (const fxe::State *s : *exe_.states())
    initialStateValues(s, seed, data(s), group_->rank(), tensorRank());
}

void CpuBackend::run(const std::string &name,
                     const std::vector<int64_t> &inputs) {
  std::vector<int64_t> registers;
  const fxe::Program &p = program(name, inputs, registers);
  current_ = &p;
  runInstrs(*p.instrs(), 0, p.instrs()->size(), registers);
  // Stores still queued finish before the caller reads any state.
  for (auto [event, ticket] : eventTickets_)
    copies_.waitFor(ticket);
}

void CpuBackend::runInstrs(
    const flatbuffers::Vector<flatbuffers::Offset<fxe::Instr>> &v, size_t begin,
    size_t end, std::vector<int64_t> &registers) {
  replayInstrs(v, begin, end, registers,
               [&](const fxe::Instr &in, const std::vector<int64_t> &regs) {
                 if (!profiling_) {
                   execute(in, regs);
                   return;
                 }
                 auto start = std::chrono::steady_clock::now();
                 execute(in, regs);
                 kernelSeconds_.resize(static_cast<size_t>(Kernel::Count), 0.0);
                 kernelCalls_.resize(static_cast<size_t>(Kernel::Count), 0);
                 kernelSeconds_[in.kernel()] +=
                     std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
                 ++kernelCalls_[in.kernel()];
               });
}

std::string CpuBackend::profileReport() const {
  std::vector<std::pair<double, size_t>> rows;
  double total = 0;
  for (size_t k = 0; k < kernelSeconds_.size(); ++k) {
    if (kernelCalls_[k] == 0)
      continue;
    rows.push_back({kernelSeconds_[k], k});
    total += kernelSeconds_[k];
  }
  std::sort(rows.rbegin(), rows.rend());
  std::string out = fmt::format("{:<28}{:>10}{:>12}{:>8}\n", "kernel", "calls",
                                "seconds", "share");
  for (auto [seconds, k] : rows)
    out += fmt::format("{:<28}{:>10}{:>12.4f}{:>7.1f}%\n",
                       kernelName(static_cast<uint16_t>(k)), kernelCalls_[k],
                       seconds, total > 0 ? 100 * seconds / total : 0.0);
  if (phaseTimes_.empty())
    return out;
  // Phases: measured beside planned. The plan's time model is its matmul
  // FLOPs at the matmul rate this run measured plus its host-link bytes at
  // the copy rate this run measured, so a phase far above its plan spends
  // its time elsewhere (element-wise kernels, waiting on copies).
  double planFlops = 0;
  for (const fxe::Program *p : *exe_.programs())
    if (p->phases())
      for (const fxe::Phase *ph : *p->phases()) {
        auto it = phaseTimes_.find(p->name()->str() + "/" + ph->name()->str());
        if (it != phaseTimes_.end() && ph->executions() > 0)
          planFlops += ph->flops() * static_cast<double>(it->second.calls) /
                       static_cast<double>(ph->executions());
      }
  double gemmSeconds = 0;
  for (Kernel k : {Kernel::Gemm, Kernel::GemmEpilogue})
    if (static_cast<size_t>(k) < kernelSeconds_.size())
      gemmSeconds += kernelSeconds_[static_cast<size_t>(k)];
  double flopRate = gemmSeconds > 0 ? planFlops / gemmSeconds : 0;
  double busy = const_cast<CopyQueue &>(copies_).busySeconds();
  double copyRate = busy > 0 ? static_cast<double>(hostLinkBytes_) / busy : 0;
  out += fmt::format(
      "\nphases (planned: matmul FLOPs at {:.1f} GFLOP/s and host-link bytes "
      "at {:.2f} GB/s, both measured in this run)\n",
      flopRate / 1e9, copyRate / 1e9);
  out += fmt::format("{:<32}{:>8}{:>14}{:>14}\n", "phase", "runs",
                     "measured ms", "planned ms");
  for (const fxe::Program *p : *exe_.programs()) {
    if (!p->phases())
      continue;
    for (const fxe::Phase *ph : *p->phases()) {
      std::string key = p->name()->str() + "/" + ph->name()->str();
      auto it = phaseTimes_.find(key);
      if (it == phaseTimes_.end() || ph->executions() <= 0)
        continue;
      double runs = static_cast<double>(ph->executions());
      double planned =
          (flopRate > 0 ? ph->flops() / runs / flopRate : 0) +
          (copyRate > 0
               ? static_cast<double>(ph->bytes_in() + ph->bytes_out()) / runs /
                     copyRate
               : 0);
      out += fmt::format(
          "{:<32}{:>8}{:>14.3f}{:>14.3f}\n", key, it->second.calls,
          1e3 * it->second.seconds / static_cast<double>(it->second.calls),
          1e3 * planned);
    }
  }
  return out;
}

// Index inputs must lie in [0, limit): positions within the sequence,
// labels within the classes. Bad data is an error naming the field.
// Phased execution's instructions: copies over the "host link", waits on
// them, and phase markers (timed while profiling).
void CpuBackend::transfer(const fxe::Instr &in,
                          const std::vector<int64_t> &registers) {
  std::vector<int64_t> &ints = ints_;
  ints.resize(in.ints()->size());
  for (size_t k = 0; k < ints.size(); ++k)
    ints[k] = evaluate(in.ints()->Get(k), registers);
  // The integers, decoded; the addresses are resolved below, against host
  // memory or the arena.
  const CpuCall call{in, ints, nullptr, 0};
  switch (static_cast<Kernel>(in.kernel())) {
  case Kernel::Wait:
    if (auto it = eventTickets_.find(kernels::decodeWait(call).event);
        it != eventTickets_.end())
      copies_.waitFor(it->second);
    return;
  case Kernel::PhaseBegin:
    if (profiling_)
      phaseStart_ = std::chrono::steady_clock::now();
    return;
  case Kernel::PhaseEnd: {
    if (!profiling_)
      return;
    auto now = std::chrono::steady_clock::now();
    int64_t id = kernels::decodePhaseEnd(call).phase;
    const auto *names = current_ ? current_->phase_names() : nullptr;
    std::string name = names && id >= 0 && id < names->size()
                           ? names->Get(id)->str()
                           : "phase " + std::to_string(id);
    PhaseTime &t = phaseTimes_[current_->name()->str() + "/" + name];
    ++t.calls;
    t.seconds += std::chrono::duration<double>(now - phaseStart_).count();
    return;
  }
  case Kernel::Load: {
    // A prefetch of the next iteration carries a guard: issued only while
    // guard < limit (the next layer exists).
    kernels::LoadArgs a = kernels::decodeLoad(call);
    if (a.has_limit && a.guard >= a.limit)
      return;
    copy(in, registers, true, a.bytes, a.event); // [src host, dst device]
    return;
  }
  case Kernel::Store: {
    kernels::StoreArgs a = kernels::decodeStore(call);
    copy(in, registers, false, a.bytes, a.event); // [src device, dst host]
    return;
  }
  default:
    throw RuntimeError(
        fmt::format("kernel {} is no transfer", kernelName(in.kernel())));
  }
}

void CpuBackend::copy(const fxe::Instr &in,
                      const std::vector<int64_t> &registers, bool load,
                      int64_t bytes, int64_t event) {
  const fxe::Ref *hostRef = in.buffers()->Get(load ? 0 : 1);
  const fxe::Ref *deviceRef = in.buffers()->Get(load ? 1 : 0);
  int64_t h = evaluate(hostRef->offset(), registers);
  int64_t d = evaluate(deviceRef->offset(), registers);
  if (bytes < 0 || bytes > hostRef->bytes() || bytes > deviceRef->bytes() ||
      h < 0 || static_cast<uint64_t>(h + hostRef->bytes()) > hostBytes_ ||
      d < 0 || static_cast<uint64_t>(d + deviceRef->bytes()) > arenaBytes_)
    throw RuntimeError(fmt::format(
        "{} of {} bytes between host [{}, +{}) and device [{}, +{}) is "
        "outside the {}-byte host memory or the {}-byte arena; the "
        "executable is damaged: recompile it",
        kernelName(in.kernel()), bytes, h, hostRef->bytes(), d,
        deviceRef->bytes(), hostBytes_, arenaBytes_));
  peakBytes_ = std::max<uint64_t>(peakBytes_, d + deviceRef->bytes());
  hostLinkBytes_ += static_cast<uint64_t>(bytes);
  char *hostPtr = host_ + h, *devicePtr = arena_ + d;
  eventTickets_[event] = load ? copies_.issue(devicePtr, hostPtr, bytes)
                              : copies_.issue(hostPtr, devicePtr, bytes);
}

void CpuBackend::execute(const fxe::Instr &in,
                         const std::vector<int64_t> &registers) {
  if (kernels::backendOwned(static_cast<Kernel>(in.kernel()))) {
    transfer(in, registers);
    return;
  }
  // Addresses, checked against the arena.
  char *buf[64];
  size_t nb = in.buffers()->size();
  if (nb > 64)
    throw RuntimeError("instruction with more than 64 buffers");
  for (size_t b = 0; b < nb; ++b) {
    const fxe::Ref *r = in.buffers()->Get(b);
    int64_t offset = evaluate(r->offset(), registers);
    if (offset < 0 || r->bytes() < 0 ||
        static_cast<uint64_t>(offset + r->bytes()) > arenaBytes_)
      throw RuntimeError(fmt::format(
          "kernel {} addresses bytes [{}, {}) outside the {}-byte arena",
          kernelName(in.kernel()), offset, offset + r->bytes(), arenaBytes_));
    peakBytes_ = std::max<uint64_t>(peakBytes_, offset + r->bytes());
    buf[b] = arena_ + offset;
  }
  auto I = [&](size_t k) { return evaluate(in.ints()->Get(k), registers); };
  checkKernelCall(in, registers);
  // Buffers stored as bf16: the kernel runs on fp32 copies (Bf16Staging.h).
  struct Finish {
    cpu::Bf16Staging *staging;
    ~Finish() {
      if (staging)
        staging->finish();
    }
  } finish{nullptr};
  // The integers, evaluated once into a buffer kept across instructions.
  std::vector<int64_t> &ints = ints_;
  ints.resize(in.ints()->size());
  for (size_t k = 0; k < ints.size(); ++k)
    ints[k] = I(k);
  if (in.bf16_buffers() != 0) {
    bf16_.stage(
        in, kernels::resolve(static_cast<Kernel>(in.kernel()), ints, nb), buf);
    finish.staging = &bf16_;
  }
  // Its typed body (CpuKernelContext.h), in the file of its op family.
  const Collectives collectives(*group_, tensor_, collectiveBytes_,
                                current_->name()->c_str());
  cpu::KernelContext context{&collectives};
  if (!kernels::dispatchKernel(context, static_cast<Kernel>(in.kernel()),
                               CpuCall{in, ints, buf, nb}))
    throw RuntimeError(
        fmt::format("kernel {} has no CPU body", kernelName(in.kernel())));
}
