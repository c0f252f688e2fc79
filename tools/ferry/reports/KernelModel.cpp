// `ferry plan --model`: the per-kernel time model (KernelModel.h).
#include "tools/ferry/reports/KernelModel.h"

#include "runtime/ByteSize.h"
#include "runtime/backend/Backend.h"
#include "runtime/executable/KernelTable.h"
#include "runtime/executable/Validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace ferry {

namespace {

using kernels::Kernel;

// A kernel's least time on the GPU (launch, ramp-up, tail), whatever its
// size: a few microseconds on Hopper.
constexpr double kKernelFloorSeconds = 2e-6;

// Whether buffer b of the call is stored as bf16 (its bf16 mask).
bool halfAt(const fxe::Instr &in, size_t b) {
  return b < 64 && (in.bf16_buffers() >> b & 1) != 0;
}

// The bytes a call moves by what its kernel record says it reads and writes:
// each buffer's elements (2 bytes each where it is stored as bf16; its
// reference's bytes where the table leaves the count open, a workspace),
// once per read and once per write.
double movedBytes(Kernel k, const fxe::Instr &in,
                  const std::vector<int64_t> &ints) {
  size_t nb = in.buffers() ? in.buffers()->size() : 0;
  kernels::Resolved r = kernels::resolve(k, ints, nb);
  double bytes = 0;
  for (size_t b = 0; b < r.buffers.size() && b < nb; ++b) {
    const kernels::BufferUse &u = r.buffers[b];
    double width = halfAt(in, b) ? 2 : kernels::elementBytes(u.type);
    double size = u.elements > 0
                      ? static_cast<double>(u.elements) * width
                      : static_cast<double>(in.buffers()->Get(b)->bytes());
    bytes += size * ((u.reads ? 1 : 0) + (u.writes ? 1 : 0));
  }
  return bytes;
}

} // namespace

