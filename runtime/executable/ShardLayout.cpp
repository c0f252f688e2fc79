// Checks and derives a sharded or split state's layout (ShardLayout.h).
#include "runtime/executable/ShardLayout.h"

#include "runtime/Error.h"

#include <fmt/format.h>

namespace {

// The error for a state whose layout fields disagree (`how`: "sharded",
// "split").
ferry::RuntimeError damaged(const ferry::fxe::State *s, const char *how,
                            const char *why) {
  return ferry::RuntimeError(
      fmt::format("state {} is {} inconsistently ({}); the executable is "
                  "damaged: recompile it",
                  s->name()->str(), how, why));
}

} // namespace

std::optional<ferry::ShardLayout> ferry::shardLayoutOf(const fxe::State *s) {
  if (s->shard_replicas() <= 1 &&
      (!s->shard_of() || s->shard_of()->size() == 0))
    return std::nullopt;
  auto bad = [&](const char *why) { return damaged(s, "sharded", why); };
  ShardLayout l;
  l.replicas = s->shard_replicas();
  if (l.replicas < 2 || !s->shard_of() || s->shard_of()->size() == 0)
    throw bad("a shard needs 2 or more replicas and the whole shape");
  l.wholeShape.assign(s->shard_of()->begin(), s->shard_of()->end());
  int64_t whole = 1;
  for (int64_t d : l.wholeShape)
    if (d < 1 || __builtin_mul_overflow(whole, d, &whole))
      throw bad("a bad whole shape");
  l.layers = s->stacked() ? l.wholeShape.front() : 1;
  l.entry = whole / l.layers;
  l.shard = (l.entry + l.replicas - 1) / l.replicas;
  int64_t bytes = 0;
  if (__builtin_mul_overflow(l.layers * l.shard, int64_t{4}, &bytes) ||
      bytes != s->bytes())
    throw bad("its bytes are not the shards of its whole shape");
  return l;
}

std::optional<ferry::SplitLayout> ferry::splitLayoutOf(const fxe::State *s) {
  if (s->split_parts() == 0)
    return std::nullopt;
  auto bad = [&](const char *why) { return damaged(s, "split", why); };
  SplitLayout l;
  l.parts = s->split_parts();
  l.dim = s->split_dim();
  // The part's shape: a sharded part's is its shard_of (the shards' own
  // bytes are shardLayoutOf's to check).
  const bool sharded = s->shard_replicas() > 1;
  const flatbuffers::Vector<int64_t> *shape =
      sharded ? s->shard_of() : s->shape();
  int64_t rank = shape ? shape->size() : 0;
  if (l.parts < 2 || l.dim < (s->stacked() ? 1 : 0) || l.dim >= rank)
    throw bad("a split needs 2 or more parts of a dimension it has, never "
              "the layer dimension");
  if (s->dtype() != fxe::DType_F32)
    throw bad("only fp32 states are split");
  l.wholeShape.assign(shape->begin(), shape->end());
  int64_t elements = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = l.wholeShape[i];
    if (d < 1 || __builtin_mul_overflow(elements, d, &elements))
      throw bad("a bad shape");
    if (i > l.dim)
      inner *= d;
  }
  l.elements = elements;
  l.block = l.wholeShape[l.dim] * inner;
  if (__builtin_mul_overflow(l.wholeShape[l.dim], l.parts,
                             &l.wholeShape[l.dim]))
    throw bad("a bad shape");
  if (!sharded && elements * 4 != s->bytes())
    throw bad("its bytes are not its shape's");
  return l;
}

ferry::StateLayout ferry::stateLayoutOf(const fxe::State *s) {
  StateLayout l;
  l.shard = shardLayoutOf(s);
  l.split = splitLayoutOf(s);
  l.elements = s->bytes() / (s->dtype() == fxe::DType_BF16 ? 2 : 4);
  if (l.split)
    l.wholeShape = l.split->wholeShape;
  else if (l.shard)
    l.wholeShape = l.shard->wholeShape;
  else if (s->shape())
    l.wholeShape.assign(s->shape()->begin(), s->shape()->end());
  l.wholeElements = 1;
  for (int64_t d : l.wholeShape)
    l.wholeElements *= d; // checked above, or by the executable's validation
  return l;
}
