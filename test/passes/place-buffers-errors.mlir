// RUN: ferry-opt %s --split-input-file --ferry-place-buffers=device-budget=100000 -verify-diagnostics

// Tests the budget error of ferry-place-buffers: even with @layer.w in host
// memory and no prefetch, the phase needs 139264 bytes. The message gives
// the peak, where it is, what is largest there and what to change.

// expected-error @+1 {{the phased plan needs 136 KiB of device memory (139264 bytes) at its peak (phase layer of @train_step) but execution.device_memory_limit is 97.66 KiB, even with every remote buffer in host memory; largest there: @layer.w (staged) 64 KiB, 1 activations and temporaries 64 KiB, states kept on the device (small or used outside phases) 8 KiB. Lower execution.micro_batch_size, set execution.recompute: layer, or raise execution.device_memory_limit}}
module {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, stacked}
  rt.state @x : tensor<16x128xf32> role "input" at 262144 size 8192 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phase_names = ["layer"]} {
    %layer.w = rt.state_ref @layer.w
    %x = rt.state_ref @x
    %b2 = rt.alloc size 65536
    rt.loop r 0 count 4 {
      rt.phase_begin {phase = array<i64: 0>}
      %r0 = rt.slice %layer.w [0, 65536] size 65536
      %r1 = rt.slice %b2 [0] size 65536
      rt.copy src(%r0) dst(%r1) {bytes = array<i64: 65536>}
      rt.phase_end {phase = array<i64: 0>}
    }
    %r2 = rt.slice %x [0] size 8192
    rt.fill dst(%r2) {count = array<i64: 2048>, value = 1.0 : f64}
  }
}

// -----

// With rt.recompute (ferry-select-kernels saw recomputed layers), the
// message does not suggest it again.

// expected-error @+1 {{even with every remote buffer in host memory; largest there: @layer.w (staged) 64 KiB, 1 activations and temporaries 64 KiB, states kept on the device (small or used outside phases) 8 KiB. Lower execution.micro_batch_size, or raise execution.device_memory_limit}}
module attributes {rt.recompute} {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, stacked}
  rt.state @x : tensor<16x128xf32> role "input" at 262144 size 8192 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phase_names = ["layer"]} {
    %layer.w = rt.state_ref @layer.w
    %x = rt.state_ref @x
    %b2 = rt.alloc size 65536
    rt.loop r 0 count 4 {
      rt.phase_begin {phase = array<i64: 0>}
      %r3 = rt.slice %layer.w [0, 65536] size 65536
      %r4 = rt.slice %b2 [0] size 65536
      rt.copy src(%r3) dst(%r4) {bytes = array<i64: 65536>}
      rt.phase_end {phase = array<i64: 0>}
    }
    %r5 = rt.slice %x [0] size 8192
    rt.fill dst(%r5) {count = array<i64: 2048>, value = 1.0 : f64}
  }
}

// -----

// A module without phases is checked against the budget here too: its plan
// (states 264 KiB + the largest program's temporaries 64 KiB) over the
// budget is refused with the fix.

// expected-error @+1 {{the plan needs 328 KiB of device memory (335872 bytes) but execution.device_memory_limit is 97.66 KiB; raise the limit, lower execution.micro_batch_size, set execution.recompute: layer, or use execution.mode: phased (weights, optimizer state and activations streamed through host memory)}}
module {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, stacked}
  rt.state @x : tensor<16x128xf32> role "input" at 262144 size 8192 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @train_step inputs [] registers 1 transient 0 {
    %layer.w = rt.state_ref @layer.w
    %x = rt.state_ref @x
    %b2 = rt.alloc size 65536
    rt.loop r 0 count 4 {
      %r6 = rt.slice %layer.w [0, 65536] size 65536
      %r7 = rt.slice %b2 [0] size 65536
      rt.copy src(%r6) dst(%r7) {bytes = array<i64: 65536>}
    }
    %r8 = rt.slice %x [0] size 8192
    rt.fill dst(%r8) {count = array<i64: 2048>, value = 1.0 : f64}
  }
}
