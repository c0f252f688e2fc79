// `ferry plan --model`: a per-kernel model of one program's time on an H100
// and an H200, from the executable alone. Each kernel call takes
// max(FLOPs / arithmetic rate, bytes / memory bandwidth) plus a fixed
// per-kernel floor; FLOPs and bytes come from the call's parameters and the
// buffers Kernels.def says it reads and writes. A model, not a measurement:
// it says where the time should go and what the floor is, and the report
// labels it so.
#pragma once

#include "runtime/executable/Executable_generated.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ferry {

// One chip's rates: practical ones (what a large bf16 GEMM and a device
// copy reached on these machines, tool library KINDS.md) beside the
// datasheet's.
struct ChipRates {
  const char *name;
  double tensorFlops, tensorFlopsStated; // dense bf16 (tensor cores)
  double fp32Flops, fp32FlopsStated;     // CUDA cores
  double memoryBytes, memoryBytesStated; // HBM, per second
};
extern const ChipRates kH100, kH200;

// What one kernel call costs.
struct KernelCost {
  double flops = 0, bytes = 0;
  bool tensorCores = false; // bf16/fp16 products
  bool hostLink = false;    // load/store: the copy engines, not the SMs
};
KernelCost kernelCost(const fxe::Instr &in,
                      const std::vector<int64_t> &registers);

// Seconds one call takes on `chip` (0 for host-link copies and markers).
double modelledSeconds(const KernelCost &cost, const ChipRates &chip);

struct KernelClass {
  std::string kernel;
  int64_t calls = 0;
  double flops = 0, bytes = 0;
  double seconds[2] = {0, 0}; // kH100, kH200
};
struct PhaseModel {
  std::string phase;
  double seconds[2] = {0, 0};
};
struct ProgramModel {
  std::vector<KernelClass> kernels; // most time on the H100 first
  std::vector<PhaseModel> phases;   // in schedule order; empty: no phases
  double seconds[2] = {0, 0};
  double flops = 0;
  int64_t calls = 0;
};
// Every instruction of `program` as the runtime replays it (loops
// unrolled, program inputs 0).
ProgramModel modelProgram(const fxe::Executable &exe,
                          const std::string &program);

// The report `ferry plan --model` prints: the per-kernel table, the phases'
// modelled compute, and throughput and utilisation for `samples` samples
// per run of the program.
std::string modelReport(const fxe::Executable &exe, const std::string &program,
                        int64_t samples);

} // namespace ferry
