// What `ferry train` and `ferry eval` share: a config compiled on the fly, or
// a compiled executable (FILE.fxe) with the overrides it can still take.
#pragma once

#include "runtime/config/Config.h"
#include "runtime/executable/ExecutableFile.h"

#include <optional>
#include <string>
#include <vector>

namespace ferry::cli {

struct LoadedExecutable {
  Config config;
  std::optional<ExecutableFile> exe;
  double compileMs = 0;
};

// Loads `input` (a config or FILE.fxe) with `overrides`. Returns nullopt after
// printing an error (a compile error, an override a compiled executable
// cannot take, a ferry built without the compiler given a config). Throws
// ConfigError / ExecutableError for the caller to print.
std::optional<LoadedExecutable>
loadExecutable(const std::string &input,
               const std::vector<std::string> &overrides);

} // namespace ferry::cli
