// libFuzzer target: the YAML config loader (yaml-cpp, the schema, duplicate
// keys, every value's type and range, the relations between keys).
#include "training/config/Config.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  try {
    ferry::Config config = ferry::parseConfig(text, "fuzz.yaml", {});
    // What a loaded config is used for next: its canonical text parses back
    // to the same config.
    std::string canonical = config.yamlText();
    ferry::Config again = ferry::parseConfig(canonical, "canonical.yaml", {});
    if (again.canonicalText() != config.canonicalText())
      __builtin_trap();
  } catch (const ferry::ConfigError &) {
  }
  return 0;
}
