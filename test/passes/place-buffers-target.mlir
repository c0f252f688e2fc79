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
    rt.buffer 2 size 65536
    rt.loop r 0 count 4 {
      rt.call "phase_begin" buffers [] ints [array<i64: 0>] floats []
      rt.call "copy" buffers [array<i64: 0, 65536, 0, 65536>, array<i64: 2, 65536, 0>] ints [array<i64: 65536>] floats []
      rt.call "phase_end" buffers [] ints [array<i64: 0>] floats []
    }
    rt.call "fill" buffers [array<i64: 1, 8192, 0>] ints [array<i64: 2048>] floats [1.0]
  }
}

// -----

// expected-error @+1 {{the plan needs 328 KiB of device memory (335872 bytes) but the memory of execution.target h100 is 97.66 KiB; name a target with more memory, lower execution.micro_batch_size, set execution.recompute: layer, or use execution.mode: phased}}
module {
  rt.state @layer.w : tensor<4x128x128xf32> role "parameter" at 0 size 262144 {hf = "layer.{}.w", init = "normal", init_std = 2.0e-02 : f64, stacked}
  rt.state @x : tensor<16x128xf32> role "input" at 262144 size 8192 {hf = "x", init = "zeros", init_std = 0.0 : f64}
  rt.program @train_step inputs [] registers 1 transient 0 {
    rt.buffer 2 size 65536
    rt.loop r 0 count 4 {
      rt.call "copy" buffers [array<i64: 0, 65536, 0, 65536>, array<i64: 2, 65536, 0>] ints [array<i64: 65536>] floats []
    }
    rt.call "fill" buffers [array<i64: 1, 8192, 0>] ints [array<i64: 2048>] floats [1.0]
  }
}

// A source the pass does not know is refused, naming the two it knows.
// BAD: error: ferry-place-buffers: budget-source 'device' is neither `limit` nor `target:NAME`
