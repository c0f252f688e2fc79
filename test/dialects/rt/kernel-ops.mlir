// RUN: ferry-opt %s | FileCheck %s
// RUN: ferry-opt %s | ferry-opt | FileCheck %s
// RUN: ferry-opt %s --mlir-print-op-generic | ferry-opt | FileCheck %s

// Tests that the typed kernel ops generated from dialects/rt/kernels/*.td
// round-trip, in their own syntax and in the generic one: named !rt.range
// operands, optional ones present and absent, a rest list, and the named
// integer (register-affine) and float attributes.

// CHECK-LABEL: func.func @typed
func.func @typed(%a: !rt.range, %b: !rt.range, %c: !rt.range, %w: !rt.range) {
  // CHECK: rt.gemm a(%arg0) b(%arg1) c(%arg2) {{{.*}}alpha = 1.000000e+00 : f64{{.*}}m = array<i64: 4>{{.*}}}
  rt.gemm a(%a) b(%b) c(%c) {batch = array<i64: 1>, m = array<i64: 4>, n = array<i64: 4>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 1>, stride_a = array<i64: 32>, stride_b = array<i64: 32>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, alpha = 1.0 : f64}
  // The optional workspace and precision, given.
  // CHECK: rt.gemm a(%arg0) b(%arg1) c(%arg2) workspace(%arg3) {{{.*}}precision = array<i64: 1>{{.*}}}
  rt.gemm a(%a) b(%b) c(%c) workspace(%w) {batch = array<i64: 1>, m = array<i64: 4>, n = array<i64: 4>, k = array<i64: 8>, trans_a = array<i64: 0>, trans_b = array<i64: 1>, stride_a = array<i64: 32>, stride_b = array<i64: 32>, stride_c = array<i64: 16>, accumulate = array<i64: 0>, precision = array<i64: 1>, alpha = 1.0 : f64}
  // A rest list of tensors before `out`, one count each.
  // CHECK: rt.global_norm tensors(%arg0, %arg1) out(%arg2) {counts = [array<i64: 16>, array<i64: 32>]}
  rt.global_norm tensors(%a, %b) out(%c) {counts = [array<i64: 16>, array<i64: 32>]}
  // A per-step integer, affine in the registers (step * 8 + 2 * r1).
  // CHECK: rt.dropout x(%arg0) out(%arg1) {{{.*}}sample_offset = array<i64: 0, 8, 2>{{.*}}}
  rt.dropout x(%a) out(%b) {count = array<i64: 64>, per_sample = array<i64: 16>, seed = array<i64: 42>, purpose = array<i64: 7>, layer = array<i64: 0>, sample_offset = array<i64: 0, 8, 2>, p = 0.1 : f64}
  // A transfer with its prefetch guard.
  // CHECK: rt.load src(%arg0) dst(%arg1) {{{.*}}guard = array<i64: 0, 0, 1>{{.*}}}
  rt.load src(%a) dst(%b) {bytes = array<i64: 256>, event = array<i64: 3>, guard = array<i64: 0, 0, 1>, limit = array<i64: 4>}
  return
}
