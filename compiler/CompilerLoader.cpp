//===- CompilerLoader.cpp - opens the compiler module on first use --------===//
//
// See CompilerApi.h. A program that links the compiler (ferry-cudasim)
// exports ferry_compiler_api itself; `ferry` opens libferry-compiler.so.
//
//===----------------------------------------------------------------------===//

#include "compiler/CompilerApi.h"

#include "ferry/Version.h"
#include "runtime/ModuleFile.h"

#include <dlfcn.h>

#include <mutex>

using namespace ferry;

namespace {

using CompilerEntry = const CompilerApi *(*)();

const CompilerApi *load(std::string &why) {
  if (auto entry = reinterpret_cast<CompilerEntry>(
          dlsym(RTLD_DEFAULT, FERRY_COMPILER_MODULE_ENTRY)))
    return entry();
  std::string error;
  bool missing = false;
  void *handle =
      openModuleFile(FERRY_COMPILER_MODULE_FILE, RTLD_LOCAL, error, missing);
  if (!handle) {
#ifdef FERRY_COMPILER_MODULE_BUILT
    why = missing ? "the compiler module " +
                        std::string(FERRY_COMPILER_MODULE_FILE) +
                        " is not installed (" + error +
                        "); rebuild ferry, or use a compiled executable "
                        "(FILE.fxe)"
                  : error;
#else
    // A runtime-only build (the GPU kit's): only the cache can answer.
    why = "this ferry was built without the compiler "
          "(-DFERRY_BUILD_COMPILER=OFF), and the executable is not in the "
          "executable cache (FERRY_CACHE_DIR): compile the same config and "
          "settings into that cache with a ferry that has the compiler "
          "(`ferry compile CONFIG --set ...`, the same build), or use a "
          "compiled executable (FILE.fxe)";
    (void)missing;
#endif
    return nullptr;
  }
  auto entry = reinterpret_cast<CompilerEntry>(
      dlsym(handle, FERRY_COMPILER_MODULE_ENTRY));
  const CompilerApi *api = entry ? entry() : nullptr;
  // The module reads this program's Config and its executables are cached
  // under this build's key: only the same build will do.
  std::string build = FERRY_VERSION " (" FERRY_GIT_HASH ")";
  if (!api || api->version != kCompilerApiVersion ||
      api->configSize != sizeof(Config) || build != api->build) {
    why = std::string(FERRY_COMPILER_MODULE_FILE) +
          " is not the compiler module of this ferry " + build +
          (api ? std::string(" (it is ") + api->build + ")" : "") +
          "; rebuild ferry and its modules together";
    return nullptr;
  }
  return api;
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
