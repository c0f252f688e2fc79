// The backend registry: which backends this build has and how to make one.
// A backend registers a name, a factory and a device lister. Backends linked
// into the program register in registerBuiltinBackends (Builtin.cpp, the one
// file that names them); a backend built as a loadable module (the CUDA
// backend, so that processes that never use it never map the CUDA libraries)
// is registered by file name and opened on first use. No backend knows
// another, and nothing outside this folder knows which backends exist.
#pragma once

#include "runtime/backend/Backend.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ferry {

// The devices a backend can use, or why it can use none.
struct DeviceList {
  std::vector<std::string> devices; // "NVIDIA H200 (sm_90, 139.8 GiB)"
  std::string reason;               // why `devices` is empty
};

struct BackendInfo {
  const char *name; // as execution.backend names it
  std::unique_ptr<Backend> (*create)(const fxe::Executable &executable,
                                     std::optional<uint64_t> limitBytes,
                                     comm::Communicator *group);
  DeviceList (*devices)();
};

// A loadable backend module exports this C function (FERRY_BACKEND_MODULE).
using BackendModuleEntry = const BackendInfo *(*)();
#define FERRY_BACKEND_MODULE_ENTRY "ferry_backend_module_info"

void registerBackend(const BackendInfo &info);
// `file` is looked for beside the executable, then in ../lib/ferry.
void registerBackendModule(const std::string &name, const std::string &file);

// The backend the executable was compiled for; throws RuntimeError when it
// is not built in, its module does not load, or it has no device (naming
// why), or when the arena exceeds `limitBytes`.
// `group` is the replica group (null: this process alone).
std::unique_ptr<Backend> createBackend(const fxe::Executable &executable,
                                       std::optional<uint64_t> limitBytes,
                                       comm::Communicator *group = nullptr);

// Every backend this build has, by name, with how it is built ("built in"
// or "module FILE"); opens nothing.
std::vector<std::pair<std::string, std::string>> availableBackends();

// The devices of one backend, opening its module if it is one; a module
// that does not load is reported as the reason.
DeviceList listDevices(const std::string &backend);

// Defined in Builtin.cpp: registers the backends this build links in or
// ships as modules. The registry calls it once, on first use.
void registerBuiltinBackends();

} // namespace ferry
