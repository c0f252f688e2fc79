// The phase plan of an executable as a table a person reads: per phase of
// phased execution, how often it runs per update, bytes over the host link
// each way, matmul FLOPs and the peak of device bytes, with totals and where
// the remote buffers live. Printed by `ferry plan` (before running) and
// `ferry inspect` (from a compiled executable).
#pragma once

#include "runtime/executable/Executable_generated.h"

#include <string>

namespace ferry {

// The table for one program ("train_step"); empty when it has no phases.
std::string phasePlanTable(const fxe::Executable &exe,
                           const std::string &program);

// Where the states live: per role, bytes on the device and in host memory.
std::string placementSummary(const fxe::Executable &exe);

// Every state with where it lives (device or host) and its size, largest
// first: `ferry plan --buffers`.
std::string bufferTable(const fxe::Executable &exe);

} // namespace ferry
