//===- CompilerLoader.cpp - opens the compiler module on first use --------===//
//
// See CompilerApi.h. A program that links the compiler (ferry-cudasim)
// exports ferry_compiler_api itself; `ferry` opens libferry-compiler.so.
//
//===----------------------------------------------------------------------===//

#include "compiler/CompilerApi.h"

#include "ferry/Version.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>

using namespace ferry;

namespace {

using CompilerEntry = const CompilerApi *(*)();

const CompilerApi *load(std::string &why) {
  if (auto entry = reinterpret_cast<CompilerEntry>(
          dlsym(RTLD_DEFAULT, FERRY_COMPILER_MODULE_ENTRY)))
    return entry();
  std::error_code ec;
  std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string tried;
  for (const std::filesystem::path &dir :
       {exe.parent_path(), exe.parent_path().parent_path() / "lib" / "ferry"}) {
    std::filesystem::path path = dir / FERRY_COMPILER_MODULE_FILE;
    std::error_code missing;
    if (ec || !std::filesystem::exists(path, missing)) {
      tried += (tried.empty() ? "" : ", ") + path.string();
      continue;
    }
    // RTLD_NOW: a missing symbol is an error here, not a crash mid-compile.
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      why = dlerror();
      return nullptr;
    }
    auto entry = reinterpret_cast<CompilerEntry>(
        dlsym(handle, FERRY_COMPILER_MODULE_ENTRY));
    const CompilerApi *api = entry ? entry() : nullptr;
    // The module reads this program's Config and its executables are
    // cached under this build's key: only the same build will do.
    std::string build = FERRY_VERSION " (" FERRY_GIT_HASH ")";
    if (!api || api->version != kCompilerApiVersion ||
        api->configSize != sizeof(Config) || build != api->build) {
      why = path.string() + " is not the compiler module of this ferry " +
            build + (api ? std::string(" (it is ") + api->build + ")" : "") +
            "; rebuild ferry and its modules together";
      return nullptr;
    }
    return api; // the module stays loaded for the life of the process
  }
  why = "the compiler module " + std::string(FERRY_COMPILER_MODULE_FILE) +
        " is not installed (looked for " + tried +
        "); rebuild ferry, or use a compiled executable (FILE.fxe)";
  return nullptr;
}

} // namespace

const CompilerApi *ferry::openCompiler(std::string &why) {
  static std::once_flag once;
  static const CompilerApi *api = nullptr;
  static std::string error;
  std::call_once(once, [] { api = load(error); });
  why = error;
  return api;
}