KernelCost kernelCost(const fxe::Instr &in,
                      const std::vector<int64_t> &registers) {
  KernelCost c;
  if (in.kernel() >= kernels::kKernelCount)
    return c;
  auto k = static_cast<Kernel>(in.kernel());
  std::vector<int64_t> ints;
  if (in.ints())
    for (const fxe::Affine *a : *in.ints())
      ints.push_back(evaluateAffine(a, registers));
  auto I = [&](size_t i) { return i < ints.size() ? ints[i] : int64_t(0); };
  switch (k) {
  case Kernel::PhaseBegin:
  case Kernel::PhaseEnd:
  case Kernel::Wait:
    return c;
  case Kernel::Load:
  case Kernel::Store:
    c.hostLink = true;
    c.bytes = static_cast<double>(I(0));
    return c;
  case Kernel::Gemm:
  case Kernel::GemmEpilogue: {
    // [batch, m, n, k, trans_a, trans_b, stride_a, stride_b, stride_c,
    //  accumulate, precision, epilogue]
    double batch = I(0), m = I(1), n = I(2), kk = I(3);
    double a = (I(6) == 0 ? 1 : batch) * m * kk;
    double b = (I(7) == 0 ? 1 : batch) * kk * n;
    double out = batch * m * n * (I(9) ? 2 : 1);
    c.flops = 2 * batch * m * n * kk;
    c.tensorCores = I(10) != 0;
    // 16-bit products: an fp32 input is read and written rounded (2 bytes),
    // then the GEMM reads the 2-byte copy; a bf16-stored one is read where
    // it is. A bf16-stored result (runtime/cuda/GemmInstr.cpp) is written
    // by the library without an epilogue; with one it goes through the
    // workspace in fp32, then is read and written rounded (and, when
    // accumulating, its old values are expanded into the workspace first).
    auto input = [&](size_t buffer) {
      return halfAt(in, buffer) ? 2.0 : c.tensorCores ? 4.0 + 2 + 2 : 4.0;
    };
    c.bytes = input(0) * a + input(1) * b;
    double result = batch * m * n;
    if (!halfAt(in, 2))
      c.bytes += 4 * out;
    else if (k == Kernel::Gemm)
      c.bytes += 2 * out;
    else
      c.bytes += result * (4 + 4 + 2) + (I(9) ? result * (2 + 4 + 4) : 0);
    // The bias gradient of an fp32 A with 16-bit products is its own pass
    // over A; of a bf16-stored A, cuBLASLt's epilogue.
    if (k == Kernel::GemmEpilogue)
      c.bytes +=
          4 * (I(11) == 1 ? n : m + (c.tensorCores && !halfAt(in, 0) ? a : 0));
    return c;
  }
  case Kernel::Attention:
  case Kernel::AttentionGrad: {
    // Forward: q kᵀ and p v; backward (AttentionKernels.cu): q kᵀ and
    // dout vᵀ twice (the dk/dv and the dq kernels), pdᵀ dout, dsᵀ q, ds k.
    double bhs = static_cast<double>(I(0)) * I(1) * I(2);
    double products = k == Kernel::Attention ? 2 : 7;
    c.flops = products * 2 * bhs * static_cast<double>(I(2)) * I(3);
    c.tensorCores = I(8) == 1;
    c.bytes = movedBytes(k, in, ints);
    return c;
  }
  case Kernel::AllReduce: {
    // [count, replicas, group, reduction]: a ring all-reduce sends 2(n-1)/n
    // of the buffer from each rank (a reduce-scatter, then an all-gather).
    double n = std::max<int64_t>(1, I(1));
    c.sentBytes =
        2 * (n - 1) / n * static_cast<double>(I(0)) * (halfAt(in, 0) ? 2 : 4);
    c.group = I(2), c.groupRanks = I(1);
    return c;
  }
  case Kernel::ReduceScatter:
  case Kernel::AllGather: {
    // [count, shard, replicas, group]: each rank sends the n - 1 shards
    // that are not its own (reduce-scatter) or its own n - 1 times.
    double n = std::max<int64_t>(1, I(2));
    c.sentBytes = (n - 1) * static_cast<double>(I(1)) * (halfAt(in, 0) ? 2 : 4);
    c.group = I(3), c.groupRanks = I(2);
    return c;
  }
  default:
    c.bytes = movedBytes(k, in, ints);
    return c;
  }
}

double modelledSeconds(const KernelCost &cost, const DeviceTarget &chip) {
  if (cost.hostLink || (cost.flops == 0 && cost.bytes == 0))
    return 0;
  double rate = cost.tensorCores ? chip.tensorFlops : chip.fp32Flops;
  return std::max(cost.flops / rate, cost.bytes / chip.memoryBytesPerSecond) +
         kKernelFloorSeconds;
}

double LinkModel::bytesPerSecond(int64_t group) const {
  return group == 1 || ranks <= gpusPerNode ? nvlinkBytesPerSecond
                                            : networkBytesPerSecond;
}

const char *LinkModel::linkName(int64_t group) const {
  return group == 1 || ranks <= gpusPerNode ? "NVLink" : "the network";
}

double collectiveSeconds(const KernelCost &cost, const LinkModel &links) {
  if (cost.groupRanks <= 1)
    return 0;
  return cost.sentBytes / links.bytesPerSecond(cost.group) +
         kKernelFloorSeconds;
}

namespace {

struct Walker {
  const fxe::Program &program;
  const std::vector<DeviceTarget> &chips;
  const LinkModel &links;
  ProgramModel model;
  std::map<std::string, KernelClass> classes;
  std::map<std::string, CollectiveClass> collectives;
  std::map<std::string, size_t> phaseIndex;
  std::vector<int64_t> registers;
  int currentPhase = -1;

