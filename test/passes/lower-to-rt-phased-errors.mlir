// RUN: ferry-opt %s --ferry-autodiff --ferry-insert-optimizer --ferry-batch-serialise --ferry-phased-execution --cse --canonicalize "--ferry-lower-to-rt=programs=train_step device-budget=10000" -verify-diagnostics

// A budget below the smallest phased plan (every remote buffer in host
// memory) is a compile error naming the peak, where it is, the largest
// buffers there and what to change.

// expected-error @+1 {{the phased plan needs 270.56 KiB of device memory (277056 bytes) at its peak (phase layer.optimizer of @train_step) but execution.device_memory_limit is 9.77 KiB, even with every remote buffer in host memory; largest there: @layer.w (staged) 64 KiB, @grad.layer.w (staged) 64 KiB, @adam_v.layer.w (staged) 64 KiB, @adam_m.layer.w (staged) 64 KiB, states kept on the device (small or used outside phases) 14.04 KiB. Lower execution.micro_batch_size, set execution.recompute: layer, or raise execution.device_memory_limit}}
module attributes {ferry.training = {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 1.000000e-06 : f64, global_batch_size = 4 : i64, lr = 1.000000e-03 : f64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.parameter @emb : tensor<128xf32> init(normal, 2.000000e-02) hf "emb"
  graph.parameter @layer.w : tensor<2x128x128xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
  func.func @embed(%x: tensor<2x128xf32>, %e: tensor<128xf32>) -> tensor<2x128xf32> {
    %y = graph.bias_add %x, %e : tensor<2x128xf32>, tensor<128xf32>
    return %y : tensor<2x128xf32>
  }
  func.func @blk(%x: tensor<2x128xf32>, %seed: i64, %l: index, %offset: index, %w: tensor<128x128xf32>) -> tensor<2x128xf32> {
    %y = graph.matmul %x, %w {transpose_rhs} : tensor<2x128xf32>, tensor<128x128xf32> -> tensor<2x128xf32>
    %g = graph.gelu %y : tensor<2x128xf32>
    %d = graph.dropout %g, %seed, %l, %offset {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x128xf32>
    return %d : tensor<2x128xf32>
  }
  func.func @head(%h: tensor<2x128xf32>, %count: tensor<f32>) -> tensor<f32> {
    %s = graph.reduce sum_squares %h dims [0, 1] : tensor<2x128xf32> -> tensor<f32>
    %l = graph.div %s, %count : tensor<f32>
    return %l : tensor<f32>
  }
  func.func @forward(%x: tensor<2x128xf32> {ferry.input = "x"}, %count: tensor<f32> {ferry.input = "mlm_count"}, %seed: i64 {ferry.input = "seed"}, %offset: index {ferry.input = "sample_offset"}) -> tensor<f32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %e = graph.parameter_ref @emb : tensor<128xf32>
    %x0 = func.call @embed(%x, %e) : (tensor<2x128xf32>, tensor<128xf32>) -> tensor<2x128xf32>
    %h = scf.for %l = %c0 to %c2 step %c1 iter_args(%xl = %x0) -> (tensor<2x128xf32>) {
      %w = graph.parameter_slice @layer.w[%l] : tensor<128x128xf32>
      %y = func.call @blk(%xl, %seed, %l, %offset, %w) : (tensor<2x128xf32>, i64, index, index, tensor<128x128xf32>) -> tensor<2x128xf32>
      scf.yield %y : tensor<2x128xf32>
    }
    %loss = func.call @head(%h, %count) : (tensor<2x128xf32>, tensor<f32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
