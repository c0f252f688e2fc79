// RUN: ferry-opt %s --split-input-file --ferry-layout-arena -verify-diagnostics

// Tests the diagnostics of ferry-layout-arena on programs it cannot lay out:
// one not in the form before the layout (checkBeforeLayout of
// passes/lowering/RtRanges.h, which the passes on virtual buffers share),
// and one that still names a remote buffer outside a transfer.

// A kernel takes a range of a buffer the program did not declare (neither
// an rt.state_ref nor an rt.alloc of it).
module {
  %other = builtin.unrealized_conversion_cast to !rt.buffer
  rt.state @x : tensor<8xf32> role "state" at 0 size 32 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 0 transient 0 {
    %x = rt.state_ref @x
    %r0 = rt.slice %x [0] size 32
    %r1 = rt.slice %other [0] size 32
    // expected-error @+1 {{takes a range that is not an rt.slice of an rt.alloc or rt.state_ref of the program}}
    rt.tanh x(%r0) out(%r1) {count = array<i64: 8>}
  }
}

// -----

// A program already in arena form is not read again.
module {
  rt.state @x : tensor<8xf32> role "state" at 0 size 32 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @f inputs [] registers 0 transient 0 {
    // expected-error @+1 {{is not part of a program before the arena layout (rt.alloc, rt.state_ref, rt.slice, kernel calls, rt.loop)}}
    %arena = rt.arena
    %r2 = rt.slice %arena [0] size 32
    %r3 = rt.slice %arena [0] size 32
    rt.tanh x(%r2) out(%r3) {count = array<i64: 8>}
  }
}

// -----

// A remote buffer that no staging pass has replaced: the arena has no
// address for it.
module {
  rt.state @h : tensor<16384xf32> role "parameter" at 0 size 65536 {hf = "h", init = "zeros", init_std = 0.0 : f64, host}
  // expected-error @+1 {{calls 'fill' on @h, a remote buffer in host memory that only load and store may touch; run ferry-stage-remote-buffers first}}
  rt.program @f inputs [] registers 0 transient 0 {
    %h = rt.state_ref @h
    %r4 = rt.slice %h [0] size 65536
    rt.fill dst(%r4) {count = array<i64: 16384>, value = 1.0 : f64}
  }
}
