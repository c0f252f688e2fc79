// What every backend shares: state lookup, program entry, initial values.
// Choosing a backend is the registry's (backend/Registry.h).
#include "runtime/backend/Backend.h"

#include "runtime/comm/Communicator.h"
#include "runtime/executable/KernelTable.h"
#include "runtime/executable/ShardLayout.h"
#include "runtime/random/Philox.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

using namespace ferry;

Backend::Backend(const fxe::Executable &executable, comm::Communicator *group)
    : exe_(executable), group_(group) {
  if (!group_) {
    ownGroup_ = comm::singleProcess();
    group_ = ownGroup_.get();
  }
}

Backend::~Backend() = default;

int Backend::tensorRank() const { return tensor_ ? tensor_->rank() : 0; }

bool Backend::firstOfMesh() const {
  return group_->rank() == 0 && tensorRank() == 0;
}

const fxe::State *Backend::state(const std::string &name) const {
  for (const fxe::State *s : *exe_.states())
    if (s->name()->str() == name)
      return s;
  return nullptr;
}

void ferry::initialStateValues(const fxe::State *s, uint64_t seed, void *out,
                               int rank, int tensorRank) {
  if (std::optional<SplitLayout> split = splitLayoutOf(s)) {
    // This tensor rank's part: each element takes the value of its place
    // in the whole tensor, keyed as below, so a split run starts from the
    // weights one process would.
    float *data = static_cast<float *>(out);
    if (s->init() != fxe::Init_Normal) {
      std::fill(data, data + split->elements,
                s->init() == fxe::Init_Ones ? 1.0f : 0.0f);
      return;
    }
    const std::vector<int64_t> &whole = split->wholeShape;
    int64_t all = 1;
    for (int64_t d : whole)
      all *= d;
    int64_t entry = s->stacked() ? all / whole.front() : all;
    int64_t width = whole.size() > 1 ? all / whole.front() : 1;
    uint32_t purpose = random::purposeHash(s->name()->str());
    auto std = static_cast<float>(s->init_std());
    for (int64_t e = 0; e < split->elements; ++e) {
      int64_t w = split->wholeIndex(e, tensorRank);
      bool padded = s->init_rows() > 0 && !s->stacked() &&
                    w / width >= s->init_rows(); // the padded vocabulary
      data[e] = padded ? 0.0f
                       : std * random::normal(seed, purpose,
                                              static_cast<uint32_t>(w / entry),
                                              static_cast<uint64_t>(w % entry));
    }
    return;
  }
  if (std::optional<ShardLayout> shard = shardLayoutOf(s)) {
    // This replica's shard of each entry: element e of the entry is shard
    // element e - rank * shard; the whole tensor's values, keyed as below.
    float *data = static_cast<float *>(out);
    std::fill(data, data + shard->layers * shard->shard, 0.0f);
    if (s->init() == fxe::Init_Zeros)
      return;
    uint32_t purpose = random::purposeHash(s->name()->str());
    int64_t width = shard->wholeShape.size() > 1
                        ? shard->entry / shard->wholeShape[s->stacked() ? 1 : 0]
                        : 1;
    int64_t realElements = shard->entry;
    if (s->init_rows() > 0 && !s->stacked() && width > 0)
      realElements = std::min(realElements, s->init_rows() * width);
    auto std = static_cast<float>(s->init_std());
    for (int64_t l = 0; l < shard->layers; ++l)
      for (int64_t k = 0; k < shard->shard; ++k) {
        int64_t e = static_cast<int64_t>(rank) * shard->shard + k;
        if (e >= realElements)
          break; // padding, and the padded vocabulary's rows: zeros
        data[l * shard->shard + k] =
            s->init() == fxe::Init_Ones
                ? 1.0f
                : std * random::normal(seed, purpose, static_cast<uint32_t>(l),
                                       static_cast<uint64_t>(e));
      }
    return;
  }
  if (s->dtype() != fxe::DType_F32 || s->init() == fxe::Init_Zeros) {
    std::memset(out, 0, static_cast<size_t>(s->bytes()));
    return;
  }
  float *data = static_cast<float *>(out);
  int64_t n = s->bytes() / 4;
  if (s->init() == fxe::Init_Ones) {
    std::fill(data, data + n, 1.0f);
    return;
  }
  uint32_t purpose = random::purposeHash(s->name()->str());
  int64_t layers = s->stacked() ? s->shape()->Get(0) : 1;
  int64_t perLayer = n / layers;
  auto std = static_cast<float>(s->init_std());
#pragma omp parallel for schedule(static)
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t e = 0; e < perLayer; ++e)
      data[l * perLayer + e] =
          std * random::normal(seed, purpose, static_cast<uint32_t>(l),
                               static_cast<uint64_t>(e));
  // Rows past init_rows (the padded vocabulary) start at zero.
  if (s->init_rows() > 0 && !s->stacked() && s->shape()->size() > 0 &&
      s->init_rows() < s->shape()->Get(0)) {
    int64_t width = n / s->shape()->Get(0);
    std::fill(data + s->init_rows() * width, data + n, 0.0f);
  }
}

const fxe::Program &Backend::program(const std::string &name,
                                     const std::vector<int64_t> &inputs,
                                     std::vector<int64_t> &registers) const {
  for (const fxe::Program *p : *exe_.programs()) {
    if (p->name()->str() != name)
      continue;
    size_t declared = p->inputs() ? p->inputs()->size() : 0;
    if (inputs.size() != declared)
      throw RuntimeError("program " + name + " takes " +
                         std::to_string(declared) + " inputs, given " +
                         std::to_string(inputs.size()));
    registers.assign(std::max<int32_t>(p->registers(), 1), 0);
    std::copy(inputs.begin(), inputs.end(), registers.begin());
    return *p;
  }
  throw RuntimeError("the executable has no program '" + name + "'");
}
