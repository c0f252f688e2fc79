// `ferry plan --model`: a per-kernel model of one program's time on the
// compile's target (execution.target), or on an H100 and an H200 without
// one, from the executable alone. Each kernel call takes
// max(FLOPs / arithmetic rate, bytes / memory bandwidth) plus a fixed
// per-kernel floor; FLOPs and bytes come from the call's parameters and the
// buffers its kernel record says it reads and writes. A model, not a measurement:
// it says where the time should go and what the floor is, and the report
// labels it so.
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
};
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
struct ProgramModel {
  std::vector<KernelClass> kernels; // most time on the first chip first
  std::vector<PhaseModel> phases;   // in schedule order; empty: no phases
  std::vector<double> seconds;
  double flops = 0;
  int64_t calls = 0;
};
// Every instruction of `program` as the runtime replays it (loops
// unrolled, program inputs 0).
ProgramModel modelProgram(const fxe::Executable &exe,
                          const std::string &program,
                          const std::vector<DeviceTarget> &chips);

// The report `ferry plan --model` prints: the per-kernel table, the phases'
// modelled compute, and throughput and utilisation for `samples` samples
// per run of the program, on each of `chips`.
std::string modelReport(const fxe::Executable &exe, const std::string &program,
                        int64_t samples,
                        const std::vector<DeviceTarget> &chips);

} // namespace ferry
