#include "nccl_runtime/nccl_functions.h"

#include <dlfcn.h>

#include <mutex>

#include "config/config.h"
#include "log/log.h"
#include "nccl_runtime/loaded_nccl.h"

namespace zpp {
namespace {

template <typename Function>
void Resolve(void* handle, const char* name, Function* out) {
  *out = reinterpret_cast<Function>(dlsym(handle, name));
}

// Fills `table` from `handle`; false when the core functions (all-gather, reduce-scatter, comm
// queries, groups) are missing.
bool ResolveAll(void* handle, NcclFunctions* table) {
#define ZPP_RESOLVE(member) Resolve(handle, "nccl" #member, &table->member)
  ZPP_RESOLVE(CommInitRank);
  ZPP_RESOLVE(CommInitRankConfig);
  ZPP_RESOLVE(CommInitAll);
  ZPP_RESOLVE(CommInitRankScalable);
  ZPP_RESOLVE(CommSplit);
  ZPP_RESOLVE(CommShrink);
  ZPP_RESOLVE(CommRevoke);
  ZPP_RESOLVE(GroupSimulateEnd);
  ZPP_RESOLVE(CommFinalize);
  ZPP_RESOLVE(CommDestroy);
  ZPP_RESOLVE(CommAbort);
  ZPP_RESOLVE(CommGetAsyncError);
  ZPP_RESOLVE(GroupStart);
  ZPP_RESOLVE(GroupEnd);
  ZPP_RESOLVE(RedOpCreatePreMulSum);
  ZPP_RESOLVE(RedOpDestroy);
  ZPP_RESOLVE(AllGather);
  ZPP_RESOLVE(ReduceScatter);
  ZPP_RESOLVE(AllReduce);
  ZPP_RESOLVE(GetVersion);
  ZPP_RESOLVE(CommCount);
  ZPP_RESOLVE(CommUserRank);
  ZPP_RESOLVE(CommCuDevice);
  ZPP_RESOLVE(AlltoAll);
  ZPP_RESOLVE(Send);
  ZPP_RESOLVE(Recv);
#undef ZPP_RESOLVE
  return table->AllGather != nullptr && table->ReduceScatter != nullptr &&
         table->CommCount != nullptr && table->CommUserRank != nullptr &&
         table->GroupStart != nullptr && table->GroupEnd != nullptr;
}

std::string FileDefining(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return {};
  return info.dli_fname;
}

std::string Names(const std::vector<LoadedNccl>& found) {
  std::string names;
  for (const LoadedNccl& nccl : found) names += (names.empty() ? "" : ", ") + nccl.path;
  return names;
}

// The NCCL the process already has: the one the global scope offers after zpp (RTLD_NEXT), else
// one loaded privately (RTLD_LOCAL, as pip PyTorch loads its NCCL wheel). A second NCCL in the
// process is named in a WARN, since the framework may be bound to the other one.
Result FindProcessNccl(NcclFunctions* table, std::string* error) {
  const std::vector<LoadedNccl> found =
      FindLoadedNccls(reinterpret_cast<const void*>(&LoadNcclFunctions));
  if (ResolveAll(RTLD_NEXT, table)) {
    table->where = FileDefining(reinterpret_cast<const void*>(table->AllGather));
    if (found.size() > 1) {
      ZPP_WARN(
          "zpp: %zu NCCL libraries are loaded (%s); zpp forwards to %s, the one the global "
          "scope offers: set ZPP_NCCL_LIBRARY to the framework's if that is another",
          found.size(), Names(found).c_str(), table->where.c_str());
    }
    return ncclSuccess;
  }
  const LoadedNccl* chosen = ChooseLoadedNccl(found);
  if (chosen == nullptr) {
    *error =
        "no NCCL found through RTLD_NEXT or among the loaded libraries (ncclAllGather, "
        "ncclReduceScatter, ncclCommCount, ncclCommUserRank or the group calls are missing): "
        "load libnccl before zpp's first NCCL call, or set ZPP_NCCL_LIBRARY";
    return ncclSystemError;
  }
  if (found.size() > 1) {
    ZPP_WARN(
        "zpp: %zu NCCL libraries are loaded (%s); zpp forwards to %s (%s): set "
        "ZPP_NCCL_LIBRARY to choose another",
        found.size(), Names(found).c_str(), chosen->path.c_str(),
        chosen->needed_by_other ? "the one another library depends on" : "the first loaded");
  }
  // Never closed: the functions stay in use until the process ends.
  void* handle = dlopen(chosen->path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr || !ResolveAll(handle, table)) {
    *error = "the loaded NCCL " + chosen->path + " lacks the core functions";
    return ncclSystemError;
  }
  table->where = chosen->path;
  return ncclSuccess;
}

}  // namespace

Result LoadNcclFunctions(const std::string& library, NcclFunctions* out, std::string* error) {
  NcclFunctions table;
  if (library.empty()) {
    ZPP_CHECK(FindProcessNccl(&table, error));
  } else {
    // Never closed: the functions stay in use until the process ends.
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      *error = "ZPP_NCCL_LIBRARY=" + library + " could not be loaded: " + (why ? why : "?");
      return ncclSystemError;
    }
    if (!ResolveAll(handle, &table)) {
      *error = "ZPP_NCCL_LIBRARY=" + library +
               " lacks the core NCCL functions (ncclAllGather, ncclReduceScatter, ncclCommCount, "
               "ncclCommUserRank or the group calls)";
      return ncclSystemError;
    }
    table.where = library;
  }
  if (table.GetVersion != nullptr && table.GetVersion(&table.version) != ncclSuccess) {
    table.version = 0;
  }
  *out = std::move(table);
  return ncclSuccess;
}

const NcclFunctions* RealNccl() {
  static const NcclFunctions* table = [] {
    auto* loaded = new NcclFunctions();  // process lifetime: hooks may run during exit
    std::string error;
    if (LoadNcclFunctions(GetConfig().nccl_library, loaded, &error) != ncclSuccess) {
      ZPP_WARN(
          "zpp: %s; every intercepted NCCL call fails with ncclSystemError (set ZPP_NCCL_LIBRARY "
          "to the path of the real libnccl.so)",
          error.c_str());
      delete loaded;
      return static_cast<const NcclFunctions*>(nullptr);
    }
    ZPP_INFO(kPlugin, "real NCCL %d from %s", loaded->version, loaded->where.c_str());
    return static_cast<const NcclFunctions*>(loaded);
  }();
  return table;
}

}  // namespace zpp
