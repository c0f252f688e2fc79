// Replicated tensor sharding's state layout (runtime/executable/ShardLayout)
// and sharded initialisation: each replica's shard of a normal-initialised
// weight (stacked, and with a padded vocabulary) holds exactly the whole
// tensor's values at its elements, bit for bit, and zeros past the end; so
// does each replica's shard of each tensor rank's part (both layouts
// composed); inconsistent shard fields (a damaged executable) are refused
// by name.
#include "runtime/executable/ShardLayout.h"
#include "runtime/Error.h"
#include "runtime/backend/Backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

using namespace ferry;

namespace {

struct StateSpec {
  std::vector<int64_t> shape, shardOf;
  int32_t replicas = 0;
  bool stacked = false;
  int64_t initRows = 0;
  int64_t bytes = 0;
  int32_t splitDim = 0, splitParts = 0;
};

// One state in a FlatBuffer that lives as long as the builder.
const fxe::State *makeState(flatbuffers::FlatBufferBuilder &fbb,
                            const StateSpec &spec) {
  auto state = fxe::CreateState(
      fbb, fbb.CreateString("layer.w"), fxe::Role_Parameter, 0, spec.bytes,
      fbb.CreateVector(spec.shape), fxe::DType_F32, fxe::Init_Normal, 0.02,
      fbb.CreateString("w.{}"), spec.stacked, false, spec.initRows, false,
      fbb.CreateVector(spec.shardOf), spec.replicas, spec.splitDim,
      spec.splitParts);
  fbb.Finish(state);
  return flatbuffers::GetRoot<fxe::State>(fbb.GetBufferPointer());
}

int64_t product(const std::vector<int64_t> &v) {
  int64_t p = 1;
  for (int64_t d : v)
    p *= d;
  return p;
}

void expectShardsOfWhole(StateSpec whole, int32_t replicas) {
  whole.bytes = product(whole.shape) * 4;
  flatbuffers::FlatBufferBuilder wb;
  const fxe::State *w = makeState(wb, whole);
  std::vector<float> all(static_cast<size_t>(product(whole.shape)));
  initialStateValues(w, 42, all.data());
  int64_t layers = whole.stacked ? whole.shape.front() : 1;
  int64_t entry = product(whole.shape) / layers;
  int64_t shard = (entry + replicas - 1) / replicas;
  StateSpec sharded = whole;
  sharded.shardOf = whole.shape;
  sharded.replicas = replicas;
  sharded.shape = whole.stacked ? std::vector<int64_t>{layers, shard}
                                : std::vector<int64_t>{shard};
  sharded.bytes = layers * shard * 4;
  flatbuffers::FlatBufferBuilder sb;
  const fxe::State *s = makeState(sb, sharded);
  std::optional<ShardLayout> l = shardLayoutOf(s);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->layers, layers);
  EXPECT_EQ(l->entry, entry);
  EXPECT_EQ(l->shard, shard);
  for (int32_t r = 0; r < replicas; ++r) {
    std::vector<float> mine(static_cast<size_t>(layers * shard), -1.0f);
    initialStateValues(s, 42, mine.data(), r);
    for (int64_t layer = 0; layer < layers; ++layer)
      for (int64_t k = 0; k < shard; ++k) {
        int64_t e = r * shard + k;
        float want = e < entry ? all[layer * entry + e] : 0.0f;
        ASSERT_EQ(mine[layer * shard + k], want)
            << "replica " << r << " layer " << layer << " element " << e;
      }
  }
}

