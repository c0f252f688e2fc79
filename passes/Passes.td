//===- Passes.td - ferry's passes --------------------------*- tablegen -*-===//
//
// Every ferry pass, its flag, its options and a before/after example. The
// pass classes' bases, the options structs, the create functions and the
// registration come from here (passes/Passes.h); docs/passes.md is generated
// from the descriptions. Pipelines that combine the passes are in
// Pipelines.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FERRY_PASSES_TD
#define FERRY_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Training: graph IR of the model -> graph IR of a training step
//===----------------------------------------------------------------------===//

def ShardParametersPass : Pass<"ferry-shard-parameters", "mlir::ModuleOp"> {
  let summary = "Puts the module on a device mesh and marks how each "
                "parameter is split over its tensor axis";
  let description = [{
    First in the training pipeline when `execution.tensor_parallel` > 1.
    Sets the module's `graph.mesh` (`tensor-parallel` x `data-parallel`)
    and gives each `graph.parameter` the sharding of the last rule whose
    pattern matches its name: `PATTERN=split(D)` splits dimension D of one
    layer's entry (dimension D + 1 of a stacked declaration),
    `PATTERN=replicated` leaves it whole. The rules are the config's
    (training/config/TensorSharding.h: Megatron's layout for BERT, then
    `execution.tensor_sharding`). A rule that matches no parameter, a
    dimension the tensor lacks and a size the tensor group does not divide
    are the user's errors, each naming the rule and the parameter.

    ```mlir
    // before
    graph.parameter @layer.ffn.intermediate.weight : tensor<2x512x128xf32> init(normal, 2.000000e-02) hf "..." stacked
    // after, with tensor-parallel=2 shardings=layer.ffn.intermediate.*=split(0)
    module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
      graph.parameter @layer.ffn.intermediate.weight : tensor<2x512x128xf32> init(normal, 2.000000e-02) hf "..." stacked sharding <split = 1>
    ```
  }];
  let options = [
    Option<"tensorParallel", "tensor-parallel", "int64_t", /*default=*/"1",
           "ranks of a tensor-parallel group (execution.tensor_parallel)">,
    Option<"dataParallel", "data-parallel", "int64_t", /*default=*/"1",
           "data-parallel replicas (execution.data_parallel)">,
    ListOption<"shardings", "shardings", "std::string",
               "PATTERN=split(D) or PATTERN=replicated; a later match wins">,
  ];
  let dependentDialects = ["ferry::graph::GraphDialect"];
}

def PartitionTensorsPass : Pass<"ferry-partition-tensors", "mlir::ModuleOp"> {
  let summary = "Gives every split value this rank's shape and inserts the "
                "tensor group's collectives (Megatron's f and g)";
  let description = [{
    After `ferry-shard-parameters`, before autodiff, on a module whose
    `graph.mesh` has `tensor` > 1. Propagates the declarations' splits
    forward through each entry function and the functions it calls (the
    layer loop's body included): element-wise ops, bias adds, the softmax
    over the keys and batched matmuls keep a split; reshapes and transposes
    move it. A matmul of a replicated input and a weight split along its
    output dimension (column-parallel) reads its input through
    `graph.copy_to_group` (f) and yields its columns; one whose operands are
    both split along the contracted dimension (row-parallel) yields a
    partial sum, all-reduced over the tensor group at once (g), so a bias
    after it is added to the sum. Every split value and declaration takes
    this rank's shape, and the mesh is marked `partitioned`. A split value
    reaching an op without a rule (a layer norm of a split hidden
    dimension; a function result or a loop-carried value split other than
    along the sequence) is an error.

    ```mlir
    // before: W1 [512, 128] split 0, W2 [128, 512] split 1, T = 2
    %h = graph.matmul %x, %w1 {transpose_rhs} : tensor<8x128xf32>, tensor<512x128xf32> -> tensor<8x512xf32>
    %y = graph.matmul %h, %w2 {transpose_rhs} : tensor<8x512xf32>, tensor<128x512xf32> -> tensor<8x128xf32>
    // after
    %f = graph.copy_to_group %x replicas 2 over tensor : tensor<8x128xf32>
    %h = graph.matmul %f, %w1 {transpose_rhs} : tensor<8x128xf32>, tensor<256x128xf32> -> tensor<8x256xf32>
    %p = graph.matmul %h, %w2 {transpose_rhs} : tensor<8x256xf32>, tensor<128x256xf32> -> tensor<8x128xf32>
    %y = graph.all_reduce %p replicas 2 over tensor : tensor<8x128xf32>
    ```

    With `sequence-parallel` (Korthikanti et al. 2022), the activations
    between the layers' matmuls are split along the sequence (dimension 1
    of [batch, seq, hidden]): a row-parallel matmul's (or a
    vocabulary-parallel embedding's) partial sum is reduce-scattered into
    this rank's part of the sequence, layer norms, dropouts, bias and
    residual adds run on that part (their replicated parameters through f,
    so their gradients are summed over the group), the layer loop carries
    it, and a column-parallel matmul all-gathers the sequence before it (in
    place of f). An op that needs the whole sequence (the heads' position
    gathers) gets it all-gathered, its gradient this rank's part; a
    replicated activation meeting a split one is cut to this rank's part
    (`graph.part_of_group`).
  }];
  let options = [
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "split the layer norm and dropout regions along the sequence "
           "(execution.sequence_parallel)">,
  ];
  let dependentDialects = ["ferry::graph::GraphDialect"];
}

