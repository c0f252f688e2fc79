// `ferry plan --model`: a per-kernel model of one program's time on the
// compile's target (execution.target), or on an H100 and an H200 without
// one, from the executable alone. Each kernel call takes
// max(FLOPs / arithmetic rate, bytes / memory bandwidth) plus a fixed
// per-kernel floor; FLOPs and bytes come from the call's parameters and the
// buffers its kernel record says it reads and writes. A model, not a
// measurement: it says where the time should go and what the floor is, and the
// report labels it so.
#pragma once

#include "runtime/executable/Executable_generated.h"
#include "training/config/DeviceTarget.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ferry {

// What one kernel call costs.
struct KernelCost {
  double flops = 0, bytes = 0;
  bool tensorCores = false; // bf16/fp16 products
  bool hostLink = false;    // load/store: the copy engines, not the SMs
  // A collective: the bytes each rank sends on a ring, its group (0 the
  // data-parallel replicas, 1 the tensor-parallel group) and size.
  double sentBytes = 0;
  int64_t group = -1, groupRanks = 0;
};

// The links the collectives cross (ferry plan --nvlink-bandwidth,
// --network-bandwidth, --gpus-per-node): a tensor-parallel group shares a
// node (the runtime checks it), so it crosses NVLink; the data-parallel
// group does too when every rank of the run fits one node, and the network
// otherwise. Bandwidths are what a ring achieves per GPU each way (NCCL's
// bus bandwidth), not the datasheet's.
struct LinkModel {
  double nvlinkBytesPerSecond = 360e9; // NVLink 4: 450 GB/s stated each way
  double networkBytesPerSecond = 45e9; // a 400 Gb/s NIC per GPU
  int64_t gpusPerNode = 8;
  int64_t ranks = 1; // T x D
  // The bandwidth a collective of `group` gets, and the link's name.
  double bytesPerSecond(int64_t group) const;
  const char *linkName(int64_t group) const;
};
// Seconds one collective call takes: its ring's bytes over its link, plus
// the kernel floor.
double collectiveSeconds(const KernelCost &cost, const LinkModel &links);
KernelCost kernelCost(const fxe::Instr &in,
                      const std::vector<int64_t> &registers);

// Seconds one call takes on `chip` (0 for host-link copies and markers).
double modelledSeconds(const KernelCost &cost, const DeviceTarget &chip);

struct KernelClass {
  std::string kernel;
  int64_t calls = 0;
  double flops = 0, bytes = 0;
  std::vector<double> seconds; // one per chip modelled
};
struct PhaseModel {
  std::string phase;
  std::vector<double> seconds;
};
// The collectives of one kind over one group ("all_reduce over tensor").
struct CollectiveClass {
  std::string name;
  int64_t calls = 0;
  double sentBytes = 0, seconds = 0;
};
struct ProgramModel {
  std::vector<KernelClass> kernels; // most time on the first chip first
  std::vector<PhaseModel> phases;   // in schedule order; empty: no phases
  std::vector<CollectiveClass> collectives; // most time first
  std::vector<double> seconds;              // compute, per chip
  double collectiveSeconds = 0;             // the same on every chip
  double flops = 0;
  int64_t calls = 0;
};
// Every instruction of `program` as the runtime replays it (loops
// unrolled, program inputs 0).
ProgramModel modelProgram(const fxe::Executable &exe,
                          const std::string &program,
                          const std::vector<DeviceTarget> &chips,
                          const LinkModel &links = {});

// The report `ferry plan --model` prints: the per-kernel table, the phases'
// modelled compute, the collectives over their links, and throughput and
// utilisation for `samples` samples per run of the program (compute and
// collectives, which ferry does not overlap yet), on each of `chips`.
std::string modelReport(const fxe::Executable &exe, const std::string &program,
                        int64_t samples, const std::vector<DeviceTarget> &chips,
                        const LinkModel &links = {});

} // namespace ferry
