//===- GraphAttributes.cpp - verifying the graph stage's attributes -------===//
//
// The `graph` dialect's verifier hooks for the discardable attributes of
// GraphAttributes.h: MLIR calls them for every attribute named `graph.*`, on
// operations, function arguments and function results, each time the IR is
// verified (after parsing and between passes).
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphAttributes.h"
#include "dialects/graph/GraphDialect.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace ferry::graph;

namespace {

enum class Kind { Integer, Float, String };

// The keys of graph.training and their kinds: what the builder writes from
// the config and ferry-insert-optimizer reads.
struct TrainingKey {
  StringRef name;
  Kind kind;
};
constexpr TrainingKey kTrainingKeys[] = {
    {"micro_batch_size", Kind::Integer},
    {"global_batch_size", Kind::Integer},
    {"data_parallel", Kind::Integer},
    {"seed", Kind::Integer},
    {"optimizer", Kind::String},
    {"lr", Kind::Float},
    {"beta1", Kind::Float},
    {"beta2", Kind::Float},
    {"epsilon", Kind::Float},
    {"weight_decay", Kind::Float},
    {"clip_norm", Kind::Float},
    {"lr_schedule", Kind::String},
    {"warmup_steps", Kind::Integer},
    {"start_warmup_step", Kind::Integer},
    {"power", Kind::Float},
    {"total_steps", Kind::Integer},
};

// The names of graph.entry, in the order of the Entry enum.
constexpr StringRef kEntryNames[] = {"forward", "forward_grad", "forward_eval",
                                     "train_step", "eval_step"};

StringRef kindName(Kind kind) {
  switch (kind) {
  case Kind::Integer:
    return "an integer";
  case Kind::Float:
    return "a float";
  case Kind::String:
    return "a string";
  }
  return "";
}

// A signless integer of at most 64 bits (or an index): what the passes read
// with getInt().
IntegerAttr plainInteger(Attribute value) {
  auto integer = dyn_cast<IntegerAttr>(value);
  if (!integer)
    return {};
  Type type = integer.getType();
  if (type.isIndex() ||
      (type.isSignlessInteger() && type.getIntOrFloatBitWidth() <= 64))
    return integer;
  return {};
}

bool hasKind(Attribute value, Kind kind) {
  switch (kind) {
  case Kind::Integer:
    return static_cast<bool>(plainInteger(value));
  case Kind::Float:
    return isa<FloatAttr>(value);
  case Kind::String:
    return isa<StringAttr>(value);
  }
  return false;
}

LogicalResult verifyTraining(Operation *op, Attribute value) {
  auto dict = dyn_cast<DictionaryAttr>(value);
  if (!isa<ModuleOp>(op) || !dict)
    return op->emitError() << attrs::kTraining
                           << " must be a dictionary on the module";
  for (const TrainingKey &key : kTrainingKeys) {
    Attribute entry = dict.get(key.name);
    if (!entry || !hasKind(entry, key.kind))
      return op->emitError() << attrs::kTraining << "." << key.name
                             << " must be " << kindName(key.kind)
                             << " (the builder writes it from the config)";
  }
  for (NamedAttribute entry : dict) {
    if (llvm::none_of(kTrainingKeys, [&](const TrainingKey &key) {
          return key.name == entry.getName().getValue();
        }))
      return op->emitError() << attrs::kTraining << " has an unknown key '"
                             << entry.getName().getValue() << "'";
  }
  return success();
}

LogicalResult verifyEntry(Operation *op, Attribute value) {
  auto fn = dyn_cast<func::FuncOp>(op);
  auto name = dyn_cast<StringAttr>(value);
  if (!fn || !name)
    return op->emitError() << attrs::kEntry
                           << " must be a string on a func.func";
  if (!parseEntry(name.getValue()))
    return op->emitError() << attrs::kEntry << " '" << name.getValue()
                           << "' is not one of "
                           << llvm::join(ArrayRef<StringRef>(kEntryNames),
                                         ", ");
  auto module = fn->getParentOfType<ModuleOp>();
  if (!module)
    return success();
  for (auto other : module.getOps<func::FuncOp>()) {
    if (other != fn && other->getAttr(attrs::kEntry) == name)
      return op->emitError()
             << attrs::kEntry << " '" << name.getValue() << "' is also on @"
             << other.getSymName() << "; each part is played by one function";
  }
  return success();
}

LogicalResult verifyPositiveInteger(Operation *op, NamedAttribute attribute,
                                    StringRef where, bool onHere) {
  IntegerAttr value = plainInteger(attribute.getValue());
  if (!onHere || !value || value.getInt() < 1)
    return op->emitError() << attribute.getName().getValue()
                           << " must be a positive integer on " << where;
  return success();
}

LogicalResult verifyShard(Operation *op, NamedAttribute attribute) {
  bool isDecl = isa<ParameterOp, VariableOp>(op);
  if (!op->hasAttr(attrs::kShardOf) || !op->hasAttr(attrs::kShardReplicas))
    return op->emitError() << attrs::kShardOf << " and "
                           << attrs::kShardReplicas << " come together";
  if (attribute.getName() == attrs::kShardReplicas) {
    IntegerAttr replicas = plainInteger(attribute.getValue());
    if (!isDecl || !replicas || replicas.getInt() < 2)
      return op->emitError()
             << attrs::kShardReplicas
             << " must be an integer of at least 2 on a graph.parameter or "
                "graph.variable";
    return success();
  }
  if (!isDecl || !isa<DenseI64ArrayAttr>(attribute.getValue()))
    return op->emitError() << attrs::kShardOf
                           << " must be an array of i64 (the whole shape) on "
                              "a graph.parameter or graph.variable";
  return success();
}

LogicalResult verifyName(Operation *op, NamedAttribute attribute,
                         StringRef what) {
  auto name = dyn_cast<StringAttr>(attribute.getValue());
  if (!isa<func::FuncOp>(op) || !name || name.getValue().empty())
    return op->emitError() << attribute.getName().getValue()
                           << " must be a non-empty string naming the " << what
                           << ", on a func.func";
  return success();
}

} // namespace

