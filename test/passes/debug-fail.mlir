// RUN: ferry-opt %s --ferry-debug-fail -verify-diagnostics

// Tests ferry-debug-fail alone: it fails on any module, as a compiler bug
// would (the driver's reproducer test in test/e2e/ir-dumps.test uses it).

// expected-error @below {{ferry-debug-fail: failing on request}}
module {
}
