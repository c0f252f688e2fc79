// RUN: ferry-opt %s --split-input-file --verify-diagnostics

// Tests that a kernel name must be listed in dialects/rt/kernels/*.td.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{unknown kernel 'conv2d' (dialects/rt/kernels/*.td lists them)}}
  rt.kernel "conv2d" buffers [array<i64: 64, 0>] ints [] floats []
}

// -----

// Tests that a buffer has at least a byte count and an offset.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{buffers must be array<i64: bytes, offset, coefficients...> with bytes > 0, found array<i64: 64>}}
  rt.kernel "copy" buffers [array<i64: 64>, array<i64: 64, 0>] ints [array<i64: 64>] floats []
}

// -----

// Tests that a buffer has a positive byte count.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{buffers must be array<i64: bytes, offset, coefficients...> with bytes > 0, found array<i64: 0, 64>}}
  rt.kernel "copy" buffers [array<i64: 64, 0>, array<i64: 0, 64>] ints [array<i64: 64>] floats []
}

// -----

// Tests that a buffer is an i64 array, not another attribute.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{buffers must be array<i64: bytes, offset, coefficients...> with bytes > 0, found 64 : i64}}
  rt.kernel "fill" buffers [64] ints [array<i64: 16>] floats [0.0]
}

// -----

// Tests that an integer parameter has at least its constant term.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{ints must be array<i64: constant, coefficients...>, found array<i64>}}
  rt.kernel "fill" buffers [array<i64: 64, 0>] ints [array<i64>] floats [0.0]
}

// -----

// Tests that states live at module level.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{expects parent op 'builtin.module'}}
  rt.state @w : tensor<4xf32> role "parameter" at 0 size 16 {hf = "w", init = "zeros", init_std = 0.0 : f64}
}

// -----

// Tests that a call on virtual buffers names its buffer first.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{buffers must be array<i64: buffer id, bytes, offset, coefficients...> with bytes > 0, found array<i64: 64, 0>}}
  rt.call "fill" buffers [array<i64: 64, 0>] ints [array<i64: 16>] floats [0.0]
}

// -----

// Tests that buffer ids are not negative.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{buffers must be array<i64: buffer id, bytes, offset, coefficients...> with bytes > 0, found array<i64: -1, 64, 0>}}
  rt.call "fill" buffers [array<i64: -1, 64, 0>] ints [array<i64: 16>] floats [0.0]
}

// -----

// Tests that rt.call follows the kernel's calling convention too.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{kernel 'gemm' takes at least}}
  rt.call "gemm" buffers [array<i64: 0, 64, 0>] ints [] floats []
}

// -----

// Tests that temporaries are declared in a program.
module {
  // expected-error @+1 {{expects parent op 'rt.program'}}
  rt.buffer 3 size 64
}

// -----

// Tests that a temporary has a positive size.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{size must be positive, found -64}}
  rt.buffer 3 size -64
}

// -----

// Tests that a workspace's scratch lies within it.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{scratch must be in [0, size], found 128}}
  rt.buffer 3 size 64 {scratch = 128 : i64}
}

// -----

// Tests that buffer ids stay in range.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{id must be in [0, 16777216), found -1}}
  rt.buffer -1 size 64
}

// -----

// Tests that only buffers its kernel record declares RtBf16 are stored as
// bf16: gelu's x and out are, fill's dst is not.
rt.program @p inputs [] registers 0 transient 0 {
  rt.kernel "gelu" buffers [array<i64: 32, 0>, array<i64: 32, 64>] ints [array<i64: 16>] floats [] {bf16 = 3 : i64}
  // expected-error @+1 {{stores buffer 0 as bf16, which kernel 'fill' cannot take (its record in dialects/rt/kernels has no RtBf16 rule for it)}}
  rt.kernel "fill" buffers [array<i64: 32, 0>] ints [array<i64: 8>] floats [0.0] {bf16 = 1 : i64}
}

// -----

// Tests that the mask names only the call's buffers.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{stores buffer 2 as bf16, which kernel 'gelu' cannot take (its record in dialects/rt/kernels has no RtBf16 rule for it)}}
  rt.kernel "gelu" buffers [array<i64: 32, 0>, array<i64: 32, 64>] ints [array<i64: 16>] floats [] {bf16 = 4 : i64}
}

// -----

// Tests that the mask is a positive integer.
rt.program @p inputs [] registers 0 transient 0 {
  // expected-error @+1 {{bf16 must be a positive integer (a mask of the buffers stored as bf16), found "x"}}
  rt.kernel "gelu" buffers [array<i64: 32, 0>, array<i64: 32, 64>] ints [array<i64: 16>] floats [] {bf16 = "x"}
}
