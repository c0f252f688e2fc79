// The backend registry (Registry.h): a name -> factory table filled by
// Builtin.cpp, with modules opened by dlopen on first use.
#include "runtime/backend/Registry.h"
#include "runtime/ModuleFile.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <map>
#include <mutex>
#include <system_error>

using namespace ferry;

namespace {

struct Entry {
  std::optional<BackendInfo> info; // set once linked in or loaded
  std::string moduleFile;          // for a module: its file name
  std::string loadError;           // why the module did not load
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, Entry> entries;
};

Registry &registry() {
  static Registry r;
  return r;
}

// Runs registerBuiltinBackends once, outside the registry's lock (it calls
// back into registerBackend).
void ensureBuiltins() {
  static std::once_flag once;
  std::call_once(once, registerBuiltinBackends);
}

// Opens an entry's module (with the registry locked); on failure the entry
// keeps the reason.
void loadModule(Entry &e) {
  if (e.info || !e.loadError.empty())
    return;
  bool missing = false;
  void *handle = openModuleFile(e.moduleFile, RTLD_LOCAL, e.loadError, missing);
  if (missing)
    e.loadError = "not found (" + e.loadError + ")";
  if (!handle)
    return;
  auto entry = reinterpret_cast<BackendModuleEntry>(
      dlsym(handle, FERRY_BACKEND_MODULE_ENTRY));
  if (!entry) {
    e.loadError = e.moduleFile + " is not a ferry backend module (no " +
                  FERRY_BACKEND_MODULE_ENTRY + ")";
    return;
  }
  e.info = *entry();
}

} // namespace

void ferry::registerBackend(const BackendInfo &info) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().entries[info.name].info = info;
}

void ferry::registerBackendModule(const std::string &name,
                                  const std::string &file) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  Entry &e = registry().entries[name];
  if (!e.info)
    e.moduleFile = file;
}

std::unique_ptr<Backend>
ferry::createBackend(const fxe::Executable &executable,
                     std::optional<uint64_t> limitBytes,
                     comm::Communicator *group) {
  ensureBuiltins();
  std::string kind = executable.backend() ? executable.backend()->str() : "";
  std::unique_lock<std::mutex> lock(registry().mutex);
  auto it = registry().entries.find(kind);
  if (it == registry().entries.end()) {
    std::string known;
    for (const auto &[name, e] : registry().entries)
      known += (known.empty() ? "" : ", ") + name;
    throw RuntimeError(fmt::format(
        "the executable was compiled for execution.backend {}, which this "
        "ferry was not built with (it has: {}); recompile for one of those, "
        "or rebuild ferry with that backend (e.g. -DFERRY_ENABLE_CUDA=ON)",
        kind.empty() ? "''" : kind, known));
  }
  Entry &e = it->second;
  loadModule(e);
  if (!e.info)
    throw RuntimeError(fmt::format(
        "the executable was compiled for execution.backend {}, but its "
        "module {} could not be loaded: {}; check the installation (the "
        "module sits beside the ferry executable) or recompile for "
        "execution.backend cpu",
        kind, e.moduleFile, e.loadError));
  BackendInfo info = *e.info;
  lock.unlock();
  return info.create(executable, limitBytes, group);
}

std::vector<std::pair<std::string, std::string>> ferry::availableBackends() {
  ensureBuiltins();
  std::lock_guard<std::mutex> lock(registry().mutex);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto &[name, e] : registry().entries)
    out.push_back(
        {name, e.moduleFile.empty() ? "built in" : "module " + e.moduleFile});
  return out;
}

DeviceList ferry::listDevices(const std::string &backend) {
  ensureBuiltins();
  std::unique_lock<std::mutex> lock(registry().mutex);
  auto it = registry().entries.find(backend);
  if (it == registry().entries.end())
    return {{}, "this ferry was not built with the " + backend + " backend"};
  loadModule(it->second);
  if (!it->second.info)
    return {{},
            "module " + it->second.moduleFile +
                " could not be loaded: " + it->second.loadError};
  BackendInfo info = *it->second.info;
  lock.unlock();
  return info.devices();
}
