// RUN: ferry-opt %s --split-input-file --verify-diagnostics

// The typed kernel ops' own checks (ODS, from the records): every required
// parameter present, integers as register-affine arrays.

func.func @missing(%x: !rt.range) {
  // expected-error @+1 {{requires attribute 'value'}}
  rt.fill dst(%x) {count = array<i64: 4>}
  return
}

// -----

func.func @empty(%x: !rt.range) {
  // expected-error @+1 {{'rt.fill' op attribute 'count' failed to satisfy constraint}}
  rt.fill dst(%x) {count = array<i64>, value = 0.0 : f64}
  return
}
