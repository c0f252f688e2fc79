// Replays rt programs on the CPU: resolves each instruction's affine addresses
// and parameters against the registers and calls the kernel (CpuKernels.h).
#include "runtime/cpu/CpuBackend.h"
#include "runtime/ByteSize.h"

#include "runtime/comm/Communicator.h"
#include "runtime/cpu/Bf16Staging.h"
#include "runtime/cpu/CpuKernelContext.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/executable/DropoutKeysOf.h"
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
  const std::vector<int64_t> &ints;
  const flatbuffers::Vector<double> *floats;
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
    return floats && k < floats->size() ? floats->Get(k) : 0.0;
  }
  char *buffer(size_t b) const { return b < nb ? buf[b] : nullptr; }
  char *const *buffers() const { return buf; }
  size_t bufferCount() const { return nb; }
  bool bf16(size_t) const { return false; }
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
    initialStateValues(s, seed, data(s), group_->rank());
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
void CpuBackend::checkIndices(const char *what, const int32_t *values,
                              int64_t count, int64_t limit) {
  for (int64_t i = 0; i < count; ++i)
    if (values[i] < 0 || values[i] >= limit)
      throw RuntimeError(fmt::format(
          "{} {} at slot {} is outside [0, {}); the input data does not match "
          "the model (sequence length, vocabulary or classes)",
          what, values[i], i, limit));
}

// Phased execution's instructions: copies over the "host link", waits on
// them, and phase markers (timed while profiling).
void CpuBackend::transfer(const fxe::Instr &in,
                          const std::vector<int64_t> &registers) {
  auto kernel = static_cast<Kernel>(in.kernel());
  int64_t id = evaluate(in.ints()->Get(kernel == Kernel::Wait ||
                                               kernel == Kernel::PhaseBegin ||
                                               kernel == Kernel::PhaseEnd
                                           ? 0
                                           : 1),
                        registers);
  if (kernel == Kernel::Wait) {
    if (auto it = eventTickets_.find(id); it != eventTickets_.end())
      copies_.waitFor(it->second);
    return;
  }
  if (kernel == Kernel::PhaseBegin || kernel == Kernel::PhaseEnd) {
    if (!profiling_)
      return;
    auto now = std::chrono::steady_clock::now();
    if (kernel == Kernel::PhaseBegin) {
      phaseStart_ = now;
      return;
    }
    const auto *names = current_ ? current_->phase_names() : nullptr;
    std::string name = names && id >= 0 && id < names->size()
                           ? names->Get(id)->str()
                           : "phase " + std::to_string(id);
    PhaseTime &t = phaseTimes_[current_->name()->str() + "/" + name];
    ++t.calls;
    t.seconds += std::chrono::duration<double>(now - phaseStart_).count();
    return;
  }
  // A prefetch of the next iteration carries a guard: issued only while
  // ints[2] < ints[3] (the next layer exists).
  if (in.ints()->size() >= 4 && evaluate(in.ints()->Get(2), registers) >=
                                    evaluate(in.ints()->Get(3), registers))
    return;
  bool load = kernel == Kernel::Load;
  const fxe::Ref *hostRef = in.buffers()->Get(load ? 0 : 1);
  const fxe::Ref *deviceRef = in.buffers()->Get(load ? 1 : 0);
  int64_t h = evaluate(hostRef->offset(), registers);
  int64_t d = evaluate(deviceRef->offset(), registers);
  int64_t bytes = evaluate(in.ints()->Get(0), registers);
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
  eventTickets_[id] = load ? copies_.issue(devicePtr, hostPtr, bytes)
                           : copies_.issue(hostPtr, devicePtr, bytes);
}