// The whole tensor `whole` split along `dim` into `parts`, each part
// sharded over `replicas`: every (replica, tensor rank) pair's elements hold
// the whole tensor's values at the places stateLayoutOf maps them to, and
// together they cover every element of the whole tensor exactly once.
void expectShardsOfPartsOfWhole(StateSpec whole, int32_t dim, int32_t parts,
                                int32_t replicas) {
  whole.bytes = product(whole.shape) * 4;
  flatbuffers::FlatBufferBuilder wb;
  std::vector<float> all(static_cast<size_t>(product(whole.shape)));
  initialStateValues(makeState(wb, whole), 42, all.data());
  std::vector<int64_t> part = whole.shape;
  part[dim] /= parts;
  int64_t layers = whole.stacked ? part.front() : 1;
  int64_t entry = product(part) / layers;
  int64_t shard = (entry + replicas - 1) / replicas;
  StateSpec spec = whole;
  spec.shardOf = part;
  spec.replicas = replicas;
  spec.splitDim = dim;
  spec.splitParts = parts;
  spec.shape = whole.stacked ? std::vector<int64_t>{layers, shard}
                             : std::vector<int64_t>{shard};
  spec.bytes = layers * shard * 4;
  flatbuffers::FlatBufferBuilder sb;
  const fxe::State *s = makeState(sb, spec);
  StateLayout l = stateLayoutOf(s);
  ASSERT_TRUE(l.shard && l.split);
  EXPECT_EQ(l.wholeShape, whole.shape);
  EXPECT_EQ(l.wholeElements, product(whole.shape));
  EXPECT_EQ(l.elements, layers * shard);
  std::vector<int> seen(all.size(), 0);
  for (int32_t t = 0; t < parts; ++t)
    for (int32_t r = 0; r < replicas; ++r) {
      std::vector<float> mine(static_cast<size_t>(l.elements), -1.0f);
      initialStateValues(s, 42, mine.data(), r, t);
      for (int64_t e = 0; e < l.elements; ++e) {
        int64_t w = l.wholeIndex(e, r, t);
        bool padding = e % shard + r * shard >= entry;
        ASSERT_EQ(w < 0, padding) << "replica " << r << " rank " << t;
        ASSERT_EQ(mine[e], w < 0 ? 0.0f : all[w])
            << "replica " << r << " rank " << t << " element " << e;
        if (w >= 0)
          ++seen[w];
      }
    }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1),
            static_cast<int64_t>(seen.size()));
}

} // namespace

TEST(ShardLayout, ShardsOfTensorParallelPartsHoldTheWholeTensorsValues) {
  // Stacked [2, 6, 5] split along dimension 1: parts [2, 3, 5], entries of
  // 15 sharded over 2 replicas (8 each, one padding).
  expectShardsOfPartsOfWhole({{2, 6, 5}, {}, 0, true, 0, 0}, 1, 2, 2);
  // The same along its last dimension, over 4 replicas (4 each, one
  // padding).
  expectShardsOfPartsOfWhole({{2, 3, 4}, {}, 0, true, 0, 0}, 2, 2, 4);
  // A padded vocabulary [8, 3] (7 real rows) split along its rows: parts
  // [4, 3] over 5 replicas (3 each, 3 padding); the last part's last row is
  // the padded one, zero.
  expectShardsOfPartsOfWhole({{8, 3}, {}, 0, false, 7, 0}, 0, 2, 5);
}

TEST(ShardLayout, ShardsHoldTheWholeTensorsInitialValues) {
  // Stacked: 2 layers of 5x3 over 4 replicas (shard 4, one padding).
  expectShardsOfWhole({{2, 5, 3}, {}, 0, true, 0, 0}, 4);
  // A padded vocabulary: rows past init_rows start at zero in every shard.
  expectShardsOfWhole({{7, 4}, {}, 0, false, 5, 0}, 3);
}

TEST(ShardLayout, UnshardedStatesHaveNoLayout) {
  flatbuffers::FlatBufferBuilder fbb;
  EXPECT_FALSE(shardLayoutOf(makeState(fbb, {{4, 4}, {}, 0, false, 0, 64})));
}

TEST(ShardLayout, InconsistentShardFieldsAreRefused) {
  auto message = [](const StateSpec &spec) {
    flatbuffers::FlatBufferBuilder fbb;
    try {
      shardLayoutOf(makeState(fbb, spec));
    } catch (const RuntimeError &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // Bytes that are not the shards of the whole shape.
  EXPECT_EQ(message({{5}, {4, 4}, 2, false, 0, 20}),
            "state layer.w is sharded inconsistently (its bytes are not the "
            "shards of its whole shape); the executable is damaged: "
            "recompile it");
  // One replica, or no whole shape.
  EXPECT_NE(message({{8}, {4, 4}, 1, false, 0, 32}).find("2 or more replicas"),
            std::string::npos);
  EXPECT_NE(message({{8}, {}, 2, false, 0, 32}).find("2 or more replicas"),
            std::string::npos);
  EXPECT_NE(message({{8}, {4, -4}, 2, false, 0, 32}).find("bad whole shape"),
            std::string::npos);
}
