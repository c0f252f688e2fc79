// The dropout key of an element of packed rows (model.max_sequences_per_pack):
// which (sample, element) of random::randomBits' stream decides whether it
// is kept. Unpacked, element e of row b is element e of sample
// sample_offset + b. Packed, a row holds several samples, and each token
// carries its sample's key and its position within that sample
// (`dropout_keys` [batch, seq, 2]), so an element takes the decision the
// same element of the unpacked sample takes: the masks of a packed run are
// the unpacked run's. Shared by the CPU and CUDA kernels.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define FERRY_KEYS_HOST_DEVICE __host__ __device__
#else
#define FERRY_KEYS_HOST_DEVICE
#endif

namespace ferry {

struct PackedDropoutKeys {
  enum Layout : int32_t {
    Tokens = 1,   // a sample is [seq, width]: element e is (token e / width,
                  // e % width); hidden states
    Attention = 2 // a sample is [heads, seq, seq]: element e is (head, query,
                  // key); the attention probabilities
  };
  // [batch, seq, 2]: per token (its sample's key, its position in the
  // sample). Null: unpacked rows.
  const int32_t *keys = nullptr;
  int64_t seq = 0;
  int32_t layout = Tokens;
  int64_t width = 1; // Tokens: elements a token

  FERRY_KEYS_HOST_DEVICE bool packed() const { return keys != nullptr; }

  // Element e of row b: the sample and element of its decision.
  FERRY_KEYS_HOST_DEVICE void map(int64_t b, int64_t e, uint64_t &sample,
                                  uint64_t &element) const {
    const int32_t *row = keys + b * seq * 2;
    if (layout == Attention) {
      int64_t head = e / (seq * seq), query = (e / seq) % seq, key = e % seq;
      sample = static_cast<uint32_t>(row[2 * query]);
      element = static_cast<uint64_t>((head * seq + row[2 * query + 1]) * seq +
                                      row[2 * key + 1]);
    } else {
      int64_t token = e / width, within = e % width;
      sample = static_cast<uint32_t>(row[2 * token]);
      element = static_cast<uint64_t>(row[2 * token + 1] * width + within);
    }
  }
};

} // namespace ferry
