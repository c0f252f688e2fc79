// RUN: ferry-opt %s --split-input-file --ferry-stage-remote-buffers -verify-diagnostics

// Tests the diagnostics of ferry-stage-remote-buffers.

// (An unknown prefetch level is the rt verifier's error:
// test/dialects/rt/invalid-attributes.mlir.)

// Two ranges of one remote buffer that may overlap, one of them written:
// staged copies of the same bytes would diverge.
// expected-error @+1 {{ferry-lower-to-rt: phase p touches overlapping ranges of @w in different ways; it cannot be staged}}
module {
  rt.state @w : tensor<32768xf32> role "parameter" at 0 size 131072 {hf = "w", init = "zeros", init_std = 0.0 : f64, host}
  rt.program @f inputs [] registers 0 transient 0 attributes {rt.phase_names = ["p"]} {
    rt.call "phase_begin" buffers [] ints [array<i64: 0>] floats []
    rt.call "fill" buffers [array<i64: 0, 65536, 0>] ints [array<i64: 16384>] floats [1.0]
    rt.call "fill" buffers [array<i64: 0, 65536, 4096>] ints [array<i64: 16384>] floats [2.0]
    rt.call "phase_end" buffers [] ints [array<i64: 0>] floats []
  }
}
