//===- RtAttributes.h - the rt stage's attributes ---------------*- C++ -*-===//
//
// The discardable attributes the lowering passes hand each other and the
// executable writer reads: the arena's sizes on the module, the memory
// plan's decisions (prefetch levels, whether layers are recomputed), and
// each program's phases and statistics. Each is named here once and checked
// by the `rt` dialect's verifier (RtAttributes.cpp), so a pass can start
// from IR written by hand and a broken contract is a diagnostic at the
// attribute.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_DIALECTS_RT_RTATTRIBUTES_H
#define FERRY_DIALECTS_RT_RTATTRIBUTES_H

#include "llvm/ADT/StringRef.h"

namespace ferry::rt::attrs {

// Module (unit): the graph had recomputed layers (ferry-select-kernels), so
// the budget's error does not suggest recompute; read by
// ferry-place-buffers, dropped by ferry-layout-arena.
inline constexpr llvm::StringLiteral kRecompute = "rt.recompute";
// Module: the prefetch levels ferry-place-buffers chose (a list of
// kPrefetchLevelNames), consumed by ferry-stage-remote-buffers.
inline constexpr llvm::StringLiteral kPrefetchLevels = "rt.prefetch_levels";
// Module (string): why those levels, the note `ferry plan` shows.
inline constexpr llvm::StringLiteral kPrefetch = "rt.prefetch";
// Module (integers >= 0), from ferry-layout-arena: the arena's bytes, where
// the states end in it, the host memory's bytes (phased), every buffer's
// alignment (> 0) and the parameters' element count.
inline constexpr llvm::StringLiteral kArenaBytes = "rt.arena_bytes";
inline constexpr llvm::StringLiteral kStateBytes = "rt.state_bytes";
inline constexpr llvm::StringLiteral kHostBytes = "rt.host_bytes";
inline constexpr llvm::StringLiteral kAlignment = "rt.alignment";
inline constexpr llvm::StringLiteral kParameterCount = "rt.parameter_count";
// rt.program: its phases' names by phase id (strings).
inline constexpr llvm::StringLiteral kPhaseNames = "rt.phase_names";
// rt.program: each phase's statistics (dictionaries), from
// ferry-layout-arena.
inline constexpr llvm::StringLiteral kPhases = "rt.phases";
// rt.program (integers >= 0): its most bytes live at once, and what its
// collectives move per replica.
inline constexpr llvm::StringLiteral kMaxLiveBytes = "rt.max_live_bytes";
inline constexpr llvm::StringLiteral kCollectiveBytes = "rt.collective_bytes";

// The names of the prefetch levels in kPrefetchLevels.
inline constexpr llvm::StringLiteral kNextLayer = "next-layer";
inline constexpr llvm::StringLiteral kNextMicroBatch = "next-micro-batch";
inline constexpr llvm::StringLiteral kFirstLayerEarly = "first-layer-early";

} // namespace ferry::rt::attrs

#endif // FERRY_DIALECTS_RT_RTATTRIBUTES_H
