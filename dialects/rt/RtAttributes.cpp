//===- RtAttributes.cpp - the rt dialect's attribute verifier -------------===//
//
// Checks each rt.* attribute (RtAttributes.h) where it sits: on the module or
// on an rt.program, with its kind. An unknown rt.* name is an error.
//
//===----------------------------------------------------------------------===//

#include "dialects/rt/RtAttributes.h"
#include "dialects/rt/RtDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace ferry::rt;

namespace {

enum class Kind {
  Unit,
  String,
  Strings,
  PrefetchLevels,
  Count,
  Positive,
  Dicts
};
enum class Place { Module, Program };

struct Rule {
  StringRef name;
  Kind kind;
  Place place;
};

const Rule kRules[] = {
    {attrs::kRecompute, Kind::Unit, Place::Module},
    {attrs::kPrefetchLevels, Kind::PrefetchLevels, Place::Module},
    {attrs::kPrefetch, Kind::String, Place::Module},
    {attrs::kArenaBytes, Kind::Count, Place::Module},
    {attrs::kStateBytes, Kind::Count, Place::Module},
    {attrs::kHostBytes, Kind::Count, Place::Module},
    {attrs::kAlignment, Kind::Positive, Place::Module},
    {attrs::kParameterCount, Kind::Count, Place::Module},
    {attrs::kPhaseNames, Kind::Strings, Place::Program},
    {attrs::kPhases, Kind::Dicts, Place::Program},
    {attrs::kMaxLiveBytes, Kind::Count, Place::Program},
    {attrs::kCollectiveBytes, Kind::Count, Place::Program},
};

StringRef describe(Kind kind) {
  switch (kind) {
  case Kind::Unit:
    return "a unit attribute";
  case Kind::String:
    return "a string";
  case Kind::Strings:
    return "an array of strings";
  case Kind::PrefetchLevels:
    return "an array of distinct prefetch levels (next-layer, "
           "next-micro-batch, first-layer-early)";
  case Kind::Count:
    return "an integer >= 0";
  case Kind::Positive:
    return "an integer > 0";
  case Kind::Dicts:
    return "an array of dictionaries";
  }
  return "";
}

bool holds(Kind kind, Attribute value) {
  auto strings = [&](bool levels) {
    auto list = dyn_cast<ArrayAttr>(value);
    if (!list)
      return false;
    llvm::SmallDenseSet<StringRef> seen;
    for (Attribute a : list) {
      auto s = dyn_cast<StringAttr>(a);
      if (!s)
        return false;
      StringRef v = s.getValue();
      if (levels && ((v != attrs::kNextLayer && v != attrs::kNextMicroBatch &&
                      v != attrs::kFirstLayerEarly) ||
                     !seen.insert(v).second))
        return false;
    }
    return true;
  };
  auto integer = [&](int64_t least) {
    auto i = dyn_cast<IntegerAttr>(value);
    return i && i.getType().isSignlessInteger() && i.getInt() >= least;
  };
  switch (kind) {
  case Kind::Unit:
    return isa<UnitAttr>(value);
  case Kind::String:
    return isa<StringAttr>(value);
  case Kind::Strings:
    return strings(false);
  case Kind::PrefetchLevels:
    return strings(true);
  case Kind::Count:
    return integer(0);
  case Kind::Positive:
    return integer(1);
  case Kind::Dicts: {
    auto list = dyn_cast<ArrayAttr>(value);
    return list && llvm::all_of(list, [](Attribute a) {
             return isa<DictionaryAttr>(a);
           });
  }
  }
  return false;
}

} // namespace

LogicalResult RtDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  for (const Rule &rule : kRules) {
    if (rule.name != name)
      continue;
    bool placed =
        rule.place == Place::Module ? isa<ModuleOp>(op) : isa<ProgramOp>(op);
    if (!placed || !holds(rule.kind, attribute.getValue()))
      return op->emitError()
             << name << " must be " << describe(rule.kind) << " on "
             << (rule.place == Place::Module ? "the module" : "an rt.program")
             << ", found " << attribute.getValue();
    return success();
  }
  return op->emitError() << "unknown attribute " << name
                         << " (the rt stage's attributes are listed in "
                            "dialects/rt/RtAttributes.h)";
}
