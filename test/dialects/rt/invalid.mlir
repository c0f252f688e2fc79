// RUN: ferry-opt %s --split-input-file --verify-diagnostics

// Tests the checks of the rt ops that hold buffers and ranges, and the
// checks every typed kernel op shares (KernelCallOpInterface). The checks
// ODS generates from each record (required parameters, affine arrays) are
// kernel-ops-invalid.mlir's.

// Tests that a kernel name must be one of dialects/rt/kernels/*.td.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{custom op 'rt.conv2d' is unknown}}
  rt.conv2d x() {}
}

// -----

// Tests that a range has a positive byte count.
rt.program @p inputs [] registers 0 transient 0 {
  %arena = rt.arena
  // expected-error @+1 {{size must be positive, found 0}}
  %r = rt.slice %arena [64] size 0
}

// -----

// Tests that an offset has at least its constant term.
rt.program @p inputs [] registers 0 transient 0 {
  %arena = rt.arena
  // expected-error @+1 {{'rt.slice' op attribute 'offset' failed to satisfy constraint}}
  %r = rt.slice %arena [] size 64
}

// -----

// Tests that a constant range lies within the temporary it slices.
rt.program @p inputs [] registers 0 transient 0 {
  %t = rt.alloc size 64
  // expected-error @+1 {{range [32, 96) is outside its 64-byte rt.alloc}}
  %r = rt.slice %t [32] size 64
}

// -----

// Tests that states live at module level.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{expects parent op 'builtin.module'}}
  rt.state @w : tensor<4xf32> role "parameter" at 0 size 16 {hf = "w", init = "zeros", init_std = 0.0 : f64}
}

// -----

// Tests that a state reference names a state of the module.
module {
  rt.state @w : tensor<4xf32> role "parameter" at 0 size 16 {hf = "w", init = "zeros", init_std = 0.0 : f64}
  rt.program @p inputs [] registers 0 transient 0 {
    // expected-error @+1 {{names @v, which is no rt.state of the module}}
    %v = rt.state_ref @v
  }
}

// -----

// Tests that temporaries are declared in a program.
module {
  // expected-error @+1 {{expects parent op 'rt.program'}}
  %t = rt.alloc size 64
}

// -----

// Tests that a temporary has a positive size.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{size must be positive, found -64}}
  %t = rt.alloc size -64
}

// -----

// Tests that a workspace's scratch lies within it.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{scratch must be in [0, size], found 128}}
  %t = rt.alloc size 64 {scratch = 128 : i64}
}

// -----

// Tests that optional integers are given in order: load's limit needs its
// guard (the executable lists integers by position).
rt.program @p inputs [] registers 0 transient 0 {
  %arena = rt.arena
  %host = rt.arena host
  %s = rt.slice %host [0] size 64
  %d = rt.slice %arena [0] size 64
  // expected-error @+1 {{has 'limit' but not an optional integer before it}}
  rt.load src(%s) dst(%d) {bytes = array<i64: 64>, event = array<i64: 0>, limit = array<i64: 4>}
}

// -----

// Tests that only buffers its kernel record declares RtBf16 are stored as
// bf16: gelu's x and out are, fill's dst is not.
rt.program @p inputs [] registers 0 transient 0 {
  %arena = rt.arena
  %x = rt.slice %arena [0] size 32
  %y = rt.slice %arena [64] size 32
  rt.gelu x(%x) out(%y) {count = array<i64: 16>, bf16 = 3 : i64}
  // expected-error @+1 {{stores buffer 0 as bf16, which kernel 'fill' cannot take (its record in dialects/rt/kernels has no RtBf16 rule for it)}}
  rt.fill dst(%x) {count = array<i64: 8>, value = 0.0 : f64, bf16 = 1 : i64}
}

// -----

// Tests that the mask names only the call's buffers.
rt.program @p inputs [] registers 0 transient 0 {
  %arena = rt.arena
  %x = rt.slice %arena [0] size 32
  %y = rt.slice %arena [64] size 32
  // expected-error @+1 {{stores buffer 2 as bf16, which kernel 'gelu' cannot take (its record in dialects/rt/kernels has no RtBf16 rule for it)}}
  rt.gelu x(%x) out(%y) {count = array<i64: 16>, bf16 = 4 : i64}
}

// -----

// Tests that the mask is an integer...
rt.program @p inputs [] registers 0 transient 0 {
  %arena = rt.arena
  %x = rt.slice %arena [0] size 32
  %y = rt.slice %arena [64] size 32
  // expected-error @+1 {{'rt.gelu' op attribute 'bf16' failed to satisfy constraint: 64-bit signless integer attribute}}
  rt.gelu x(%x) out(%y) {count = array<i64: 16>, bf16 = "x"}
}

// -----

// ... and a positive one.
rt.program @p inputs [] registers 0 transient 0 {
  %arena = rt.arena
  %x = rt.slice %arena [0] size 32
  %y = rt.slice %arena [64] size 32
  // expected-error @+1 {{bf16 must be a positive integer (a mask of the buffers stored as bf16), found 0 : i64}}
  rt.gelu x(%x) out(%y) {count = array<i64: 16>, bf16 = 0 : i64}
}

// -----

// Tests that a phase marker names one of the program's phases (a constant
// index of rt.phase_names).
// expected-error @+1 {{has a 'phase_begin' whose phase is not a constant index of rt.phase_names}}
rt.program @f inputs [] registers 0 transient 0 attributes {rt.phase_names = ["p"]} {
  rt.phase_begin {phase = array<i64: 1>}
  rt.phase_end {phase = array<i64: 1>}
}

// -----

// Tests that a phase index is a constant, not a register's value.
// expected-error @+1 {{has a 'phase_end' whose phase is not a constant index of rt.phase_names}}
rt.program @f inputs [] registers 1 transient 0 attributes {rt.phase_names = ["p"]} {
  rt.phase_begin {phase = array<i64: 0>}
  rt.phase_end {phase = array<i64: 0, 1>}
}

// -----

// Tests that the phase names are strings.
// expected-error @+1 {{rt.phase_names must be an array of strings on an rt.program, found [1]}}
rt.program @f inputs [] registers 0 transient 0 attributes {rt.phase_names = [1]} {
}
