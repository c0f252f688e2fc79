// RUN: ferry-opt %s --split-input-file --verify-diagnostics

// Tests that a collective needs at least one replica.
func.func @f(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{replicas must be at least 1, found 0}}
  %r = graph.all_reduce %g replicas 0 : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that a reduce-scatter's result is the padded shard: ceil(10 / 4) = 3.
func.func @f(%g: tensor<2x5xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{the result must be 'tensor<3xf32>': ceil(10 / 4) elements in one dimension, found 'tensor<2xf32>'}}
  %r = graph.reduce_scatter %g replicas 4 : tensor<2x5xf32> -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// Tests that a shard has one dimension.
func.func @f(%g: tensor<2x4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{the result must be 'tensor<4xf32>': ceil(8 / 2) elements in one dimension, found 'tensor<2x2xf32>'}}
  %r = graph.reduce_scatter %g replicas 2 : tensor<2x4xf32> -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// Tests that an all-gather's input is the shard of its result.
func.func @f(%s: tensor<5xf32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{the input must be 'tensor<3xf32>': ceil(9 / 3) elements in one dimension, found 'tensor<5xf32>'}}
  %r = graph.all_gather %s replicas 3 : tensor<5xf32> -> tensor<3x3xf32>
  return %r : tensor<3x3xf32>
}

// -----

// Tests that the shard and the whole tensor have one element type.
func.func @f(%s: tensor<2xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{the shard's element type 'bf16' differs from the whole tensor's 'f32'}}
  %r = graph.all_gather %s replicas 2 : tensor<2xbf16> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that an all-reduce sums or takes the maximum, nothing else.
func.func @f(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduces by sum or max, found mean}}
  %r = graph.all_reduce %g replicas 2 over tensor reduction mean : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that Megatron's f needs at least one rank in its group.
func.func @f(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{replicas must be at least 1, found 0}}
  %r = graph.copy_to_group %g replicas 0 over tensor : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Tests that f keeps its type.
func.func @f(%g: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{all of {input, result} have same type}}
  %r = "graph.copy_to_group"(%g) {replicas = 2 : i64} : (tensor<4xf32>) -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// Tests that in a module with a mesh, a collective's group size is the
// mesh's along its axis.
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 4>} {
  func.func @f(%g: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{runs over the tensor group of 2 ranks (the module's graph.mesh), but says replicas 4}}
    %r = graph.all_reduce %g replicas 4 over tensor : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 4>} {
  func.func @f(%g: tensor<4xf32>) -> tensor<2xf32> {
    // expected-error @+1 {{runs over the data group of 4 ranks (the module's graph.mesh), but says replicas 2}}
    %r = graph.reduce_scatter %g replicas 2 : tensor<4xf32> -> tensor<2xf32>
    return %r : tensor<2xf32>
  }
}

// -----

module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  func.func @f(%x: tensor<3x2xf32>) -> tensor<3xf32> {
    // expected-error @+1 {{takes 1/2 of 'tensor<3x2xf32>', which needs the group to divide its 6 elements and a result of 3, found 'tensor<2xf32>'}}
    %p = graph.part_of_group %x replicas 2 over tensor : tensor<3x2xf32> -> tensor<2xf32>
    %q = graph.part_of_group %x replicas 2 over tensor : tensor<3x2xf32> -> tensor<3xf32>
    return %q : tensor<3xf32>
  }
}

// -----

module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  func.func @f(%x: tensor<3xf32>) -> tensor<1xf32> {
    // expected-error @+1 {{takes 1/2 of 'tensor<3xf32>', which needs the group to divide its 3 elements}}
    %p = graph.part_of_group %x replicas 2 over tensor : tensor<3xf32> -> tensor<1xf32>
    return %p : tensor<1xf32>
  }
}

// -----

// A gather whose gradient is this rank's part needs equal parts.
module attributes {graph.mesh = #graph.mesh<tensor = 2, data = 1>} {
  func.func @f(%x: tensor<2xf32>) -> tensor<3xf32> {
    // expected-error @+1 {{with replicated_gradient gathers equal parts, but its 3 elements are not a multiple of 2 replicas}}
    %g = graph.all_gather %x replicas 2 over tensor {replicated_gradient} : tensor<2xf32> -> tensor<3xf32>
    return %g : tensor<3xf32>
  }
}