  void visit(const fxe::Instr &in) {
    auto k = static_cast<Kernel>(in.kernel());
    if (k == Kernel::PhaseBegin) {
      const auto *names = program.phase_names();
      int64_t id = in.ints() && in.ints()->size() > 0
                       ? evaluateAffine(in.ints()->Get(0), registers)
                       : -1;
      std::string name = names && id >= 0 && id < names->size()
                             ? names->Get(id)->str()
                             : "phase";
      auto [it, added] = phaseIndex.emplace(name, model.phases.size());
      if (added)
        model.phases.push_back(
            PhaseModel{name, std::vector<double>(chips.size(), 0)});
      currentPhase = static_cast<int>(it->second);
      return;
    }
    if (k == Kernel::PhaseEnd) {
      currentPhase = -1;
      return;
    }
    KernelCost cost = kernelCost(in, registers);
    if (cost.group >= 0) {
      std::string name =
          fmt::format("{} over {}", kernels::kernelName(in.kernel()),
                      cost.group == 1 ? "tensor" : "data");
      CollectiveClass &row = collectives[name];
      row.name = name;
      row.calls += 1;
      row.sentBytes += cost.sentBytes;
      double seconds = collectiveSeconds(cost, links);
      row.seconds += seconds;
      model.collectiveSeconds += seconds;
      return;
    }
    std::vector<double> s;
    for (const DeviceTarget &chip : chips)
      s.push_back(modelledSeconds(cost, chip));
    if (std::all_of(s.begin(), s.end(), [](double v) { return v == 0; }))
      return;
    KernelClass &row = classes[kernels::kernelName(in.kernel())];
    row.kernel = kernels::kernelName(in.kernel());
    row.seconds.resize(chips.size(), 0);
    row.calls += 1;
    row.flops += cost.flops;
    row.bytes += cost.bytes;
    for (size_t c = 0; c < chips.size(); ++c) {
      row.seconds[c] += s[c];
      model.seconds[c] += s[c];
      if (currentPhase >= 0)
        model.phases[currentPhase].seconds[c] += s[c];
    }
    model.flops += cost.flops;
    model.calls += 1;
  }
};

} // namespace

ProgramModel modelProgram(const fxe::Executable &exe,
                          const std::string &program,
                          const std::vector<DeviceTarget> &chips,
                          const LinkModel &links) {
  for (const fxe::Program *p : *exe.programs()) {
    if (p->name()->str() != program || !p->instrs())
      continue;
    Walker w{*p, chips, links, {},
             {}, {},    {},    std::vector<int64_t>(p->registers(), 0)};
    w.model.seconds.assign(chips.size(), 0);
    replayInstrs(*p->instrs(), 0, p->instrs()->size(), w.registers,
                 [&](const fxe::Instr &in, const std::vector<int64_t> &) {
                   w.visit(in);
                 });
    for (auto &[name, row] : w.classes)
      w.model.kernels.push_back(row);
    std::sort(w.model.kernels.begin(), w.model.kernels.end(),
              [](const KernelClass &a, const KernelClass &b) {
                return a.seconds[0] > b.seconds[0];
              });
    for (auto &[name, row] : w.collectives)
      w.model.collectives.push_back(row);
    std::sort(w.model.collectives.begin(), w.model.collectives.end(),
              [](const CollectiveClass &a, const CollectiveClass &b) {
                return a.seconds > b.seconds;
              });
    return w.model;
  }
  return {};
}

