// ferry's modules (libferry-compiler.so, libferry-run.so,
// libferry-backend-cuda.so) live beside the executable, or in its
// ../lib/ferry in an installed layout. openModuleFile finds and opens one.
#pragma once

#include <string>

namespace ferry {

// dlopen()s `file` from the first of those directories that holds it, with
// RTLD_NOW (a missing symbol is an error here, not mid-run) plus `flags`
// (RTLD_LOCAL or RTLD_GLOBAL). On failure returns null with `missing` set
// and `why` = "looked for A, B" when no directory holds it, else `why` =
// dlopen's error. The module stays loaded for the life of the process.
void *openModuleFile(const std::string &file, int flags, std::string &why,
                     bool &missing);

} // namespace ferry
