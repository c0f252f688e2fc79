// What the config loader's files share and nothing else sees: raw values as
// the YAML file or a --set override gave them, and the checks that run once
// every key has its typed value (ConfigRelations.cpp).
#pragma once

#include "training/config/Config.h"

#include <map>
#include <string>

namespace ferry::config_detail {

// A value as written in the file or on the command line.
struct Raw {
  std::string text;
  bool null = false;
  std::string origin; // "file.yaml:3:12" or "--set k=v"
};

using RawValues = std::map<std::string, Raw>;

// Refuses values beyond the sane limits (model dimensions far past any
// published BERT), relations between keys that cannot hold (heads that do not
// divide the hidden size, batches that do not split) and tensors too large to
// address; fills what "auto" resolves to. Throws ConfigError naming the file
// or the --set override, the key, the value, the limit and the fix.
void validateRelations(Config &c, const RawValues &raw);

} // namespace ferry::config_detail