void CpuBackend::execute(const fxe::Instr &in,
                         const std::vector<int64_t> &registers) {
  switch (static_cast<Kernel>(in.kernel())) {
  case Kernel::Load:
  case Kernel::Store:
  case Kernel::Wait:
  case Kernel::PhaseBegin:
  case Kernel::PhaseEnd:
    transfer(in, registers);
    return;
  default:
    break;
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
  auto F = [&](size_t k) { return in.floats()->Get(k); };
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
  // The kernels whose records say `dispatched` run their typed bodies
  // (CpuKernelContext.h); the others, the switch below.
  cpu::KernelContext context;
  if (kernels::dispatchKernel(context, static_cast<Kernel>(in.kernel()),
                              CpuCall{ints, in.floats(), buf, nb}))
    return;
  auto f = [&](size_t b) { return reinterpret_cast<float *>(buf[b]); };
  auto i32 = [&](size_t b) { return reinterpret_cast<int32_t *>(buf[b]); };
  // Packed rows' dropout keys, for the kernels that drop out.
  const PackedDropoutKeys keys = dropoutKeysOf(static_cast<Kernel>(in.kernel()),
                                               I, in.ints()->size(), nb, i32);

  switch (static_cast<Kernel>(in.kernel())) {
  case Kernel::AllReduce: {
    beginCollective(in, I(0), 0, I(1), std::vector<char *>(buf, buf + nb));
    group_->allReduceSum(f(0), f(1), I(0),
                         describeCollective(in, I(0), current_->name()->str()));
    break;
  }
  case Kernel::ReduceScatter: {
    int64_t count = I(0), shard = I(1), replicas = I(2);
    beginCollective(in, count, shard, replicas,
                    std::vector<char *>(buf, buf + nb));
    const float *whole = f(0);
    if (count < shard * replicas) { // pad with zeros in the workspace
      std::memcpy(f(2), f(0), static_cast<size_t>(count) * 4);
      std::fill(f(2) + count, f(2) + shard * replicas, 0.0f);
      whole = f(2);
    }
    group_->reduceScatterSum(
        whole, f(1), shard,
        describeCollective(in, count, current_->name()->str()));
    break;
  }
  case Kernel::AllGather: {
    int64_t count = I(0), shard = I(1), replicas = I(2);
    beginCollective(in, count, shard, replicas,
                    std::vector<char *>(buf, buf + nb));
    bool padded = count < shard * replicas;
    group_->allGather(f(0), padded ? f(2) : f(1), shard * 4,
                      describeCollective(in, count, current_->name()->str()));
    if (padded)
      std::memcpy(f(1), f(2), static_cast<size_t>(count) * 4);
    break;
  }
  case Kernel::Gemm:
  case Kernel::GemmEpilogue: {
    const bool epilogue =
        static_cast<Kernel>(in.kernel()) == Kernel::GemmEpilogue;
    const size_t workspace = epilogue ? 4 : 3; // after the epilogue's vector
    const float *a = f(0), *b = f(1);
    if (in.ints()->size() > 10 && I(10) != 0 && nb > workspace) {
      // bf16 / fp16 inputs (training.precision): rounded copies in the
      // workspace, fp32 accumulation.
      int64_t extentA = (I(0) - 1) * I(6) + I(1) * I(3);
      int64_t extentB = (I(0) - 1) * I(7) + I(3) * I(2);
      if ((extentA + extentB) * 4 > in.buffers()->Get(workspace)->bytes())
        throw RuntimeError("gemm: the bf16 workspace is too small; the "
                           "executable is damaged: recompile it");
      auto round = I(10) == 2 ? cpu::roundToFp16 : cpu::roundToBf16;
      round(a, f(workspace), extentA);
      round(b, f(workspace) + extentA, extentB);
      a = f(workspace);
      b = f(workspace) + extentA;
    }
    cpu::gemm(I(0), I(1), I(2), I(3), I(4) != 0, I(5) != 0,
              static_cast<float>(F(0)), a, I(6), b, I(7), I(9) ? 1.0f : 0.0f,
              f(2), I(8));
    // The epilogues, as the bias_add and reduce kernels they replace compute
    // them (fusion leaves the CPU's results unchanged to the bit).
    if (epilogue && I(11) == 1)
      cpu::biasAdd(f(2), f(3), f(2), I(0) * I(1), I(2));
    else if (epilogue && I(11) == 2) // A is [k, m]: sum its k rows
      cpu::reduce(cpu::Reduce::Sum, f(0), f(3), 1, I(3), I(1));
    break;
  }
  case Kernel::Embedding: {
    int64_t rows = I(0), vocab = I(2);
    const int32_t *ids = i32(1);
    for (int64_t r = 0; r < rows; ++r)
      if (ids[r] < 0 || ids[r] >= vocab)
        throw RuntimeError(fmt::format(
            "embedding id {} at row {} is outside the table's {} rows; the "
            "input data does not match the model's vocabulary",
            ids[r], r, vocab));
    cpu::embedding(f(0), ids, f(2), rows, I(1));
    break;
  }
  case Kernel::EmbeddingGrad:
    cpu::embeddingGrad(i32(0), f(1), f(2), I(0), I(1), I(2),
                       in.ints()->size() > 3 && I(3) != 0);
    break;
  case Kernel::GatherPositions:
    checkIndices("masked_lm_positions", i32(1), I(0) * I(2), I(1));
    cpu::gatherPositions(f(0), i32(1), f(2), I(0), I(1), I(2), I(3));
    break;
  case Kernel::GatherPositionsGrad:
    checkIndices("masked_lm_positions", i32(0), I(0) * I(2), I(1));
    cpu::gatherPositionsGrad(i32(0), f(1), f(2), I(0), I(1), I(2), I(3));
    break;
  case Kernel::Scale:
    cpu::scale(f(0), f(1), I(0), static_cast<float>(F(0)));
    break;
  case Kernel::LayerNorm:
    cpu::layerNorm(f(0), f(1), f(2), f(3), I(0), I(1),
                   static_cast<float>(F(0)));
    break;
  case Kernel::LayerNormGrad:
    cpu::layerNormGrad(f(0), f(1), f(2), f(3), f(4), f(5), I(0), I(1),
                       static_cast<float>(F(0)));
    break;
  case Kernel::Softmax: // [x, mask, out, (sequence_ids)]
    cpu::softmax(f(0), f(1), f(2), I(0), I(1), I(2),
                 in.buffers()->size() > 3 ? i32(3) : nullptr);
    break;
  case Kernel::SoftmaxGrad:
    cpu::softmaxGrad(f(0), f(1), f(2), I(0), I(1));
    break;
  case Kernel::Dropout:
    cpu::dropout(f(0), f(1), I(0), I(1), static_cast<uint64_t>(I(2)),
                 static_cast<uint32_t>(I(3)), static_cast<uint32_t>(I(4)),
                 static_cast<uint64_t>(I(5)), static_cast<float>(F(0)), keys);
    break;
  // The fused forms compute what the two kernels they replace compute.
  case Kernel::SoftmaxDropout: // [x, mask, probs, out, (sequence_ids, keys)]
    cpu::softmax(f(0), f(1), f(2), I(0), I(1), I(2),
                 in.buffers()->size() > 4 ? i32(4) : nullptr);
    cpu::dropout(f(2), f(3), I(3), I(4), static_cast<uint64_t>(I(5)),
                 static_cast<uint32_t>(I(6)), static_cast<uint32_t>(I(7)),
                 static_cast<uint64_t>(I(8)), static_cast<float>(F(0)), keys);
    break;
  case Kernel::ResidualLayerNorm: // dropout into sum, add, normalise
    cpu::dropout(f(0), f(4), I(2), I(3), static_cast<uint64_t>(I(4)),
                 static_cast<uint32_t>(I(5)), static_cast<uint32_t>(I(6)),
                 static_cast<uint64_t>(I(7)), static_cast<float>(F(1)), keys);
    cpu::binary(cpu::Binary::Add, f(4), f(1), f(4), I(2));
    cpu::layerNorm(f(4), f(2), f(3), f(5), I(0), I(1),
                   static_cast<float>(F(0)));
    break;
  case Kernel::DropoutSoftmaxGrad: // dropout(dy) into dx, then in place
    cpu::dropout(f(1), f(2), I(2), I(3), static_cast<uint64_t>(I(4)),
                 static_cast<uint32_t>(I(5)), static_cast<uint32_t>(I(6)),
                 static_cast<uint64_t>(I(7)), static_cast<float>(F(0)), keys);
    cpu::softmaxGrad(f(0), f(2), f(2), I(0), I(1));
    break;
  case Kernel::Attention: { // [q, k, v, mask, out, lse, (sequence_ids)]
    AttentionShape a = attentionShape(I, F, in.ints()->size());
    if (in.buffers()->size() > 6)
      a.sequenceIds = i32(6);
    a.dropoutKeys = keys;
    cpu::attention(f(0), f(1), f(2), f(3), f(4), f(5), a);
    break;
  }
  case Kernel::AttentionGrad: { // [q, k, v, mask, out, lse, dout, dq, dk, dv,
                                //  workspace, (sequence_ids)]
    AttentionShape a = attentionShape(I, F, in.ints()->size());
    if (in.buffers()->size() > 11)
      a.sequenceIds = i32(11);
    a.dropoutKeys = keys;
    cpu::attentionGrad(f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7), f(8),
                       f(9), a);
    break;
  }
  case Kernel::Reduce:
    cpu::reduce(static_cast<cpu::Reduce>(I(0)), f(0), f(1), I(1), I(2), I(3));
    break;
  case Kernel::SoftmaxCrossEntropy:
    checkIndices("label", i32(1), I(0), I(2));
    cpu::softmaxCrossEntropy(f(0), i32(1), f(2), f(3), I(0), I(1), I(2));
    break;
  case Kernel::SoftmaxCrossEntropyGrad:
    checkIndices("label", i32(1), I(0), I(2));
    cpu::softmaxCrossEntropyGrad(f(0), i32(1), f(2), f(3), f(4), I(0), I(1),
                                 I(2));
    break;
  case Kernel::ArgmaxCorrect:
    checkIndices("label", i32(1), I(0), I(2));
    cpu::argmaxCorrect(f(0), i32(1), f(2), f(3), I(0), I(1), I(2));
    break;
  case Kernel::GlobalNorm: {
    size_t count = nb - 1;
    if (in.ints()->size() != count)
      throw RuntimeError("global_norm: one count per tensor expected");
    std::vector<const float *> tensors(count);
    std::vector<int64_t> sizes(count);
    for (size_t t = 0; t < count; ++t) {
      tensors[t] = f(t);
      sizes[t] = I(t);
    }
    cpu::globalNorm(tensors.data(), sizes.data(), static_cast<int64_t>(count),
                    f(count));
    break;
  }
  case Kernel::LearningRate:
    f(0)[0] = cpu::learningRate(static_cast<int32_t>(I(0)), F(0), I(1), I(2),
                                F(1), I(3), I(4));
    break;
  case Kernel::OptimizerUpdate:
  case Kernel::LambMoments:
  case Kernel::LambApply: {
    // One parameter set for the whole update and LAMB's two halves; the
    // fp16 loss scale, when given, is buffer 6 of each.
    auto kernel = static_cast<Kernel>(in.kernel());
    cpu::AdamParams params;
    params.beta1 = static_cast<float>(F(0));
    params.beta2 = static_cast<float>(F(1));
    params.epsilon = static_cast<float>(F(2));
    params.weightDecay = static_cast<float>(F(3));
    params.applyWeightDecay = F(3) != 0.0;
    params.lamb = kernel != Kernel::OptimizerUpdate || I(3) != 0;
    params.step = I(2) + 1; // t counts updates from 1
    if (nb > 6) {
      params.invLossScale = 1.0f / f(6)[0];
      params.skipNonFinite = true;
    }
    if (kernel == Kernel::OptimizerUpdate) // [w, g, m, v, lr, norm]
      cpu::adamUpdate(f(0), f(1), f(2), f(3), I(0), I(1), f(4)[0], f(5)[0],
                      static_cast<float>(F(4)), params);
    else if (kernel == Kernel::LambMoments) // [w, g, m, v, norm, sums]
      cpu::lambMoments(f(0), f(1), f(2), f(3), I(0), I(1), f(4)[0],
                       static_cast<float>(F(4)), params, f(5));
    else // [w, m, v, lr, norm, sums]
      cpu::lambApply(f(0), f(1), f(2), I(0), I(1), f(3)[0], f(4)[0], params,
                     f(5));
    break;
  }
  case Kernel::Load:
  case Kernel::Store:
  case Kernel::Wait:
  case Kernel::PhaseBegin:
  case Kernel::PhaseEnd:
  case Kernel::Count:
    break;
  default: // a dispatched kernel reaches here only without its run()
    throw RuntimeError(
        fmt::format("kernel {} has no CPU body", kernelName(in.kernel())));
  }
}