def AutodiffPass : Pass<"ferry-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff of the entry function w.r.t. every "
                "graph.parameter";
  let description = [{
    Differentiates the entry function (its result 0 is the loss) with
    respect to every `graph.parameter`. Emits `@<entry>_grad`, which computes
    the same results and adds each parameter's gradient into a
    `@grad.<name>` variable. Each called block function is split into
    `@<block>_fwd` (its results and what the backward needs, the stash) and
    `@<block>_bwd`; a layer loop stores its stash in stacked variables.
    With `loss-scale`, the backward is seeded with that variable's value
    instead of 1 (fp16 loss scaling).

    ```mlir
    // before
    graph.parameter @w : tensor<4x4xf32> init(normal, 2.000000e-02) hf "w"
    func.func @forward(%x: tensor<2x4xf32>) -> tensor<f32> {
      %w = graph.parameter_ref @w : tensor<4x4xf32>
      %y = graph.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
      %l = graph.reduce_sum %y ...
      return %l : tensor<f32>
    }
    // after: @forward as it was, and
    graph.variable @grad.w : tensor<4x4xf32> init(zeros) hf "grad.w"
    func.func @forward_grad(%x: tensor<2x4xf32>) -> tensor<f32> {
      ... the forward ...
      %dw = graph.matmul %x, %dy {transpose_lhs} ...
      graph.accumulate %dw into @grad.w : tensor<4x4xf32>
      return %l : tensor<f32>
    }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"",
           "the function to differentiate">,
    Option<"lossScale", "loss-scale", "std::string", /*default=*/"\"\"",
           "a variable whose value seeds the backward instead of 1 (fp16 "
           "loss scaling), declared if missing">,
  ];
  let dependentDialects = [
    "ferry::graph::GraphDialect", "mlir::arith::ArithDialect",
    "mlir::scf::SCFDialect", "mlir::func::FuncDialect"
  ];
}

def RecomputePass : Pass<"ferry-recompute", "mlir::ModuleOp"> {
  let summary = "Keeps only each layer's input for the backward and re-runs "
                "the layer's forward there (execution.recompute: layer)";
  let description = [{
    Runs on ferry-autodiff's output. The forward layer loop stores only the
    layer input; the backward loop re-runs `@<block>_fwd` from it, with the
    same seed, layer index and sample offset (so dropout masks regenerate),
    right before `@<block>_bwd`, which takes the recomputed stash. The other
    stash variables are no longer declared.

    ```mlir
    // before (forward loop)
    %r:2 = func.call @blk_fwd(%x, %seed, %l, %off, %w, %b)
    graph.store %x into @stash.blk.0[%l]
    graph.store %r#1 into @stash.blk.1[%l]
    // after
    %r:2 = func.call @blk_fwd(%x, %seed, %l, %off, %w, %b)
    graph.store %x into @stash.blk.0[%l]
    // ... and in the backward loop
    %xs = graph.parameter_slice @stash.blk.0[%i]
    %r2:2 = func.call @blk_fwd(%xs, %seed, %i, %off, %w, %b) {graph.recompute}
    func.call @blk_bwd(%xs, %seed, %i, %off, %w, %b, %r2#1, %dy)
    ```
  }];
  let dependentDialects = [
    "ferry::graph::GraphDialect", "mlir::arith::ArithDialect",
    "mlir::scf::SCFDialect", "mlir::func::FuncDialect"
  ];
}

def InsertOptimizerPass : Pass<"ferry-insert-optimizer", "mlir::ModuleOp"> {
  let summary = "Builds @train_step: gradient accumulation, the global norm, "
                "the learning rate and one LAMB or AdamW update per parameter";
  let description = [{
    Wraps `@forward_grad` in `@train_step(%step)`: zero the gradients, loop
    over the micro-batches of one update (each input becomes a stacked
    `@input.<name>` variable), take the global gradient norm, compute the
    learning rate of the schedule and update each parameter with its
    optimizer state, all from the module's `graph.training` attributes.

    ```mlir
    // after
    func.func @train_step(%step: index) {
      graph.store %zeros into @grad.w : tensor<4x4xf32>
      scf.for %mb = %c0 to %ga step %c1 {
        %x = graph.parameter_slice @input.x[%mb] : tensor<2x4xf32>
        %l = func.call @forward_grad(%x, ...) : ...
      }
      %norm = graph.global_norm @grad.w, ...
      %lr = graph.learning_rate %step ...
      graph.optimizer_update @w grad @grad.w moments @adam_m.w, @adam_v.w ...
      return
    }
    ```
  }];
  let dependentDialects = [
    "ferry::graph::GraphDialect", "mlir::arith::ArithDialect",
    "mlir::scf::SCFDialect", "mlir::func::FuncDialect"
  ];
}

def InsertEvalPass : Pass<"ferry-insert-eval", "mlir::ModuleOp"> {
  let summary = "Builds @eval_step: the forward without dropout over the "
                "micro-batches of @train_step's inputs";
  let description = [{
    Copies `@forward` and every function it calls as `@<name>_eval` with
    each `graph.dropout` replaced by its input, and builds `@eval_step()`,
    which zeroes one scalar `@metric.eval.<result>` per result of `@forward`
    and sums them over the micro-batches of `@train_step`'s stacked inputs.
    Results named by a `graph.output` attribute (the SQuAD span head's) take
    their variable's name from it; a named result that is not a scalar (the
    span logits) is an output, stored per micro-batch into
    `@output.eval.<name>` [micro-batches, ...] instead of summed.

    ```mlir
    // after
    graph.variable @metric.eval.loss : tensor<f32> init(zeros) hf "metric.eval.loss"
    func.func @eval_step() {
      graph.store %zero into @metric.eval.loss : tensor<f32>
      scf.for %mb = %c0 to %ga step %c1 {
        %x = graph.parameter_slice @input.x[%mb] : tensor<2x4xf32>
        %l = func.call @forward_eval(%x, ...)
        graph.accumulate %l into @metric.eval.loss : tensor<f32>
      }
      return
    }
    ```
  }];
  let dependentDialects = [
    "ferry::graph::GraphDialect", "mlir::arith::ArithDialect",
    "mlir::scf::SCFDialect", "mlir::func::FuncDialect"
  ];
}

//===----------------------------------------------------------------------===//
// Phased execution
//===----------------------------------------------------------------------===//

def BatchSerialisePass : Pass<"ferry-batch-serialise", "mlir::ModuleOp"> {
  let summary = "Splits @train_step's micro-batch loop at block boundaries "
                "so each block loops over the micro-batches itself";
  let description = [{
    Inlines `@forward_grad` into `@train_step`'s micro-batch loop and splits
    it so each block (embeddings, the layer loop, heads, the backward layer
    loop, the embeddings' backward) loops over the micro-batches itself:
    a layer's weights are read once per update and used for every
    micro-batch (PopXL's batch serialisation). Values crossing blocks live
    in rows x GA variables (`@stash.x`, `@stash.dx`).

    ```mlir
    // before
    scf.for %mb = ... { embeddings; scf.for %l { layer }; heads; backward ... }
    // after
    scf.for %mb = ... { embeddings -> @stash.x[%mb] }
    scf.for %l = ... { scf.for %mb = ... { layer on @stash.x[%l * GA + %mb] } }
    scf.for %mb = ... { heads ... }
    ...
    ```
  }];
  let options = [
    Option<"carryRowBudget", "carry-row-budget", "::ferry::ByteBudget",
           /*default=*/"std::nullopt",
           "the largest carry row that can stay on the device (`none`: "
           "unlimited), which the pipeline derives from the device budget "
           "(passes/DeviceBudget.h). The forward's activation flows through "
           "@stash.carry when its row fits; else through the rows of "
           "@stash.x">,
  ];
  let dependentDialects = [
    "ferry::graph::GraphDialect", "mlir::arith::ArithDialect",
    "mlir::scf::SCFDialect", "mlir::func::FuncDialect"
  ];
}

def PhasedExecutionPass : Pass<"ferry-phased-execution", "mlir::ModuleOp"> {
  let summary = "Cuts the serialised step into graph.phase regions: PopXL's "
                "phase schedule";
  let description = [{
    Runs after ferry-batch-serialise. Each block loop becomes a
    `graph.phase` (embeddings, one per layer forward and backward, heads,
    one optimizer phase per layer); the tied embedding gradient gets its own
    variable, and each gradient's norm is taken in the phase that completes
    it. The lowering streams remote buffers between phases.

    ```mlir
    // after
    graph.phase "embeddings.fwd" { scf.for %mb ... }
    scf.for %l = ... { graph.phase "layer.fwd" { ... } }
    graph.phase "heads.fwd_bwd" { ... }
    scf.for %l = ... { graph.phase "layer.optimizer" { ... } }
    ```
  }];
  let dependentDialects = [
    "ferry::graph::GraphDialect", "mlir::arith::ArithDialect",
    "mlir::scf::SCFDialect", "mlir::func::FuncDialect"
  ];
}

//===----------------------------------------------------------------------===//
// Replicas
//===----------------------------------------------------------------------===//

def CompleteSplitNormsPass : Pass<"ferry-complete-split-norms", "mlir::ModuleOp"> {
  let summary = "Takes the norms of split gradients over the tensor group";
  let description = [{
    On a partitioned module (`execution.tensor_parallel` > 1), after the
    phase schedule and before the data-parallel sums. A gradient split over
    the tensor group holds this rank's part, so each `graph.global_norm`
    that reads split gradients is rewritten: their norm on this rank, the
    group's part norms all-gathered, and the norm of those, so every
    element counts once; the replicated gradients it reads (equal on every
    rank of the group) count once.

    ```mlir
    // before: @grad.w split, @grad.b replicated
    %n = graph.global_norm %gw, %gb : tensor<2x4xf32>, tensor<4xf32> -> tensor<f32>
    // after
    %mine = graph.global_norm %gw : tensor<2x4xf32> -> tensor<f32>
    %one = graph.reshape %mine : tensor<f32> -> tensor<1xf32>
    %all = graph.all_gather %one replicas 2 over tensor : tensor<1xf32> -> tensor<2xf32>
    %split = graph.global_norm %all : tensor<2xf32> -> tensor<f32>
    %n = graph.global_norm %gb, %split : tensor<4xf32>, tensor<f32> -> tensor<f32>
    ```
  }];
  let dependentDialects = ["ferry::graph::GraphDialect"];
}

def InsertCollectivesPass : Pass<"ferry-insert-collectives", "mlir::ModuleOp"> {
  let summary = "Sums gradients and metrics over the data-parallel replicas";
  let description = [{
    Runs last among the training passes, on resident or phased steps, when
    `execution.data_parallel` > 1. Each replica accumulates the gradient of
    its share of the global batch (the losses are already normalised by the
    global counts), so the sum over the replicas is the single-process
    gradient. Where a gradient is complete (where its norm is taken: the
    global norm of a resident step, the gradient's part of the norm in
    phased execution), it is all-reduced in place, before the norm and the
    optimizer read it. The summed metrics of `@train_step` and `@eval_step`
    are all-reduced at their end, so every replica reports the global
    batch's loss.

    With `rts` (replicated tensor sharding, PopXL's meaning), every
    parameter whose layer entry has at least `rts-min-elements` elements is
    stored as this replica's shard: ceil(elements / replicas) elements per
    entry, zero-padded (`graph.shard_of` keeps the whole shape), and so are
    its Adam moments. Each read of it is an all-gather of the shard (hoisted
    out of a phase's micro-batch loop: once per phase); its gradient is
    reduce-scattered into `@grad.shard.<name>` where its norm is taken, its
    part of the global norm is the norm of every replica's shard norm
    (all-gathered, so each element counts once), and the optimizer updates
    the shard (LAMB's trust-ratio norms summed over the replicas). A sharded
    stacked parameter's whole gradient that one phase zeroes, accumulates
    and reduce-scatters (phased execution) becomes one layer's scratch.

    ```mlir
    // before
    %g = graph.parameter_ref @grad.w : tensor<4x8xf32>
    %n = graph.global_norm %g : tensor<4x8xf32> -> tensor<f32>
    // after
    %g = graph.parameter_ref @grad.w : tensor<4x8xf32>
    %s = graph.all_reduce %g replicas 2 : tensor<4x8xf32>
    graph.store %s into @grad.w : tensor<4x8xf32>
    %n = graph.global_norm %s : tensor<4x8xf32> -> tensor<f32>
    ```
  }];
  let options = [
    Option<"replicas", "replicas", "int64_t", /*default=*/"1",
           "execution.data_parallel: the replicas that sum their gradients">,
    Option<"rts", "rts", "bool", /*default=*/"false",
           "execution.replicated_tensor_sharding: shard weights, gradients "
           "and optimizer state over the replicas">,
    Option<"rtsMinElements", "rts-min-elements", "int64_t",
           /*default=*/"1024",
           "execution.rts_min_elements: tensors (layer entries) smaller than "
           "this stay replicated">,
  ];
  let dependentDialects = ["ferry::graph::GraphDialect",
                           "mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion: right before the lowering
//===----------------------------------------------------------------------===//

def FuseEpiloguesPass : Pass<"ferry-fuse-epilogues", "mlir::ModuleOp"> {
  let summary = "Folds a bias add, a scale or a bias gradient next to a "
                "graph.matmul into graph.fused_matmul";
  let description = [{
    The op next to a `graph.matmul` that the same GEMM call can compute
    becomes its epilogue: a bias add, a scale of the product (alpha), a
    power-of-two scale of an operand, a linear layer's bias gradient.

    ```mlir
    // before
    %0 = graph.matmul %x, %w {transpose_rhs} : tensor<4x16x8xf32>, tensor<32x8xf32> -> tensor<4x16x32xf32>
    %1 = graph.bias_add %0, %b : tensor<4x16x32xf32>, tensor<32xf32>
    // after
    %1 = graph.fused_matmul %x, %w bias %b {transpose_rhs} : tensor<4x16x8xf32>, tensor<32x8xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
    ```
  }];
  let options = [
    Option<"foldOperandScales", "fold-operand-scales", "bool",
           /*default=*/"true",
           "move a power-of-two scale of an operand into alpha (off for "
           "fp16 inputs, where it would change the rounding)">,
  ];
  let dependentDialects = ["ferry::graph::GraphDialect"];
}

def FuseAttentionPass : Pass<"ferry-fuse-attention", "mlir::ModuleOp"> {
  let summary = "q kᵀ, scale, softmax, dropout, · v -> graph.attention, "
                "before autodiff";
  let description = [{
    The attention chain of each layer becomes one graph.attention, whose
    gradient recomputes the probabilities from each query row's logsumexp
    (FlashAttention): the [batch, heads, seq, seq] probabilities are never
    stored, forward or backward. Runs before ferry-autodiff
    (`execution.fusion`; not with fp16 products). head_dim at most 64.

    ```mlir
    // before
    %s = graph.matmul %q, %k {transpose_rhs} : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x8xf32>
    %t = graph.scale %s by 5.000000e-01 : tensor<2x2x8x8xf32>
    %p = graph.softmax %t, %mask : tensor<2x2x8x8xf32>, tensor<2x8xf32>
    %d = graph.dropout %p, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x8x8xf32>
    %o = graph.matmul %d, %v : tensor<2x2x8x8xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
    // after
    %o, %lse = graph.attention %q, %k, %v, %mask, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs", scale = 5.000000e-01 : f64} : tensor<2x2x8x4xf32>, tensor<2x8xf32> -> tensor<2x2x8xf32>
    ```
  }];
  let dependentDialects = ["ferry::graph::GraphDialect",
                           "mlir::arith::ArithDialect"];
}

def FuseSoftmaxDropoutPass
    : Pass<"ferry-fuse-softmax-dropout", "mlir::ModuleOp"> {
  let summary = "dropout(softmax(x)) -> graph.softmax_dropout, and its "
                "gradient likewise";
  let description = [{
    The attention probabilities and their dropout in one op, and their
    gradient through the dropout in one op: one pass over the largest
    activation each way instead of two.

    ```mlir
    // before
    %p = graph.softmax %s, %mask : tensor<2x2x4x4xf32>, tensor<2x4xf32>
    %d = graph.dropout %p, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>
    // after
    %p, %d = graph.softmax_dropout %s, %mask, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "attention.probs"} : tensor<2x2x4x4xf32>, tensor<2x4xf32>
    ```
  }];
  let dependentDialects = ["ferry::graph::GraphDialect"];
}

def FuseResidualNormPass : Pass<"ferry-fuse-residual-norm", "mlir::ModuleOp"> {
  let summary = "layer_norm(add(dropout(y), residual)) -> "
                "graph.residual_layer_norm";
  let description = [{
    The end of a BERT sublayer (dropout, residual add, layer norm) in one
    op; the sum, which the layer norm's gradient reads, is its first result.

    ```mlir
    // before
    %d = graph.dropout %y, %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "ffn.output"} : tensor<2x4x8xf32>
    %s = graph.add %d, %res : tensor<2x4x8xf32>
    %o = graph.layer_norm %s, %g, %b eps 9.9999999999999998E-13 : tensor<2x4x8xf32>, tensor<8xf32>
    // after
    %s, %o = graph.residual_layer_norm %y, %res, %g, %b eps 9.9999999999999998E-13 dropout %seed, %l, %off {probability = 1.000000e-01 : f64, purpose = "ffn.output"} : tensor<2x4x8xf32>, tensor<8xf32>
    ```
  }];
  let dependentDialects = ["ferry::graph::GraphDialect"];
}

//===----------------------------------------------------------------------===//
// Lowering: graph IR -> rt programs
//===----------------------------------------------------------------------===//

// The lowering is a chain (Pipelines.cpp assembles it as ferry-lower-to-rt):
// kernel selection, buffer forwarding, placement under the budget, staging
// and prefetch, arena layout. Between them the IR is typed kernel calls on
// slices of the program's buffers (rt.state_ref, rt.alloc); the last pass
// places the buffers and rewrites every slice onto rt.arena.

def SelectKernelsPass : Pass<"ferry-select-kernels", "mlir::ModuleOp"> {
  let summary = "Lowers entry functions to rt programs of kernel calls on "
                "virtual buffers";
  let description = [{
    Each named entry function becomes an `rt.program` of typed kernel calls
    (one op per record of dialects/rt/kernels); every graph op that computes
    is one call with its shapes as integer parameters and its buffers as
    `rt.slice`s. Calls are inlined, `scf.for` becomes `rt.loop` with its own
    register and index arithmetic folds into affine expressions of the
    registers. Parameters and variables become `rt.state` ops, which a
    program uses through `rt.state_ref`; state reads and reshapes are views
    (slices), other results get an `rt.alloc` temporary. The graph and func
    ops are erased.

    ```mlir
    // before
    graph.variable @x : tensor<8x128xf32> init(zeros) hf "x"
    graph.variable @y : tensor<8x128xf32> init(zeros) hf "y"
    func.func @forward() {
      %x = graph.parameter_ref @x : tensor<8x128xf32>
      %t = graph.tanh %x : tensor<8x128xf32>
      graph.store %t into @y : tensor<8x128xf32>
      return
    }
    // after
    rt.state @x : tensor<8x128xf32> role "state" at 0 size 4096 {...}
    rt.state @y : tensor<8x128xf32> role "state" at 4096 size 4096 {...}
    rt.program @forward inputs [] registers 0 transient 0 {
      %x = rt.state_ref @x
      %y = rt.state_ref @y
      %t = rt.alloc size 4096
      %r = rt.slice %x [0] size 4096
      %r_0 = rt.slice %t [0] size 4096
      rt.tanh x(%r) out(%r_0) {count = array<i64: 1024>}
      %r_1 = rt.slice %t [0] size 4096
      %r_2 = rt.slice %y [0] size 4096
      rt.copy src(%r_1) dst(%r_2) {bytes = array<i64: 4096>}
    }
    ```
  }];
  let options = [
    ListOption<"programs", "programs", "std::string",
               "entry functions to lower (default: train_step)">,
    Option<"matmulPrecision", "matmul-precision", "ferry::MatmulPrecision",
           /*default=*/"ferry::MatmulPrecision::fp32",
           "matmul inputs (training.precision); products accumulate in fp32",
           [{::llvm::cl::values(
             clEnumValN(ferry::MatmulPrecision::fp32, "fp32", "as they are"),
             clEnumValN(ferry::MatmulPrecision::bf16, "bf16",
                        "rounded to bf16"),
             clEnumValN(ferry::MatmulPrecision::fp16, "fp16",
                        "rounded to fp16"))}]>,
    Option<"gemmWorkspace", "gemm-workspace", "int64_t", /*default=*/"0",
           "bytes of scratch the backend wants for each GEMM (the CUDA "
           "backend's cuBLASLt workspace; ferry-place-buffers shrinks it "
           "under a small budget)">,
  ];
  let dependentDialects = ["ferry::rt::RtDialect", "ferry::graph::GraphDialect"];
}

def ForwardBuffersPass : Pass<"ferry-forward-buffers", "mlir::ModuleOp"> {
  let summary = "Computes results in the buffers they are copied or "
                "accumulated into";
  let description = [{
    Two rewrites of kernel calls that save a pass over memory each:
    a GEMM (or embedding gradient) whose result only feeds `accumulate`
    into a destination adds into that destination itself (its accumulate
    flag set; only when alpha is a power of two, so the bits are the same);
    a temporary only copied into a destination is computed there. Both need
    every use of the temporary in the same loop body and nothing else
    touching the destination meanwhile.

    ```mlir
    // before
    %t = rt.alloc size 4096
    %r = rt.slice %x [0] size 4096
    %r_0 = rt.slice %t [0] size 4096
    rt.tanh x(%r) out(%r_0) {count = array<i64: 1024>}
    %r_1 = rt.slice %t [0] size 4096
    %r_2 = rt.slice %y [0] size 4096
    rt.copy src(%r_1) dst(%r_2) {bytes = array<i64: 4096>}
    // after
    %r = rt.slice %x [0] size 4096
    %r_0 = rt.slice %y [0] size 4096
    rt.tanh x(%r) out(%r_0) {count = array<i64: 1024>}
    ```
  }];
  let dependentDialects = ["ferry::rt::RtDialect"];
}

def PlanBf16StoragePass : Pass<"ferry-plan-bf16-storage", "mlir::ModuleOp"> {
  let summary = "Stores activations as bf16 where every kernel using them "
                "can take it";
  let description = [{
    Under `training.precision: bf16`: each temporary of a program and each
    stashed activation (`stash` state) becomes bf16 (2 bytes an element)
    when every call that reads or writes it declares that buffer
    an `RtBf16` rule in its kernel record for its parameters. Buffers a `copy`
    connects share the decision. Sizes, offsets and copy lengths halve, and
    each call gets the mask of its buffers stored as bf16. Parameters,
    gradients, optimizer state, inputs and metrics stay fp32. Before
    `ferry-place-buffers`, so the budget and the host link see the smaller
    sizes.

    ```mlir
    // before
    %t = rt.alloc size 4096
    %r = rt.slice %t [0] size 4096
    rt.gelu x(%x) out(%r) {count = array<i64: 1024>}
    %r_0 = rt.slice %t [0] size 4096
    rt.gemm a(%r_0) ... {..., precision = array<i64: 1>, ...}
    // after
    %t = rt.alloc size 2048 {bf16}
    %r = rt.slice %t [0] size 2048
    rt.gelu x(%x) out(%r) {bf16 = 2 : i64, count = array<i64: 1024>}
    ```
  }];
  let options = [
    Option<"storage", "storage", "std::string", /*default=*/"\"bf16\"",
           "fp32 (nothing changes) or bf16">,
  ];
  let dependentDialects = ["ferry::rt::RtDialect"];
}

def PlanBf16WeightCopiesPass
    : Pass<"ferry-plan-bf16-weight-copies", "mlir::ModuleOp"> {
  let summary = "GEMMs read a bf16 copy of each weight, rounded once where "
                "the weight is unchanged";
  let description = [{
    Under `training.precision: bf16`: a GEMM operand that is an fp32
    parameter becomes a bf16 temporary (half the bytes) made by one
    `scale` by 1 (fp32 in, bf16 out, rounded to nearest even, as the GEMM
    rounded it), placed before the outermost enclosing loop that neither
    writes the parameter nor begins or ends a phase. A loop that moves the
    operand's address (a stacked weight's layer loop) widens the copy to
    every iteration's range. GEMMs of one
    block that read the same range share a copy while nothing writes the
    parameter between them. The products are the same bits; a weight is
    rounded once per update (resident) or once per phase (phased) instead
    of in every call. Before `ferry-place-buffers`, so the budget sees the
    copies.

    ```mlir
    // before (@w is a parameter; r1 counts micro-batches)
    rt.loop r 1 count 4 {
      %r = rt.slice %w [0] size 256
      rt.gemm a(%a) b(%r) ... {..., precision = array<i64: 1>, ...}
    }
    // after
    %t = rt.alloc size 128 {bf16, label = "bf16 copy of @w"}
    %r = rt.slice %w [0] size 256
    %r_0 = rt.slice %t [0] size 128
    rt.scale x(%r) out(%r_0) {bf16 = 2 : i64, count = array<i64: 64>, factor = 1.000000e+00 : f64}
    rt.loop r 1 count 4 {
      %r_1 = rt.slice %t [0] size 128
      rt.gemm a(%a) b(%r_1) ... {bf16 = 2 : i64, ...}
    }
    ```
  }];
  let dependentDialects = ["ferry::rt::RtDialect"];
}

def PlaceBuffersPass : Pass<"ferry-place-buffers", "mlir::ModuleOp"> {
  let summary = "Places each state on the device or in host memory and "
                "chooses the prefetch, under the device budget";
  let description = [{
    In a module with phases, a state only phases touch (64 KiB or more) may
    live in host memory as a remote buffer. The pass judges each candidate
    by the plan it leads to (staging and arena layout run on a copy):
    prefetch levels are dropped until the plan fits `device-budget`
    (next layer and next micro-batch, next layer only, next micro-batch
    only, none), then states return to the device while they fit, the
    largest host-link traffic first (stashes, optimizer state, gradients,
    weights). A budget even the smallest plan exceeds is an error naming
    the peak and what is largest there. The decision is recorded as `host`
    on each remote `rt.state`, and `rt.prefetch_levels` and `rt.prefetch`
    on the module. It also owns the GEMM scratch under a budget: a GEMM
    workspace's cuBLASLt scratch (`rt.alloc ... {scratch = N}`) is cut to
    a 32nd of `device-budget` when that is smaller, in every module. A
    module without phases is only checked: its plan (the arena layout, run
    on a copy) must fit the budget, else the error says what to change.

    ```mlir
    // before
    rt.state @layer.w : tensor<2x128x128xf32> role "parameter" at 0 size 131072 {...}
    // after (device-budget=300000)
    rt.state @layer.w : tensor<2x128x128xf32> role "parameter" at 0 size 131072 {host, ...}
    module attributes {rt.prefetch = "on (next layer and next micro-batch, ...)",
                       rt.prefetch_levels = ["next-layer", "next-micro-batch", "first-layer-early"]}
    ```
  }];
  let options = [
    Option<"deviceBudget", "device-budget", "::ferry::ByteBudget",
           /*default=*/"std::nullopt",
           "the device budget in bytes (`none`: unlimited; "
           "execution.device_memory_limit or the target's memory): what a "
           "plan may use (remote buffers stay on the device while they fit), "
           "checked here for resident and phased modules alike, and a cap of "
           "a 32nd of it on each GEMM's cuBLASLt scratch">,
    Option<"prefetch", "prefetch", "bool", /*default=*/"true",
           "double-buffer staged ranges of looped phases so the next "
           "iteration's loads overlap this one's compute">,
    Option<"budgetSource", "budget-source", "std::string",
           /*default=*/"\"limit\"",
           "what set the budget, named in its errors: `limit` "
           "(execution.device_memory_limit) or `target:NAME` (the memory of "
           "execution.target NAME)">,
  ];
  let dependentDialects = ["ferry::rt::RtDialect"];
}

def StageRemoteBuffersPass
    : Pass<"ferry-stage-remote-buffers", "mlir::ModuleOp"> {
  let summary = "Stages remote buffers through device buffers, phase by "
                "phase, with prefetch";
  let description = [{
    Within each phase, every byte range of a remote buffer (`rt.state` with
    `host`) the phase touches gets a device `rt.alloc`: loaded when its
    scope starts unless first overwritten, stored back when its scope ends
    if written. The scope is the phase when the range depends only on
    registers outside it (a layer's weights), else the innermost loop whose
    counter the address uses (a micro-batch's row). The module's
    `rt.prefetch_levels` double-buffer ranges over loops: a parity register
    picks the half, the next iteration's load is issued while this one
    computes, and waits (`pending` ranges) hold both halves live.

    ```mlir
    // before (r1 counts layers)
    rt.phase_begin {phase = array<i64: 1>}
    %r = rt.slice %layer.w [0, 0, 65536] size 65536
    rt.gemm a(%a) b(%r) ...
    // after
    %t = rt.alloc size 65536 {label = "@layer.w (staged)"}
    rt.phase_begin {phase = array<i64: 1>}
    %r = rt.slice %layer.w [0, 0, 65536] size 65536
    %r_0 = rt.slice %t [0] size 65536
    rt.load src(%r) dst(%r_0) {bytes = array<i64: 65536>, event = array<i64: 0>}
    rt.wait {event = array<i64: 0>}
    %r_1 = rt.slice %t [0] size 65536
    rt.gemm a(%a) b(%r_1) ...
    ```
  }];
  let dependentDialects = ["ferry::rt::RtDialect"];
}

def LayoutArenaPass : Pass<"ferry-layout-arena", "mlir::ModuleOp"> {
  let summary = "Gives states and temporaries their arena addresses; "
                "every slice becomes a slice of rt.arena";
  let description = [{
    Device states are packed in declaration order from 0, remote buffers the
    same way in host memory; temporaries live from their first to their
    last call (whole loops when used inside and outside one) and share the
    range above the states by a best-fit plan (passes/Analysis/MemoryPlan).
    Records each program's `transient` bytes and `rt.phases` statistics and
    the module's `rt.arena_bytes`.

    ```mlir
    // before (states @x and @y of 4096 bytes)
    rt.program @forward inputs [] registers 0 transient 0 {
      %x = rt.state_ref @x
      %y = rt.state_ref @y
      %t = rt.alloc size 4096
      %r = rt.slice %x [0] size 4096
      %r_0 = rt.slice %t [0] size 4096
      rt.tanh x(%r) out(%r_0) {count = array<i64: 1024>}
      %r_1 = rt.slice %t [0] size 4096
      %r_2 = rt.slice %y [0] size 4096
      rt.gelu x(%r_1) out(%r_2) {count = array<i64: 1024>}
    }
    // after
    rt.program @forward inputs [] registers 0 transient 4096 attributes {rt.max_live_bytes = 4096 : i64} {
      %arena = rt.arena
      %r = rt.slice %arena [0] size 4096
      %r_0 = rt.slice %arena [8192] size 4096
      rt.tanh x(%r) out(%r_0) {count = array<i64: 1024>}
      %r_1 = rt.slice %arena [8192] size 4096
      %r_2 = rt.slice %arena [4096] size 4096
      rt.gelu x(%r_1) out(%r_2) {count = array<i64: 1024>}
    }
    ```
  }];
  let dependentDialects = ["ferry::rt::RtDialect"];
}

//===----------------------------------------------------------------------===//
// Debugging the driver
//===----------------------------------------------------------------------===//

def DebugFailPass : Pass<"ferry-debug-fail", "mlir::ModuleOp"> {
  let summary = "Fails, always, as a compiler bug would (for testing the "
                "reproducer path)";
  let description = [{
    In no pipeline. With FERRY_DEBUG_FAIL_PASS=1 in the environment,
    `ferry compile` appends it to the lowering, so a test can check what a
    compiler bug leaves behind: the error, MLIR's pipeline-failure note and a
    reproducer that `ferry-opt --run-reproducer` replays. (A user error such
    as an impossible budget leaves no reproducer; passes/UserError.h.)

    ```mlir
    // any module: error: ferry-debug-fail: failing on request
    ```
  }];
}

#endif // FERRY_PASSES_TD
