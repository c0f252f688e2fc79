// The checks every backend runs on an executable before trusting it, and on
// each kernel call before running it, so a damaged or hand-edited program
// fails with a message naming the instruction instead of reading or writing
// outside its buffers. Both come from the kernel records (KernelTable.h).
#pragma once

#include "runtime/executable/ExecutableFile.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace ferry {

// On load: the budget (the arena against `limitBytes`), every state's
// layout, every instruction (kernel known, enough buffers and parameters,
// loops nested, registers in range). Throws RuntimeError.
void validateExecutable(const fxe::Executable &executable,
                        std::optional<uint64_t> limitBytes);

// Before a kernel runs: each buffer's reach, from the call's integer
// parameters, against the bytes it was given; the kernel's own checks; and
// the buffers it may not be given overlapping. Throws RuntimeError.
void checkKernelCall(const fxe::Instr &instr,
                     const std::vector<int64_t> &registers);

// c + sum coeffs[r] * registers[r], with overflow checks (an address or a
// parameter of an instruction).
int64_t evaluateAffine(const fxe::Affine *a,
                       const std::vector<int64_t> &registers);

} // namespace ferry