StringRef ferry::graph::entryName(Entry entry) {
  return kEntryNames[static_cast<size_t>(entry)];
}

std::optional<Entry> ferry::graph::parseEntry(StringRef name) {
  for (auto [index, entryName] : llvm::enumerate(kEntryNames))
    if (entryName == name)
      return static_cast<Entry>(index);
  return std::nullopt;
}

void ferry::graph::markEntry(func::FuncOp fn, Entry entry) {
  fn->setAttr(attrs::kEntry,
              StringAttr::get(fn.getContext(), entryName(entry)));
}

func::FuncOp ferry::graph::lookupEntry(ModuleOp module, Entry entry) {
  StringRef name = entryName(entry);
  for (auto fn : module.getOps<func::FuncOp>())
    if (auto mark = fn->getAttrOfType<StringAttr>(attrs::kEntry);
        mark && mark.getValue() == name)
      return fn;
  return {};
}

LogicalResult GraphDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == attrs::kTraining)
    return verifyTraining(op, attribute.getValue());
  if (name == attrs::kEntry)
    return verifyEntry(op, attribute.getValue());
  if (name == attrs::kModel) {
    if (!isa<ModuleOp>(op) || !isa<StringAttr>(attribute.getValue()))
      return op->emitError() << name << " must be a string on the module";
    return success();
  }
  if (name == attrs::kVocabSize || name == attrs::kPaddedVocabSize)
    return verifyPositiveInteger(op, attribute, "the module",
                                 isa<ModuleOp>(op));
  if (name == attrs::kMicroBatches) {
    if (!isa<scf::ForOp>(op) || !isa<UnitAttr>(attribute.getValue()))
      return op->emitError() << name
                             << " must be a unit attribute on an "
                                "scf.for";
    return success();
  }
  if (name == attrs::kInitRows)
    return verifyPositiveInteger(op, attribute,
                                 "a graph.parameter or graph.variable",
                                 isa<ParameterOp, VariableOp>(op));
  if (name == attrs::kShardOf || name == attrs::kShardReplicas)
    return verifyShard(op, attribute);
  if (name == attrs::kMesh) {
    if (!isa<ModuleOp>(op) || !isa<MeshAttr>(attribute.getValue()))
      return op->emitError() << name
                             << " must be a #graph.mesh<tensor = T, data = D> "
                                "on the module";
    return success();
  }
  if (name == attrs::kRecompute) {
    if (!isa<func::CallOp>(op) || !isa<UnitAttr>(attribute.getValue()))
      return op->emitError() << name
                             << " must be a unit attribute on a "
                                "func.call";
    return success();
  }
  return op->emitError() << "unknown attribute " << name
                         << " (the graph stage's attributes are listed in "
                            "dialects/graph/GraphAttributes.h)";
}

LogicalResult GraphDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                     unsigned,
                                                     NamedAttribute attribute) {
  if (attribute.getName() == attrs::kInput)
    return verifyName(op, attribute, "program input");
  return op->emitError() << "unknown argument attribute "
                         << attribute.getName().getValue();
}

LogicalResult
GraphDialect::verifyRegionResultAttribute(Operation *op, unsigned, unsigned,
                                          NamedAttribute attribute) {
  if (attribute.getName() == attrs::kOutput)
    return verifyName(op, attribute, "program output");
  return op->emitError() << "unknown result attribute "
                         << attribute.getName().getValue();
}
