// RUN: ferry-opt %s "--ferry-lower-to-rt=programs=train_step device-budget=600000" | FileCheck %s
// RUN: ferry-opt %s "--ferry-lower-to-rt=programs=train_step device-budget=600000 prefetch=false" | FileCheck %s --check-prefix=OFF

// The input is what ferry-autodiff, ferry-insert-optimizer,
// ferry-batch-serialise and ferry-phased-execution (then CSE and
// canonicalisation) make of a small model's graph.

// Prefetch in ferry-lower-to-rt: with room for double buffers (600000
// bytes), a remote range that a layer loop's phase reads at the layer index
// is loaded one layer ahead. The loop gets a parity register (counter & 1);
// the staging buffer has two halves, the kernels of layer r use half
// (r & 1):
// * before the loop, during the phase before it (embed.fwd, which does not
//   write them): layer 0's weights into half 0, so they arrive while the
//   embeddings compute;
// * at the start of layer r: wait for them, then issue layer r + 1's into the
//   other half (address 65536 - 65536 * parity), guarded by r + 1 < 2, so the
//   copy thread loads while layer r computes;
// * after the loop: a wait that also holds the buffer live over the loop
//   (the memory plan must not reuse either half meanwhile).
// With prefetch=false the same range is loaded when the phase starts.

// CHECK: rt.prefetch = "on (next layer and next micro-batch, the first layer during the phase before its loop); {{[0-9]+}} staged ranges double-buffered
// CHECK: rt.phase_begin {phase = array<i64: 0>}
// CHECK-NEXT: %[[S:.*]] = rt.slice %host [0, 0, 0, 0] size 65536
// CHECK-NEXT: %[[D:.*]] = rt.slice %arena {{\[}}[[B:[0-9]+]]] size 65536
// CHECK-NEXT: rt.load src(%[[S]]) dst(%[[D]]) {bytes = array<i64: 65536>, event = array<i64: [[E:[0-9]+]]>}
// CHECK-NEXT: rt.loop r 1 count 2 {
// CHECK: rt.phase_end {phase = array<i64: 0>}
// CHECK-NEXT: rt.loop r 2 count 2 parity r [[P:[0-9]+]] {
// CHECK-NEXT: rt.phase_begin {phase = array<i64: 1>}
// CHECK-NEXT: rt.wait {event = array<i64: [[E]]>}
// CHECK-NEXT: %[[S:.*]] = rt.slice %host [65536, 0, 0, 65536] size 65536
// CHECK-NEXT: %[[D:.*]] = rt.slice %arena [{{[0-9]+}}, {{.*}}, -65536] size 65536
// CHECK-NEXT: rt.load src(%[[S]]) dst(%[[D]]) {bytes = array<i64: 65536>, event = array<i64: [[E]]>, guard = array<i64: 1, 0, 0, 1>, limit = array<i64: 2>}
// CHECK-NEXT: rt.loop r 3 count 2 {
// The layer's input (@stash.carry) kept for the backward (@stash.x).
// CHECK-NEXT: rt.slice
// CHECK-NEXT: rt.slice
// CHECK-NEXT: rt.copy
// CHECK-NEXT: rt.slice
// CHECK-NEXT: %[[W:.*]] = rt.slice %arena {{\[}}[[B]], {{.*}}, 65536] size 65536
// CHECK-NEXT: rt.slice
// CHECK-NEXT: rt.gemm a({{.*}}) b(%[[W]]) c({{.*}})
// CHECK: rt.phase_end {phase = array<i64: 1>}
// CHECK-NEXT: }
// CHECK-NEXT: %[[K:.*]] = rt.slice %arena {{\[}}[[B]]] size 131072
// CHECK-NEXT: rt.wait pending(%[[K]]) {event = array<i64: [[E]]>}

