// RUN: ferry-opt %s --verify-diagnostics --ferry-shard-parameters='tensor-parallel=2 shardings=w=split(2)'
// RUN: not ferry-opt %s --ferry-shard-parameters='tensor-parallel=4 shardings=v=split(0)' 2>&1 | FileCheck %s --check-prefix=DIVIDE
// RUN: not ferry-opt %s --ferry-shard-parameters='tensor-parallel=2 shardings=w=split(0),nothing.*=replicated' 2>&1 | FileCheck %s --check-prefix=UNUSED
// RUN: not ferry-opt %s --ferry-shard-parameters='tensor-parallel=2 shardings=w=split(x)' 2>&1 | FileCheck %s --check-prefix=SYNTAX

// Tests ferry-shard-parameters' errors, each the user's (the config's
// execution.tensor_sharding), naming the rule and the parameter: a
// dimension one layer's entry lacks (the first run, by -verify-diagnostics);
// a size the tensor group does not divide; a pattern that matches nothing;
// a sharding that is not split(D) or replicated.
// DIVIDE: error: execution.tensor_sharding: 'v=split(0)' splits dimension 0 of v (size 6) over execution.tensor_parallel 4, which does not divide it
// UNUSED: error: execution.tensor_sharding: the pattern 'nothing.*' matches no parameter; the parameters are w, v
// SYNTAX: error: execution.tensor_sharding entry 'w=split(x)' splits dimension 'x', which is not a dimension number (0 to 7)

// expected-error @below {{execution.tensor_sharding: 'w=split(2)' splits dimension 2 of w, whose layer entry has 2 dimensions; split a dimension below 2 or make it replicated}}
module {
graph.parameter @w : tensor<2x8x4xf32> init(normal, 2.000000e-02) hf "l.{}.w" stacked
graph.parameter @v : tensor<6x4xf32> init(normal, 2.000000e-02) hf "v"
}
