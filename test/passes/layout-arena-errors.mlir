// RUN: ferry-opt %s --split-input-file --ferry-layout-arena -verify-diagnostics

// Tests the diagnostics of the lowering's reader of rt programs on virtual
// buffers (passes/lowering/RtProgram.cpp), which ferry-forward-buffers,
// ferry-place-buffers, ferry-stage-remote-buffers and ferry-layout-arena
// share.

module {
  rt.state @x : tensor<8xf32> role "state" at 0 size 32 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  // expected-error @+1 {{calls 'tanh' on buffer 5, which is neither a state nor an rt.buffer of the program}}
  rt.program @f inputs [] registers 0 transient 0 {
    rt.call "tanh" buffers [array<i64: 0, 32, 0>, array<i64: 5, 32, 0>] ints [array<i64: 8>] floats []
  }
}

// -----

module {
  rt.state @x : tensor<8xf32> role "state" at 0 size 32 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 0 transient 0 {
    // expected-error @+1 {{declares buffer 0, which is a state or declared before}}
    rt.buffer 0 size 32
  }
}

// -----

module {
  rt.state @x : tensor<8xf32> role "state" at 0 size 32 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 0 transient 0 {
    // expected-error @+1 {{is not part of a program on virtual buffers (rt.buffer, rt.call, rt.loop)}}
    rt.kernel "tanh" buffers [array<i64: 32, 0>, array<i64: 32, 0>] ints [array<i64: 8>] floats []
  }
}

// -----

module {
  // expected-error @+1 {{has a 'phase_begin' whose phase is not a constant index of rt.phase_names}}
  rt.program @f inputs [] registers 0 transient 0 attributes {rt.phase_names = ["p"]} {
    rt.call "phase_begin" buffers [] ints [array<i64: 1>] floats []
    rt.call "phase_end" buffers [] ints [array<i64: 1>] floats []
  }
}

// -----

// A remote buffer that no staging pass has replaced: the arena has no
// address for it.
module {
  rt.state @h : tensor<16384xf32> role "parameter" at 0 size 65536 {hf = "h", init = "zeros", init_std = 0.0 : f64, host}
  // expected-error @+1 {{calls 'fill' on @h, a remote buffer in host memory that only load and store may touch; run ferry-stage-remote-buffers first}}
  rt.program @f inputs [] registers 0 transient 0 {
    rt.call "fill" buffers [array<i64: 0, 65536, 0>] ints [array<i64: 16384>] floats [1.0]
  }
}