// OFF: rt.prefetch = "off (execution.prefetch: false); 0 staged ranges double-buffered
// OFF: rt.loop r 2 count 2 {
// OFF-NEXT: rt.phase_begin {phase = array<i64: 1>}
// OFF-NEXT: %[[S:.*]] = rt.slice %host [0, 0, 0, 65536] size 65536
// OFF-NEXT: %[[D:.*]] = rt.slice %arena [{{[0-9]+}}] size 65536
// OFF-NEXT: rt.load src(%[[S]]) dst(%[[D]])
// OFF-NEXT: rt.wait

module attributes {graph.training = {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, data_parallel = 1 : i64, epsilon = 9.9999999999999995E-7 : f64, global_batch_size = 4 : i64, lr = 1.000000e-03 : f64, lr_schedule = "constant", micro_batch_size = 2 : i64, optimizer = "adamw", power = 1.000000e+00 : f64, seed = 42 : i64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64, weight_decay = 1.000000e-02 : f64}} {
  graph.variable @norm.parts : tensor<3xf32> init(zeros) hf "norm.parts.{}" stacked
  graph.variable @stash.carry : tensor<2x2x128xf32> init(zeros) hf "stash.carry.{}" stacked
  graph.variable @stash.x : tensor<4x2x128xf32> init(zeros) hf "stash.x.{}" stacked
  graph.parameter @emb : tensor<128xf32> init(normal, 2.000000e-02) hf "emb"
  graph.parameter @layer.w : tensor<2x128x128xf32> init(normal, 2.000000e-02) hf "layer.{}.w" stacked
  graph.variable @stash.blk.1 : tensor<4x2x128xf32> init(zeros) hf "stash.blk.1.{}" stacked
  graph.variable @grad.layer.w : tensor<2x128x128xf32> init(zeros) hf "grad.layer.{}.w" stacked
  graph.variable @grad.emb : tensor<128xf32> init(zeros) hf "grad.emb"
  graph.variable @metric.loss : tensor<f32> init(zeros) hf "metric.loss"
  graph.variable @metric.mlm_loss : tensor<f32> init(zeros) hf "metric.mlm_loss"
  graph.variable @metric.nsp_loss : tensor<f32> init(zeros) hf "metric.nsp_loss"
  graph.variable @metric.mlm_correct : tensor<f32> init(zeros) hf "metric.mlm_correct"
  graph.variable @metric.nsp_correct : tensor<f32> init(zeros) hf "metric.nsp_correct"
  graph.variable @metric.grad_norm : tensor<f32> init(zeros) hf "metric.grad_norm"
  graph.variable @metric.lr : tensor<f32> init(zeros) hf "metric.lr"
  graph.variable @input.x : tensor<2x2x128xf32> init(zeros) hf "input.x.{}" stacked
  graph.variable @input.mlm_count : tensor<f32> init(zeros) hf "input.mlm_count"
  graph.variable @adam_m.emb : tensor<128xf32> init(zeros) hf "optimizer.m.emb"
  graph.variable @adam_v.emb : tensor<128xf32> init(zeros) hf "optimizer.v.emb"
  graph.variable @adam_m.layer.w : tensor<2x128x128xf32> init(zeros) hf "optimizer.m.layer.{}.w" stacked
  graph.variable @adam_v.layer.w : tensor<2x128x128xf32> init(zeros) hf "optimizer.v.layer.{}.w" stacked
  func.func @embed(%arg0: tensor<2x128xf32>, %arg1: tensor<128xf32>) -> tensor<2x128xf32> {
    %0 = graph.bias_add %arg0, %arg1 : tensor<2x128xf32>, tensor<128xf32>
    return %0 : tensor<2x128xf32>
  }
  func.func @embed_fwd(%arg0: tensor<2x128xf32>, %arg1: tensor<128xf32>) -> tensor<2x128xf32> {
    %0 = graph.bias_add %arg0, %arg1 : tensor<2x128xf32>, tensor<128xf32>
    return %0 : tensor<2x128xf32>
  }
  func.func @embed_bwd(%arg0: tensor<2x128xf32>, %arg1: tensor<128xf32>, %arg2: tensor<2x128xf32>) -> tensor<128xf32> {
    %0 = graph.reduce sum %arg2 dims [0] : tensor<2x128xf32> -> tensor<128xf32>
    return %0 : tensor<128xf32>
  }
  func.func @blk(%arg0: tensor<2x128xf32>, %arg1: i64, %arg2: index, %arg3: index, %arg4: tensor<128x128xf32>) -> tensor<2x128xf32> {
    %0 = graph.matmul %arg0, %arg4 {transpose_rhs} : tensor<2x128xf32>, tensor<128x128xf32> -> tensor<2x128xf32>
    %1 = graph.gelu %0 : tensor<2x128xf32>
    %2 = graph.dropout %1, %arg1, %arg2, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x128xf32>
    return %2 : tensor<2x128xf32>
  }
  func.func @blk_fwd(%arg0: tensor<2x128xf32>, %arg1: i64, %arg2: index, %arg3: index, %arg4: tensor<128x128xf32>) -> (tensor<2x128xf32>, tensor<2x128xf32>) {
    %0 = graph.matmul %arg0, %arg4 {transpose_rhs} : tensor<2x128xf32>, tensor<128x128xf32> -> tensor<2x128xf32>
    %1 = graph.gelu %0 : tensor<2x128xf32>
    %2 = graph.dropout %1, %arg1, %arg2, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x128xf32>
    return %2, %0 : tensor<2x128xf32>, tensor<2x128xf32>
  }
  func.func @blk_bwd(%arg0: tensor<2x128xf32>, %arg1: i64, %arg2: index, %arg3: index, %arg4: tensor<128x128xf32>, %arg5: tensor<2x128xf32>, %arg6: tensor<2x128xf32>) -> (tensor<2x128xf32>, tensor<128x128xf32>) {
    %0 = graph.dropout %arg6, %arg1, %arg2, %arg3 {probability = 1.000000e-01 : f64, purpose = "out"} : tensor<2x128xf32>
    %1 = graph.gelu_grad %arg5, %0 : tensor<2x128xf32>
    %2 = graph.matmul %1, %arg4 : tensor<2x128xf32>, tensor<128x128xf32> -> tensor<2x128xf32>
    %3 = graph.matmul %1, %arg0 {transpose_lhs} : tensor<2x128xf32>, tensor<2x128xf32> -> tensor<128x128xf32>
    return %2, %3 : tensor<2x128xf32>, tensor<128x128xf32>
  }
  func.func @head(%arg0: tensor<2x128xf32>, %arg1: tensor<f32>) -> tensor<f32> {
    %0 = graph.reduce sum_squares %arg0 dims [0, 1] : tensor<2x128xf32> -> tensor<f32>
    %1 = graph.div %0, %arg1 : tensor<f32>
    return %1 : tensor<f32>
  }
  func.func @head_fwd(%arg0: tensor<2x128xf32>, %arg1: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
    %0 = graph.reduce sum_squares %arg0 dims [0, 1] : tensor<2x128xf32> -> tensor<f32>
    %1 = graph.div %0, %arg1 : tensor<f32>
    return %1, %1 : tensor<f32>, tensor<f32>
  }
  func.func @head_bwd(%arg0: tensor<2x128xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<f32>) -> tensor<2x128xf32> {
    %0 = graph.div %arg3, %arg1 : tensor<f32>
    %1 = graph.broadcast %0 dims [0, 1] : tensor<f32> -> tensor<2x128xf32>
    %2 = graph.scale %arg0 by 2.000000e+00 : tensor<2x128xf32>
    %3 = graph.mul %1, %2 : tensor<2x128xf32>
    return %3 : tensor<2x128xf32>
  }
  func.func @forward(%arg0: tensor<2x128xf32> {graph.input = "x"}, %arg1: tensor<f32> {graph.input = "mlm_count"}, %arg2: i64 {graph.input = "seed"}, %arg3: index {graph.input = "sample_offset"}) -> tensor<f32> attributes {graph.entry = "forward"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %0 = graph.parameter_ref @emb : tensor<128xf32>
    %1 = call @embed(%arg0, %0) : (tensor<2x128xf32>, tensor<128xf32>) -> tensor<2x128xf32>
    %2 = scf.for %arg4 = %c0 to %c2 step %c1 iter_args(%arg5 = %1) -> (tensor<2x128xf32>) {
      %4 = graph.parameter_slice @layer.w[%arg4] : tensor<128x128xf32>
      %5 = func.call @blk(%arg5, %arg2, %arg4, %arg3, %4) : (tensor<2x128xf32>, i64, index, index, tensor<128x128xf32>) -> tensor<2x128xf32>
      scf.yield %5 : tensor<2x128xf32>
    }
    %3 = call @head(%2, %arg1) : (tensor<2x128xf32>, tensor<f32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
  func.func @train_step(%arg0: index {graph.input = "step"}) attributes {graph.entry = "train_step"} {
    %cst = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %cst_1 = arith.constant dense<1.000000e+00> : tensor<f32>
    %c4 = arith.constant 4 : index
    %c42_i64 = arith.constant 42 : i64
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<f32>
    graph.store %cst_2 into @metric.loss : tensor<f32>
    graph.store %cst_2 into @metric.mlm_loss : tensor<f32>
    graph.store %cst_2 into @metric.nsp_loss : tensor<f32>
    graph.store %cst_2 into @metric.mlm_correct : tensor<f32>
    graph.store %cst_2 into @metric.nsp_correct : tensor<f32>
    graph.phase "embed.fwd" {
      scf.for %arg1 = %c0 to %c2 step %c1 {
        %0 = graph.parameter_slice @input.x[%arg1] : tensor<2x128xf32>
        %1 = graph.parameter_ref @emb : tensor<128xf32>
        %2 = func.call @embed_fwd(%0, %1) : (tensor<2x128xf32>, tensor<128xf32>) -> tensor<2x128xf32>
        graph.store %2 into @stash.carry[%arg1] : tensor<2x128xf32>
      } {graph.micro_batches}
    }
    scf.for %arg1 = %c0 to %c2 step %c1 {
      graph.phase "blk.fwd" {
        scf.for %arg2 = %c0 to %c2 step %c1 {
          %0 = graph.parameter_slice @stash.carry[%arg2] : tensor<2x128xf32>
          %1 = arith.muli %arg1, %c2 : index
          %2 = arith.addi %1, %arg2 : index
          graph.store %0 into @stash.x[%2] : tensor<2x128xf32>
          %3 = graph.parameter_slice @layer.w[%arg1] : tensor<128x128xf32>
          %4 = arith.muli %arg0, %c4 : index
          %5 = arith.muli %arg2, %c2 : index
          %6 = arith.addi %4, %5 : index
          %7:2 = func.call @blk_fwd(%0, %c42_i64, %arg1, %6, %3) : (tensor<2x128xf32>, i64, index, index, tensor<128x128xf32>) -> (tensor<2x128xf32>, tensor<2x128xf32>)
          graph.store %7#1 into @stash.blk.1[%2] : tensor<2x128xf32>
          graph.store %7#0 into @stash.carry[%arg2] : tensor<2x128xf32>
        } {graph.micro_batches}
      }
    }
    graph.phase "head.fwd_bwd" {
      scf.for %arg1 = %c0 to %c2 step %c1 {
        %0 = graph.parameter_slice @stash.carry[%arg1] : tensor<2x128xf32>
        %1 = graph.parameter_ref @input.mlm_count : tensor<f32>
        %2:2 = func.call @head_fwd(%0, %1) : (tensor<2x128xf32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
        graph.accumulate %2#0 into @metric.loss : tensor<f32>
        %3 = func.call @head_bwd(%0, %1, %2#1, %cst_1) : (tensor<2x128xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<2x128xf32>
        graph.store %3 into @stash.carry[%arg1] : tensor<2x128xf32>
      } {graph.micro_batches}
    }
    scf.for %arg1 = %c0 to %c2 step %c1 {
      graph.phase "blk.bwd" {
        %0 = arith.subi %c1, %arg1 : index
        graph.store %cst_0 into @grad.layer.w[%0] : tensor<128x128xf32>
        scf.for %arg2 = %c0 to %c2 step %c1 {
          %4 = graph.parameter_slice @stash.carry[%arg2] : tensor<2x128xf32>
          %5 = arith.muli %0, %c2 : index
          %6 = arith.addi %5, %arg2 : index
          %7 = graph.parameter_slice @stash.x[%6] : tensor<2x128xf32>
          %8 = graph.parameter_slice @stash.blk.1[%6] : tensor<2x128xf32>
          %9 = graph.parameter_slice @layer.w[%0] : tensor<128x128xf32>
          %10 = arith.muli %arg0, %c4 : index
          %11 = arith.muli %arg2, %c2 : index
          %12 = arith.addi %10, %11 : index
          %13:2 = func.call @blk_bwd(%7, %c42_i64, %0, %12, %9, %8, %4) : (tensor<2x128xf32>, i64, index, index, tensor<128x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>) -> (tensor<2x128xf32>, tensor<128x128xf32>)
          graph.accumulate %13#1 into @grad.layer.w[%0] : tensor<128x128xf32>
          graph.store %13#0 into @stash.carry[%arg2] : tensor<2x128xf32>
        } {graph.micro_batches}
        %1 = graph.parameter_slice @grad.layer.w[%0] : tensor<128x128xf32>
        %2 = arith.subi %c2, %arg1 : index
        %3 = graph.global_norm %1 : tensor<128x128xf32> -> tensor<f32>
        graph.store %3 into @norm.parts[%2] : tensor<f32>
      }
    }
    graph.phase "embed.bwd" {
      graph.store %cst into @grad.emb : tensor<128xf32>
      scf.for %arg1 = %c0 to %c2 step %c1 {
        %5 = graph.parameter_slice @input.x[%arg1] : tensor<2x128xf32>
        %6 = graph.parameter_ref @emb : tensor<128xf32>
        %7 = graph.parameter_slice @stash.carry[%arg1] : tensor<2x128xf32>
        %8 = func.call @embed_bwd(%5, %6, %7) : (tensor<2x128xf32>, tensor<128xf32>, tensor<2x128xf32>) -> tensor<128xf32>
        graph.accumulate %8 into @grad.emb : tensor<128xf32>
      } {graph.micro_batches}
      %0 = graph.parameter_ref @grad.emb : tensor<128xf32>
      %1 = graph.global_norm %0 : tensor<128xf32> -> tensor<f32>
      graph.store %1 into @norm.parts[%c0] : tensor<f32>
      %2 = graph.parameter_ref @norm.parts : tensor<3xf32>
      %3 = graph.global_norm %2 : tensor<3xf32> -> tensor<f32>
      graph.store %3 into @metric.grad_norm : tensor<f32>
      %4 = graph.learning_rate %arg0 {kind = "constant", lr = 1.000000e-03 : f64, power = 1.000000e+00 : f64, start_warmup_step = 0 : i64, total_steps = 100 : i64, warmup_steps = 0 : i64} : tensor<f32>
      graph.store %4 into @metric.lr : tensor<f32>
      graph.optimizer_update @emb grad @grad.emb moments @adam_m.emb, @adam_v.emb lr %4 norm %3 step %arg0 {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64} : tensor<f32>, tensor<f32>
    }
    scf.for %arg1 = %c0 to %c2 step %c1 {
      graph.phase "layer.optimizer" {
        %0 = graph.parameter_ref @metric.lr : tensor<f32>
        %1 = graph.parameter_ref @metric.grad_norm : tensor<f32>
        graph.optimizer_update @layer.w[%arg1] grad @grad.layer.w moments @adam_m.layer.w, @adam_v.layer.w lr %0 norm %1 step %arg0 {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, clip_norm = 1.000000e+00 : f64, epsilon = 9.9999999999999995E-7 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64} : tensor<f32>, tensor<f32>
      }
    }
    return
  }
}
