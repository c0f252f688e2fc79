// Opens libferry-run.so on first use (RunApi.h). A program that links the run
// commands (ferry-cudasim) exports ferry_run_api itself.
#include "tools/ferry/RunApi.h"

#include "ferry/Version.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>

namespace ferry::cli {
namespace {

using RunEntry = const RunApi *(*)();

const RunApi *load(std::string &why) {
  if (auto entry = reinterpret_cast<RunEntry>(
          dlsym(RTLD_DEFAULT, FERRY_RUN_MODULE_ENTRY)))
    return entry();
  std::error_code ec;
  std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string tried;
  for (const std::filesystem::path &dir :
       {exe.parent_path(), exe.parent_path().parent_path() / "lib" / "ferry"}) {
    std::filesystem::path path = dir / FERRY_RUN_MODULE_FILE;
    std::error_code missing;
    if (ec || !std::filesystem::exists(path, missing)) {
      tried += (tried.empty() ? "" : ", ") + path.string();
      continue;
    }
    // RTLD_GLOBAL: the CUDA backend module, opened later, takes the
    // runtime's symbols from this one. RTLD_NOW: a missing symbol is an
    // error here, not mid-run.
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      why = dlerror();
      return nullptr;
    }
    auto entry =
        reinterpret_cast<RunEntry>(dlsym(handle, FERRY_RUN_MODULE_ENTRY));
    const RunApi *api = entry ? entry() : nullptr;
    std::string build = FERRY_VERSION " (" FERRY_GIT_HASH ")";
    if (!api || build != api->build ||
        api->optionsSize != sizeof(TrainOptionsCli) + sizeof(EvalOptionsCli)) {
      why = path.string() + " is not the run module of this ferry " + build +
            (api ? std::string(" (it is ") + api->build + ")" : "") +
            "; rebuild ferry and its modules together";
      return nullptr;
    }
    return api; // the module stays loaded for the life of the process
  }
  why = "the run module " + std::string(FERRY_RUN_MODULE_FILE) +
        " is not installed (looked for " + tried +
        "); rebuild ferry and copy its modules along with it";
  return nullptr;
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
