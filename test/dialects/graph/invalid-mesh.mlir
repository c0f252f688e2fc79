// RUN: ferry-opt %s --split-input-file --verify-diagnostics

// The rules of the mesh and sharding attributes (dialects/graph/GraphMesh.cpp)
// and of sharded declarations.

// Tests that a mesh has a rank on each axis.
// expected-error @+1 {{a mesh has at least one rank on each axis, found tensor = 0, data = 2}}
module attributes {graph.mesh = #graph.mesh<tensor = 0, data = 2>} {
}

// -----

// Tests that graph.mesh is a mesh, on the module.
// expected-error @+1 {{graph.mesh must be a #graph.mesh<tensor = T, data = D> on the module}}
module attributes {graph.mesh = 2 : i64} {
}

// -----

// Tests that a split names a dimension.
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  // expected-error @+1 {{split names a dimension (0 or more), found -2}}
  graph.parameter @w : tensor<8xf32> init(zeros) hf "w" sharding #graph.sharding<split = -2>
}

// -----

// Tests that a sharding is not both split and partial.
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  // expected-error @+1 {{a sharding is split or partial, not both}}
  graph.parameter @w : tensor<8xf32> init(zeros) hf "w" sharding #graph.sharding<split = 0, partial = true>
}

// -----

// Tests that a sharded declaration needs the module's mesh.
module {
  // expected-error @+1 {{is sharded, but its module has no graph.mesh}}
  graph.parameter @w : tensor<8xf32> init(zeros) hf "w" sharding #graph.sharding<split = 0>
}

// -----

// Tests that a declaration is split, never partial or replicated.
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  // expected-error @+1 {{a declaration's sharding splits a dimension, found #graph.sharding<partial = true>}}
  graph.parameter @w : tensor<8xf32> init(zeros) hf "w" sharding #graph.sharding<partial = true>
}

// -----

// Tests that the split dimension exists.
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  // expected-error @+1 {{splits dimension 2 of 'tensor<8x4xf32>', which has 2 dimensions}}
  graph.parameter @w : tensor<8x4xf32> init(zeros) hf "w" sharding #graph.sharding<split = 2>
}

// -----

// Tests that a stacked declaration's layer dimension is not split.
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  // expected-error @+1 {{is stacked: its dimension 0 is the layer, which is never split; split another}}
  graph.parameter @w : tensor<2x8xf32> init(zeros) hf "w.{}" stacked sharding #graph.sharding<split = 0>
}

// -----

// Tests that the tensor group's size divides the split dimension of a whole
// (not yet partitioned) declaration.
module attributes {graph.mesh = #graph.mesh<tensor = 4, data = 1>} {
  // expected-error @+1 {{splits dimension 1 (size 6) into 4 tensor-parallel parts, which do not divide it}}
  graph.variable @m : tensor<2x6xf32> init(zeros) hf "m.{}" stacked sharding #graph.sharding<split = 1>
}

// -----

// Tests that a part sharded over the replicas (graph.shard_of) is split as
// its part's shape says, not as the flat shard's: dimension 2 of the part
// [2, 3, 4] is valid, dimension 3 is not.
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 2, partitioned = true>} {
  graph.parameter @ok : tensor<2x6xf32> init(zeros) hf "ok.{}" stacked sharding #graph.sharding<split = 2> {graph.shard_of = array<i64: 2, 3, 4>, graph.shard_replicas = 2 : i64}
  // expected-error @+1 {{splits dimension 3 of 'tensor<2x3x4xf32>', which has 3 dimensions}}
  graph.parameter @w : tensor<2x6xf32> init(zeros) hf "w.{}" stacked sharding #graph.sharding<split = 3> {graph.shard_of = array<i64: 2, 3, 4>, graph.shard_replicas = 2 : i64}
}
