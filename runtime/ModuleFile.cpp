// Finds and opens ferry's modules; see ModuleFile.h.
#include "runtime/ModuleFile.h"

#include <dlfcn.h>

#include <filesystem>

void *ferry::openModuleFile(const std::string &file, int flags,
                            std::string &why, bool &missing) {
  missing = false;
  std::error_code ec;
  std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string tried;
  if (!ec)
    for (const std::filesystem::path &dir :
         {exe.parent_path(),
          exe.parent_path().parent_path() / "lib" / "ferry"}) {
      std::filesystem::path path = dir / file;
      std::error_code unreadable;
      if (!std::filesystem::exists(path, unreadable)) {
        tried += (tried.empty() ? "" : ", ") + path.string();
        continue;
      }
      void *handle = dlopen(path.c_str(), RTLD_NOW | flags);
      if (!handle)
        why = dlerror();
      return handle;
    }
  why = "looked for " + tried;
  missing = true;
  return nullptr;
}
