// ferry-datagen --from-text (FromText.cpp): its options and entry point.
#pragma once

#include "training/text/PretrainingData.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::datagen {

struct FromTextOptions {
  std::vector<std::string> inputs; // files and directories
  std::string vocab, output, format = "hdf5";
  bool cased = false, verbose = false;
  int64_t shard = 0, shards = 1; // --shard i/n: input files k with k % n == i
  // --pack: rows of up to this many sequences (0: one sample a row).
  int64_t pack = 0;
  text::SampleOptions samples;
};

// Writes output/part-KKKKK-of-NNNNN.<format> for each input file k of this
// shard. Throws data::DataError for bad input.
int runFromText(const FromTextOptions &options);

} // namespace ferry::datagen
