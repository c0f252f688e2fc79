// RUN: ferry-opt %s --ferry-shard-parameters='tensor-parallel=2 data-parallel=3 shardings=layer.*.weight=split(0),layer.up.bias=split(0),layer.down.weight=split(1),head.*=split(1),head.w=replicated' | FileCheck %s

// Tests ferry-shard-parameters: the mesh on the module, and each
// parameter's split from the last rule its name matches, counted in one
// layer's entry (a stacked declaration's dimension + 1); a parameter no rule
// splits, or whose last matching rule says replicated, has no sharding.
// CHECK: module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 3>}
// CHECK: graph.parameter @layer.up.weight : tensor<2x8x4xf32> {{.*}} stacked sharding <split = 1>
// CHECK: graph.parameter @layer.up.bias : tensor<2x8xf32> {{.*}} stacked no_weight_decay sharding <split = 1>
// CHECK: graph.parameter @layer.down.weight : tensor<2x4x8xf32> {{.*}} stacked sharding <split = 2>
// CHECK: graph.parameter @layer.down.bias : tensor<2x4xf32> {{.*}} stacked no_weight_decay{{$}}
// CHECK: graph.parameter @head.w : tensor<6x4xf32> {{.*}}"head.w"{{$}}
// CHECK: graph.parameter @head.v : tensor<6x4xf32> {{.*}} sharding <split = 1>
graph.parameter @layer.up.weight : tensor<2x8x4xf32> init(normal, 2.000000e-02) hf "l.{}.up.weight" stacked
graph.parameter @layer.up.bias : tensor<2x8xf32> init(zeros) hf "l.{}.up.bias" stacked no_weight_decay
graph.parameter @layer.down.weight : tensor<2x4x8xf32> init(normal, 2.000000e-02) hf "l.{}.down.weight" stacked
graph.parameter @layer.down.bias : tensor<2x4xf32> init(zeros) hf "l.{}.down.bias" stacked no_weight_decay
graph.parameter @head.w : tensor<6x4xf32> init(normal, 2.000000e-02) hf "head.w"
graph.parameter @head.v : tensor<6x4xf32> init(normal, 2.000000e-02) hf "head.v"
