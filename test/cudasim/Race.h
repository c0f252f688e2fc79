// ferry's CUDA simulator: the race checker (docs/cuda-simulator.md, "Races").
// Test-only.
//
// What compute-sanitizer's racecheck does on a GPU, done on the simulator's
// fibers: every 2 bytes of shared memory (and, within one kernel, of device
// memory) keep shadow state, the last thread that wrote it and the
// last that read it, each with the block's barrier epoch and its warp's sync
// count at the time. An access by another thread of the block to a word
// written (or, for a write, read) in the same barrier epoch is a race
// unless the two are lanes of one warp that have synchronised since
// (__syncwarp or a shuffle); an access by another block to a word of device
// memory that a block wrote in this kernel, or a write to one another block
// read, is a race, since nothing orders blocks within a kernel. A race stops
// the run with a message naming the kernel, the memory (shared, or the
// device allocation and the offset in it), the two threads and the kind
// (read after write, write after read, write after write).
//
// The kernels' accesses reach the checker through the compiler: the kernel
// translation units of the simulator's plain (non-ASan) build are compiled
// with -fsanitize=thread, whose instrumentation calls __tsan_read4(address)
// and friends before each load and store; Race.cpp defines those functions
// (no ThreadSanitizer runtime is linked). Accesses on the running fiber's
// own stack are private and skipped, atomics are not instrumented
// (Device.h), and everything outside device allocations and the stack is
// taken for shared memory (`__shared__` variables; kernels reach no other
// memory). FERRY_CUDA_SIM_RACECHECK=0 turns the checks off.
#pragma once

#include <cstdint>
#include <string>

namespace cudasim::race {

// Whether the kernels of this build are instrumented (a Race.cpp hook has
// run) and the checks are on.
bool enabled();

// Called by the grid runner (Grid.cpp).
void kernelBegin(const std::string &kernel);
void kernelEnd();
void blockBegin(unsigned bx, unsigned by, unsigned bz, unsigned threads,
                unsigned blockDimX, unsigned blockDimY);
void blockEnd();
// The thread about to run (its linear index in the block and its stack),
// or none (-1) between threads.
void running(int linear, const char *stackBegin, const char *stackEnd);
void barrierReleased();               // a __syncthreads completed
void warpSynchronised(unsigned warp); // a shuffle or __syncwarp completed

} // namespace cudasim::race
