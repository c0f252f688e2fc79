// RUN: ferry-opt %s --split-input-file --verify-diagnostics

// The rt stage's attributes (dialects/rt/RtAttributes.h) are checked by the
// dialect's verifier, wherever the IR comes from. First, every one of them
// where it belongs: this verifies.
module attributes {rt.recompute, rt.prefetch_levels = ["next-layer", "next-micro-batch", "first-layer-early"], rt.prefetch = "next layer and next micro-batch", rt.arena_bytes = 1024 : i64, rt.state_bytes = 512 : i64, rt.host_bytes = 0 : i64, rt.alignment = 64 : i64, rt.parameter_count = 32 : i64} {
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phase_names = ["layer"], rt.phases = [{name = "layer", executions = 1 : i64}], rt.max_live_bytes = 448 : i64, rt.collective_bytes = 0 : i64} {
  }
}

// -----

// expected-error @+1 {{rt.recompute must be a unit attribute on the module, found "yes"}}
module attributes {rt.recompute = "yes"} {
}

// -----

// A level ferry-stage-remote-buffers does not know.
// expected-error @+1 {{rt.prefetch_levels must be an array of distinct prefetch levels (next-layer, next-micro-batch, first-layer-early) on the module, found ["next-layer", "next-phase"]}}
module attributes {rt.prefetch_levels = ["next-layer", "next-phase"]} {
}

// -----

// expected-error @+1 {{rt.prefetch_levels must be an array of distinct prefetch levels}}
module attributes {rt.prefetch_levels = ["next-layer", "next-layer"]} {
}

// -----

// expected-error @+1 {{rt.prefetch must be a string on the module, found 1 : i64}}
module attributes {rt.prefetch = 1 : i64} {
}

// -----

// expected-error @+1 {{rt.arena_bytes must be an integer >= 0 on the module, found -1 : i64}}
module attributes {rt.arena_bytes = -1 : i64} {
}

// -----

// expected-error @+1 {{rt.alignment must be an integer > 0 on the module, found 0 : i64}}
module attributes {rt.alignment = 0 : i64} {
}

// -----

// A module attribute on a program.
module {
  // expected-error @+1 {{rt.recompute must be a unit attribute on the module, found unit}}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.recompute} {
  }
}

// -----

// A program attribute on the module.
// expected-error @+1 {{rt.phase_names must be an array of strings on an rt.program, found ["layer"]}}
module attributes {rt.phase_names = ["layer"]} {
}

// -----

module {
  // expected-error @+1 {{rt.phase_names must be an array of strings on an rt.program, found [0]}}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phase_names = [0 : i64]} {
  }
}

// -----

module {
  // expected-error @+1 {{rt.phases must be an array of dictionaries on an rt.program, found ["layer"]}}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.phases = ["layer"]} {
  }
}

// -----

module {
  // expected-error @+1 {{rt.max_live_bytes must be an integer >= 0 on an rt.program, found 1.000000e+00 : f64}}
  rt.program @train_step inputs [] registers 1 transient 0 attributes {rt.max_live_bytes = 1.0 : f64} {
  }
}

// -----

// expected-error @+1 {{unknown attribute rt.budget (the rt stage's attributes are listed in dialects/rt/RtAttributes.h)}}
module attributes {rt.budget = 1 : i64} {
}