std::string modelReport(const fxe::Executable &exe, const std::string &program,
                        int64_t samples, const std::vector<DeviceTarget> &chips,
                        const LinkModel &links) {
  ProgramModel m = modelProgram(exe, program, chips, links);
  if (m.calls == 0)
    return fmt::format("  no kernels in program {}\n", program);
  std::string out = fmt::format(
      "modelled kernel time per run of {} on one GPU (a model, not a "
      "measurement: each kernel call takes max(FLOPs / rate, bytes / memory "
      "bandwidth) + 2 us; rates below):\n",
      program);
  out += fmt::format("  {:<28} {:>8} {:>10} {:>10}", "kernel", "calls", "GFLOP",
                     "GB moved");
  for (const DeviceTarget &chip : chips)
    out += fmt::format(" {:>9}", chip.name + " ms");
  out += fmt::format(" {:>6}\n", "share");
  for (const KernelClass &k : m.kernels) {
    out += fmt::format("  {:<28} {:>8} {:>10.1f} {:>10.2f}", k.kernel, k.calls,
                       k.flops / 1e9, k.bytes / 1e9);
    for (double s : k.seconds)
      out += fmt::format(" {:>9.3f}", s * 1e3);
    out += fmt::format(" {:>5.1f}%\n", 100 * k.seconds[0] / m.seconds[0]);
  }
  out += fmt::format("  {:<28} {:>8} {:>10.1f} {:>10}", "total", m.calls,
                     m.flops / 1e9, "");
  for (double s : m.seconds)
    out += fmt::format(" {:>9.3f}", s * 1e3);
  out += "\n";
  if (!m.phases.empty()) {
    out += "  per phase, over all its runs (compute only; the phase table "
           "above has the host link):\n";
    for (const PhaseModel &p : m.phases) {
      std::string times;
      for (size_t c = 0; c < chips.size(); ++c)
        times += fmt::format("{}{} {:>9.3f} ms", c ? ", " : "", chips[c].name,
                             p.seconds[c] * 1e3);
      out += fmt::format("    {:<26} {}\n", p.phase, times);
    }
  }
  if (!m.collectives.empty()) {
    out += fmt::format(
        "  collectives per run (ring: an all-reduce sends 2(n-1)/n of its "
        "buffer from each rank, a reduce-scatter or all-gather (n-1)/n; the "
        "tensor group over NVLink at {:.0f} GB/s, the data group over {} at "
        "{:.0f} GB/s ({} ranks, {} GPUs a node); not overlapped with "
        "compute):\n",
        links.nvlinkBytesPerSecond / 1e9, links.linkName(0),
        links.bytesPerSecond(0) / 1e9, links.ranks, links.gpusPerNode);
    for (const CollectiveClass &k : m.collectives)
      out += fmt::format(
          "    {:<26} {:>6} calls {:>12} sent {:>9.3f} ms\n", k.name, k.calls,
          formatByteSize(static_cast<uint64_t>(k.sentBytes)), k.seconds * 1e3);
    out += fmt::format("    {:<26} {:>9.3f} ms\n", "total",
                       m.collectiveSeconds * 1e3);
  }
  for (size_t c = 0; c < chips.size(); ++c) {
    const DeviceTarget &chip = chips[c];
    double seconds = m.seconds[c] + m.collectiveSeconds;
    double achieved = m.flops / seconds;
    out += fmt::format(
        "  {}: {:.0f} samples/s modelled ({} samples in {:.3f} ms{}), {:.0f}% "
        "of the stated {:.0f} TFLOP/s bf16, {:.0f}% of a practical {:.0f}; "
        "rates: bf16 {:.0f} TFLOP/s, fp32 {:.0f}, memory {:.2f} TB/s "
        "({:.2f} stated)\n",
        chip.name, samples / seconds, samples, seconds * 1e3,
        m.collectiveSeconds > 0
            ? fmt::format(": {:.3f} compute + {:.3f} collectives",
                          m.seconds[c] * 1e3, m.collectiveSeconds * 1e3)
            : std::string(),
        100 * achieved / chip.tensorFlopsStated, chip.tensorFlopsStated / 1e12,
        100 * achieved / chip.tensorFlops, chip.tensorFlops / 1e12,
        chip.tensorFlops / 1e12, chip.fp32Flops / 1e12,
        chip.memoryBytesPerSecond / 1e12,
        chip.memoryBytesPerSecondStated / 1e12);
  }
  return out;
}

} // namespace ferry
