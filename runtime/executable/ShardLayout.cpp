// Checks and derives a sharded state's layout (ShardLayout.h).
#include "runtime/executable/ShardLayout.h"

#include "runtime/Error.h"

#include <fmt/format.h>

std::optional<ferry::ShardLayout> ferry::shardLayoutOf(const fxe::State *s) {
  if (s->shard_replicas() <= 1 && (!s->shard_of() || s->shard_of()->size() == 0))
    return std::nullopt;
  auto bad = [&](const char *why) {
    return RuntimeError(fmt::format(
        "state {} is sharded inconsistently ({}); the executable is damaged: "
        "recompile it",
        s->name()->str(), why));
  };
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
