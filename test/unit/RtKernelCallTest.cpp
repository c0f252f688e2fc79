// Tests RtKernelCall.h on every kernel record: a call built from its
// parameters in record order (required, optional and rest buffers and
// integers, floats, a bf16 mask) verifies and reads back the same, which is
// what the executable writer encodes; and a call that does not match its
// record is refused with a message, not built.

#include "dialects/rt/RtKernelCall.h"
#include "dialects/rt/RtDialect.h"
#include "dialects/rt/RtKernelOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace ferry;

namespace {

struct Fixture {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  OpBuilder b{&context};
  Value arena;

  Fixture() {
    context.loadDialect<rt::RtDialect>();
    module = ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());
    auto program = rt::ProgramOp::create(b, b.getUnknownLoc(), "p",
                                         b.getStrArrayAttr({}), 2, 0);
    // Phase markers index these (the program's verifier checks it).
    program->setAttr("rt.phase_names", b.getStrArrayAttr({"a", "b"}));
    b.createBlock(&program.getBody());
    arena = rt::ArenaOp::create(b, b.getUnknownLoc(),
                                b.getType<rt::BufferType>(), false);
  }

  // A distinct range per buffer, so a reordering shows.
  Value range(int64_t i) {
    return rt::SliceOp::create(
        b, b.getUnknownLoc(), b.getType<rt::RangeType>(), arena,
        b.getDenseI64ArrayAttr({64 * i, 0, 8 * i}), 16 + i);
  }
};

// Every parameter a record declares: optional ones present, rest lists of
// two. Integers are distinct and register-affine, but for a phase marker's
// phase, a constant index of the program's phase names.
rt::KernelCallParts fullParts(Fixture &f, kernels::Kernel k) {
  const kernels::Signature &sig = kernels::signature(k);
  rt::KernelCallParts parts;
  parts.kernel = k;
  int64_t n = 0;
  for (const kernels::BufferParameter &p : sig.buffers)
    for (int i = 0; i < (p.kind == kernels::Parameter::Rest ? 2 : 1); ++i)
      parts.buffers.push_back(f.range(n++));
  int64_t v = 1;
  for (const kernels::Parameter &p : sig.ints)
    for (int i = 0; i < (p.kind == kernels::Parameter::Rest ? 2 : 1); ++i) {
      parts.ints.push_back({v, 0, v + 1});
      v += 3;
    }
  if (k == kernels::Kernel::PhaseBegin || k == kernels::Kernel::PhaseEnd)
    parts.ints = {{1}};
  for (size_t i = 0; i < sig.floats.size(); ++i)
    parts.floats.push_back(0.25 * static_cast<double>(i + 1));
  return parts;
}

TEST(RtKernelCall, EveryKernelRoundTripsInRecordOrder) {
  for (uint16_t index = 0; index < kernels::kKernelCount; ++index) {
    Fixture f;
    auto k = static_cast<kernels::Kernel>(index);
    SCOPED_TRACE(kernels::kernelName(k));
    rt::KernelCallParts parts = fullParts(f, k);
    FailureOr<rt::KernelCallOpInterface> call =
        rt::createKernelCall(f.b, f.b.getUnknownLoc(), parts);
    ASSERT_TRUE(succeeded(call));
    EXPECT_EQ(call->getKernelIndex(), index);
    EXPECT_EQ((*call)->getName().getStringRef(),
              std::string("rt.") + kernels::kernelName(k));
    EXPECT_TRUE(succeeded(verify(*f.module)));
    rt::KernelCallParts back = rt::kernelCallParts(*call);
    EXPECT_EQ(back.kernel, k);
    EXPECT_EQ(back.buffers, parts.buffers);
    EXPECT_EQ(back.ints, parts.ints);
    EXPECT_EQ(back.floats, parts.floats);
    EXPECT_EQ(back.bf16, 0u);
  }
}

TEST(RtKernelCall, OptionalParametersMayBeLeftOff) {
  for (uint16_t index = 0; index < kernels::kKernelCount; ++index) {
    Fixture f;
    auto k = static_cast<kernels::Kernel>(index);
    SCOPED_TRACE(kernels::kernelName(k));
    const kernels::Signature &sig = kernels::signature(k);
    rt::KernelCallParts parts = fullParts(f, k);
    parts.buffers.resize(sig.minBuffers);
    parts.ints.resize(sig.minInts);
    FailureOr<rt::KernelCallOpInterface> call =
        rt::createKernelCall(f.b, f.b.getUnknownLoc(), parts);
    ASSERT_TRUE(succeeded(call));
    EXPECT_TRUE(succeeded(verify(*f.module)));
    rt::KernelCallParts back = rt::kernelCallParts(*call);
    EXPECT_EQ(back.buffers, parts.buffers);
    EXPECT_EQ(back.ints, parts.ints);
  }
}

TEST(RtKernelCall, TheBf16MaskReadsBack) {
  Fixture f;
  rt::KernelCallParts parts = fullParts(f, kernels::Kernel::Gelu);
  parts.bf16 = 3;
  FailureOr<rt::KernelCallOpInterface> call =
      rt::createKernelCall(f.b, f.b.getUnknownLoc(), parts);
  ASSERT_TRUE(succeeded(call));
  EXPECT_TRUE(succeeded(verify(*f.module)));
  EXPECT_EQ(rt::kernelCallParts(*call).bf16, 3u);
}

TEST(RtKernelCall, AMismatchIsRefusedWithAMessage) {
  Fixture f;
  std::string message;
  ScopedDiagnosticHandler handler(&f.context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  rt::KernelCallParts parts = fullParts(f, kernels::Kernel::Gemm);
  parts.ints.resize(3); // gemm needs ten
  EXPECT_TRUE(failed(rt::createKernelCall(f.b, f.b.getUnknownLoc(), parts)));
  EXPECT_NE(message.find("kernel 'gemm' with 3 integers does not match its "
                         "record"),
            std::string::npos)
      << message;
  parts = fullParts(f, kernels::Kernel::Gemm);
  parts.floats.clear();
  EXPECT_TRUE(failed(rt::createKernelCall(f.b, f.b.getUnknownLoc(), parts)));
  EXPECT_NE(message.find("with 0 floats"), std::string::npos) << message;
  parts = fullParts(f, kernels::Kernel::Gemm);
  parts.buffers.resize(2);
  EXPECT_TRUE(failed(rt::createKernelCall(f.b, f.b.getUnknownLoc(), parts)));
  EXPECT_NE(message.find("with 2 buffers"), std::string::npos) << message;
}

} // namespace
