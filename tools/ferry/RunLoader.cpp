// Opens libferry-run.so on first use (RunApi.h). A program that links the run
// commands (ferry-cudasim) exports ferry_run_api itself.
#include "tools/ferry/RunApi.h"

#include "ferry/Version.h"
#include "runtime/ModuleFile.h"

#include <dlfcn.h>

#include <mutex>

namespace ferry::cli {
namespace {

using RunEntry = const RunApi *(*)();

const RunApi *load(std::string &why) {
  if (auto entry = reinterpret_cast<RunEntry>(
          dlsym(RTLD_DEFAULT, FERRY_RUN_MODULE_ENTRY)))
    return entry();
  // RTLD_GLOBAL: the CUDA backend module, opened later, takes the runtime's
  // symbols from this one.
  std::string error;
  bool missing = false;
  void *handle =
      openModuleFile(FERRY_RUN_MODULE_FILE, RTLD_GLOBAL, error, missing);
  if (!handle) {
    why = missing ? "the run module " + std::string(FERRY_RUN_MODULE_FILE) +
                        " is not installed (" + error +
                        "); rebuild ferry and copy its modules along with it"
                  : error;
    return nullptr;
  }
  auto entry =
      reinterpret_cast<RunEntry>(dlsym(handle, FERRY_RUN_MODULE_ENTRY));
  const RunApi *api = entry ? entry() : nullptr;
  std::string build = FERRY_VERSION " (" FERRY_GIT_HASH ")";
  if (!api || build != api->build ||
      api->optionsSize != sizeof(TrainOptionsCli) + sizeof(EvalOptionsCli) +
                              sizeof(SquadOptionsCli)) {
    why = std::string(FERRY_RUN_MODULE_FILE) +
          " is not the run module of this ferry " + build +
          (api ? std::string(" (it is ") + api->build + ")" : "") +
          "; rebuild ferry and its modules together";
    return nullptr;
  }
  return api;
}

} // namespace

const RunApi *openRunModule(std::string &why) {
  static std::once_flag once;
  static const RunApi *api = nullptr;
  static std::string error;
  std::call_once(once, [] { api = load(error); });
  why = error;
  return api;
}

} // namespace ferry::cli
