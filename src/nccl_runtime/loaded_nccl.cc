#include "nccl_runtime/loaded_nccl.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>

namespace zpp {
namespace {

// The file that defines `symbol` as seen from `handle` (the object and its dependencies).
std::string DefiningFile(void* handle, const char* symbol) {
  void* address = dlsym(handle, symbol);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return {};
  return info.dli_fname;
}

std::vector<std::string> LoadedObjectNames() {
  std::vector<std::string> names;
  // dlopen must not run inside the walk (it takes the loader's lock): collect the names first.
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
        }
        return 0;
      },
      &names);
  return names;
}

}  // namespace

std::vector<LoadedNccl> FindLoadedNccls(const void* self) {
  Dl_info self_info{};
  const std::string self_file =
      dladdr(self, &self_info) != 0 && self_info.dli_fname ? self_info.dli_fname : "";
  std::vector<LoadedNccl> found;
  for (const std::string& name : LoadedObjectNames()) {
    // RTLD_NOLOAD: a handle to what is already there, never a new load.
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    const std::string file = DefiningFile(handle, "ncclAllGather");
    dlclose(handle);  // drops the reference NOLOAD took; the object stays loaded
    if (file.empty() || file == self_file) continue;
    const bool through_other = file != name;
    auto known = std::find_if(found.begin(), found.end(),
                              [&](const LoadedNccl& nccl) { return nccl.path == file; });
    if (known == found.end()) {
      found.push_back({file, through_other});
    } else {
      known->needed_by_other = known->needed_by_other || through_other;
    }
  }
  return found;
}

const LoadedNccl* ChooseLoadedNccl(const std::vector<LoadedNccl>& found) {
  if (found.empty()) return nullptr;
  if (found.size() == 1) return &found[0];
  const auto needed = std::count_if(found.begin(), found.end(),
                                    [](const LoadedNccl& nccl) { return nccl.needed_by_other; });
  if (needed == 1) {
    return &*std::find_if(found.begin(), found.end(),
                          [](const LoadedNccl& nccl) { return nccl.needed_by_other; });
  }
  return &found[0];
}

}  // namespace zpp
