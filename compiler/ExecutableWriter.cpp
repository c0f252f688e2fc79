//===- ExecutableWriter.cpp - rt IR -> the .fxe FlatBuffer ----------------===//
//
// A 1:1 walk of the rt module: states, then each program's instructions in
// order, a loop followed by its body. Each typed kernel op becomes its
// record's index with its buffers, integers and floats in the record's
// order (RtKernelCall.h); each buffer is the offset and size of its slice.
//
//===----------------------------------------------------------------------===//

#include "compiler/ExecutableWriter.h"

#include "dialects/rt/RtAttributes.h"
#include "dialects/rt/RtDialect.h"
#include "dialects/rt/RtKernelOps.h"
#include "runtime/executable/Executable_generated.h"
#include "training/config/Config.h"

#include "ferry/Version.h"
#include "runtime/executable/KernelTable.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace ferry;

namespace {

fxe::Role roleOf(StringRef role) {
  if (role == "parameter")
    return fxe::Role_Parameter;
  if (role == "gradient")
    return fxe::Role_Gradient;
  if (role == "optimizer_state")
    return fxe::Role_OptimizerState;
  if (role == "input")
    return fxe::Role_Input;
  if (role == "output")
    return fxe::Role_Output;
  if (role == "metric")
    return fxe::Role_Metric;
  return fxe::Role_Stash;
}

class Writer {
public:
  flatbuffers::FlatBufferBuilder fbb{1 << 16};

  flatbuffers::Offset<fxe::Affine> affine(ArrayRef<int64_t> v) {
    std::vector<int64_t> coeffs(v.begin() + 1, v.end());
    return fxe::CreateAffine(fbb, v[0], fbb.CreateVector(coeffs));
  }

  void program(Block &block,
               std::vector<flatbuffers::Offset<fxe::Instr>> &out) {
    for (Operation &op : block) {
      if (auto loop = dyn_cast<rt::LoopOp>(op)) {
        size_t header = out.size();
        out.push_back({}); // placeholder, filled after the body
        program(loop.getBody().front(), out);
        auto body = static_cast<int32_t>(out.size() - header - 1);
        fxe::InstrBuilder ib(fbb);
        ib.add_loop_count(static_cast<int64_t>(loop.getCount()));
        ib.add_loop_body(body);
        ib.add_loop_register(static_cast<int32_t>(loop.getRegisterIndex()));
        if (auto parity = loop.getParityRegister())
          ib.add_loop_parity_register(static_cast<int32_t>(*parity));
        out[header] = ib.Finish();
        continue;
      }
      if (isa<rt::ArenaOp, rt::SliceOp>(op))
        continue; // read with the calls that take them
      // A kernel call (checked in serializeExecutable): its buffers are
      // slices of the arena or host memory, in the record's order.
      rt::KernelCallParts parts =
          rt::kernelCallParts(cast<rt::KernelCallOpInterface>(op));
      std::vector<flatbuffers::Offset<fxe::Ref>> refs;
      for (Value v : parts.buffers) {
        auto slice = v.getDefiningOp<rt::SliceOp>();
        auto offset = affine(slice.getOffset());
        refs.push_back(fxe::CreateRef(fbb, offset,
                                      static_cast<int64_t>(slice.getBytes())));
      }
      std::vector<flatbuffers::Offset<fxe::Affine>> ints;
      for (const rt::AffineArray &a : parts.ints)
        ints.push_back(affine(a));
      std::vector<double> floats(parts.floats.begin(), parts.floats.end());
      auto refsV = fbb.CreateVector(refs);
      auto intsV = fbb.CreateVector(ints);
      auto floatsV = fbb.CreateVector(floats);
      fxe::InstrBuilder ib(fbb);
      ib.add_kernel(static_cast<uint16_t>(parts.kernel));
      if (parts.bf16)
        ib.add_bf16_buffers(parts.bf16);
      ib.add_buffers(refsV);
      ib.add_ints(intsV);
      ib.add_floats(floatsV);
      out.push_back(ib.Finish());
    }
  }
};

} // namespace

