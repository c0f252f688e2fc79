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
  if (s->dtype() != fxe::DType_F32 || s->init() == fxe::Init_Zeros) {
    std::memset(out, 0, static_cast<size_t>(s->bytes()));
    return;
  }
  // Each element takes the value of its place in the whole tensor, keyed by
  // (layer, element of the layer's entry), so a sharded or split run starts
  // from the weights one process would; a shard's padding and the rows past
  // init_rows (the padded vocabulary) start at zero.
  const StateLayout l = stateLayoutOf(s);
  const std::vector<int64_t> &whole = l.wholeShape;
  int64_t layers = s->stacked() ? whole.front() : 1;
  int64_t entry = l.wholeElements / layers;
  int64_t real = l.wholeElements;
  if (s->init_rows() > 0 && !s->stacked() && !whole.empty())
    real = std::min(real, s->init_rows() * (l.wholeElements / whole.front()));
  const bool ones = s->init() == fxe::Init_Ones;
  const uint32_t purpose = random::purposeHash(s->name()->str());
  const auto std = static_cast<float>(s->init_std());
  float *data = static_cast<float *>(out);
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < l.elements; ++e) {
    int64_t w = l.wholeIndex(e, rank, tensorRank);
    data[e] = w < 0 || w >= real ? 0.0f
              : ones             ? 1.0f
                                 : std * random::normal(seed, purpose,
                                                        static_cast<uint32_t>(w / entry),
                                                        static_cast<uint64_t>(w % entry));
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
