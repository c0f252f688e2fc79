//===- PrefetchLevels.cpp - named prefetch levels (Staging.h) -------------===//
//
// The levels' names in the IR (`rt.prefetch_levels`) and in the note
// `ferry plan` shows (`rt.prefetch`).
//
//===----------------------------------------------------------------------===//

#include "passes/lowering/Staging.h"

#include "dialects/rt/RtAttributes.h"

using namespace ferry::lowering;

std::string PrefetchLevels::describe() const {
  if (nextLayer && nextMicroBatch)
    return firstLayerEarly ? "next layer and next micro-batch, the first "
                             "layer during the phase before its loop"
                           : "next layer and next micro-batch";
  if (nextLayer)
    return "next layer only";
  if (nextMicroBatch)
    return "next micro-batch only";
  return "none";
}

std::vector<std::string> PrefetchLevels::names() const {
  std::vector<std::string> v;
  if (nextLayer)
    v.push_back(ferry::rt::attrs::kNextLayer.str());
  if (nextMicroBatch)
    v.push_back(ferry::rt::attrs::kNextMicroBatch.str());
  if (firstLayerEarly)
    v.push_back(ferry::rt::attrs::kFirstLayerEarly.str());
  return v;
}

std::optional<PrefetchLevels>
PrefetchLevels::fromNames(const std::vector<std::string> &names) {
  PrefetchLevels l;
  for (const std::string &n : names) {
    if (n == ferry::rt::attrs::kNextLayer)
      l.nextLayer = true;
    else if (n == ferry::rt::attrs::kNextMicroBatch)
      l.nextMicroBatch = true;
    else if (n == ferry::rt::attrs::kFirstLayerEarly)
      l.firstLayerEarly = true;
    else
      return std::nullopt;
  }
  return l;
}