std::vector<uint8_t> ferry::serializeExecutable(ModuleOp module,
                                                const Config &config) {
  auto arena = module->getAttrOfType<IntegerAttr>(rt::attrs::kArenaBytes);
  auto stateBytes = module->getAttrOfType<IntegerAttr>(rt::attrs::kStateBytes);
  auto alignment = module->getAttrOfType<IntegerAttr>(rt::attrs::kAlignment);
  auto params = module->getAttrOfType<IntegerAttr>(rt::attrs::kParameterCount);
  if (!arena || !stateBytes || !alignment || !params) {
    module.emitError() << "serializeExecutable needs a module lowered by "
                          "ferry-lower-to-rt";
    return {};
  }
  // Every op of a program is a loop, a kernel call, or the arena form of
  // its buffers: slices of rt.arena (IR before the layout is refused).
  WalkResult virtualForm = module.walk([&](Operation *op) {
    if (!op->getParentOfType<rt::ProgramOp>() ||
        isa<rt::LoopOp, rt::ArenaOp, rt::KernelCallOpInterface>(op))
      return WalkResult::advance();
    auto slice = dyn_cast<rt::SliceOp>(op);
    if (slice && slice.getSource().getDefiningOp<rt::ArenaOp>())
      return WalkResult::advance();
    op->emitError() << "serializeExecutable needs every kernel's buffers "
                       "placed in the arena (slices of rt.arena); run "
                       "ferry-layout-arena";
    return WalkResult::interrupt();
  });
  if (virtualForm.wasInterrupted())
    return {};
  Writer w;
  flatbuffers::FlatBufferBuilder &fbb = w.fbb;
  std::vector<flatbuffers::Offset<fxe::State>> states;
  for (auto s : module.getOps<rt::StateOp>()) {
    auto type = cast<RankedTensorType>(s.getType());
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    std::vector<int64_t> shardOf;
    if (auto whole = s->getAttrOfType<DenseI64ArrayAttr>("shard_of"))
      shardOf.assign(whole.asArrayRef().begin(), whole.asArrayRef().end());
    fxe::Init init = s.getInit() == "normal" ? fxe::Init_Normal
                     : s.getInit() == "ones" ? fxe::Init_Ones
                                             : fxe::Init_Zeros;
    states.push_back(fxe::CreateState(
        fbb, fbb.CreateString(s.getSymName().str()), roleOf(s.getRole()),
        static_cast<int64_t>(s.getOffset()), static_cast<int64_t>(s.getBytes()),
        fbb.CreateVector(shape),
        type.getElementType().isF32()    ? fxe::DType_F32
        : type.getElementType().isBF16() ? fxe::DType_BF16
                                         : fxe::DType_I32,
        init, s.getInitStd().convertToDouble(),
        fbb.CreateString(s.getHf().str()), s.getStacked(), s.getNoWeightDecay(),
        s->hasAttr("init_rows")
            ? s->getAttrOfType<IntegerAttr>("init_rows").getInt()
            : 0,
        s->hasAttr("host"), fbb.CreateVector(shardOf),
        static_cast<int32_t>(
            s->hasAttr("shard_replicas")
                ? s->getAttrOfType<IntegerAttr>("shard_replicas").getInt()
                : 0),
        static_cast<int32_t>(
            s->hasAttr("split_dim")
                ? s->getAttrOfType<IntegerAttr>("split_dim").getInt()
                : 0),
        static_cast<int32_t>(
            s->hasAttr("split_parts")
                ? s->getAttrOfType<IntegerAttr>("split_parts").getInt()
                : 0)));
  }
  std::vector<flatbuffers::Offset<fxe::Program>> programs;
  for (auto p : module.getOps<rt::ProgramOp>()) {
    std::vector<flatbuffers::Offset<fxe::Instr>> instrs;
    w.program(p.getBody().front(), instrs);
    std::vector<std::string> inputs;
    for (Attribute a : p.getInputs())
      inputs.push_back(cast<StringAttr>(a).str());
    std::vector<std::string> phaseNames;
    if (auto names = p->getAttrOfType<ArrayAttr>(rt::attrs::kPhaseNames))
      for (Attribute a : names)
        phaseNames.push_back(cast<StringAttr>(a).str());
    std::vector<flatbuffers::Offset<fxe::Phase>> phases;
    if (auto plan = p->getAttrOfType<ArrayAttr>(rt::attrs::kPhases))
      for (Attribute a : plan) {
        auto d = cast<DictionaryAttr>(a);
        auto i64 = [&](StringRef key) {
          return d.getAs<IntegerAttr>(key).getInt();
        };
        phases.push_back(fxe::CreatePhase(
            fbb, fbb.CreateString(d.getAs<StringAttr>("name").str()),
            i64("executions"), i64("bytes_in"), i64("bytes_out"),
            d.getAs<FloatAttr>("flops").getValueAsDouble(), i64("peak_bytes"),
            d.get("collective_bytes") ? i64("collective_bytes") : 0));
      }
    programs.push_back(fxe::CreateProgram(
        fbb, fbb.CreateString(p.getSymName().str()),
        static_cast<int32_t>(p.getRegisters()),
        fbb.CreateVectorOfStrings(inputs),
        static_cast<int64_t>(p.getTransient()), fbb.CreateVector(instrs),
        fbb.CreateVectorOfStrings(phaseNames), fbb.CreateVector(phases),
        p->hasAttr(rt::attrs::kCollectiveBytes)
            ? p->getAttrOfType<IntegerAttr>(rt::attrs::kCollectiveBytes)
                  .getInt()
            : 0));
  }
  auto root = fxe::CreateExecutable(
      fbb,
      fbb.CreateString(std::string(FERRY_VERSION) + " (" + FERRY_GIT_HASH +
                       ")"),
      fbb.CreateString(config.yamlText()),
      fbb.CreateString(config.execution.backend), arena.getInt(),
      stateBytes.getInt(), alignment.getInt(), params.getInt(),
      fbb.CreateVector(states), fbb.CreateVector(programs),
      module->hasAttr(rt::attrs::kHostBytes)
          ? module->getAttrOfType<IntegerAttr>(rt::attrs::kHostBytes).getInt()
          : 0,
      fbb.CreateString(
          module->hasAttr(rt::attrs::kPrefetch)
              ? module->getAttrOfType<StringAttr>(rt::attrs::kPrefetch).str()
              : ""));
  fbb.Finish(root);
  return std::vector<uint8_t>(fbb.GetBufferPointer(),
                              fbb.GetBufferPointer() + fbb.GetSize());
}
