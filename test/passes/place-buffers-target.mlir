// RUN: ferry-opt %s --split-input-file --ferry-place-buffers="device-budget=100000 budget-source=target:h100" -verify-diagnostics
// RUN: not ferry-opt %s --split-input-file --ferry-place-buffers="device-budget=100000 budget-source=device" 2>&1 | FileCheck %s --check-prefix=BAD

// Tests how ferry-place-buffers names a budget that execution.target set
// (the target's memory), not execution.device_memory_limit: the phased
// plan's error and the resident plan's, each with the fix that applies.

// expected-error @+1 {{at its peak (phase layer of @train_step) but the memory of execution.target h100 is 97.66 KiB, even with every remote buffer in host memory; largest there: @layer.w (staged) 64 KiB, 1 activations and temporaries 64 KiB, states kept on the device (small or used outside phases) 8 KiB. Lower execution.micro_batch_size, set execution.recompute: layer, or name a target with more memory}}
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

// expected-error @+1 {{the plan needs 328 KiB of device memory (335872 bytes) but the memory of execution.target h100 is 97.66 KiB; name a target with more memory, lower execution.micro_batch_size, set execution.recompute: layer, or use execution.mode: phased}}
module {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, stacked}
  rt.state @x : tensor<16x128xf32> role "input" at 262144 size 8192 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @train_step inputs [] registers 1 transient 0 {
    %layer.w = rt.state_ref @layer.w
    %x = rt.state_ref @x
    %b2 = rt.alloc size 65536
    rt.loop r 0 count 4 {
      %r3 = rt.slice %layer.w [0, 65536] size 65536
      %r4 = rt.slice %b2 [0] size 65536
      rt.copy src(%r3) dst(%r4) {bytes = array<i64: 65536>}
    }
    %r5 = rt.slice %x [0] size 8192
    rt.fill dst(%r5) {count = array<i64: 2048>, value = 1.0 : f64}
  }
}

// A source the pass does not know is refused, naming the two it knows.
// BAD: error: ferry-place-buffers: budget-source 'device' is neither `limit` nor `target:NAME`
