// RUN: ferry-opt %s --split-input-file --ferry-stage-remote-buffers -verify-diagnostics

// Tests the diagnostics of ferry-stage-remote-buffers.

// (An unknown prefetch level is the rt verifier's error:
// test/dialects/rt/invalid-attributes.mlir.)

// Two ranges of one remote buffer that may overlap, one of them written:
// staged copies of the same bytes would diverge.
// expected-error @+1 {{ferry-stage-remote-buffers: phase p touches overlapping ranges of @w in different ways; it cannot be staged}}
module {
  rt.state @w : tensor<32768xf32> role "parameter" at 0 size 131072 {hf = "w", init = "zeros", init_std = 0.0 : f64, host}
  rt.program @f inputs [] registers 0 transient 0 attributes {rt.phase_names = ["p"]} {
    %w = rt.state_ref @w
    rt.phase_begin {phase = array<i64: 0>}
    %r0 = rt.slice %w [0] size 65536
    rt.fill dst(%r0) {count = array<i64: 16384>, value = 1.0 : f64}
    %r1 = rt.slice %w [4096] size 65536
    rt.fill dst(%r1) {count = array<i64: 16384>, value = 2.0 : f64}
    rt.phase_end {phase = array<i64: 0>}
  }
}
