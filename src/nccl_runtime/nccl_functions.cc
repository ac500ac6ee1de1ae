#include "nccl_runtime/nccl_functions.h"

#include <dlfcn.h>

#include <mutex>

#include "config/config.h"
#include "log/log.h"

namespace zpp {
namespace {

template <typename Function>
void Resolve(void* handle, const char* name, Function* out) {
  *out = reinterpret_cast<Function>(dlsym(handle, name));
}

}  // namespace

Result LoadNcclFunctions(const std::string& library, NcclFunctions* out, std::string* error) {
  void* handle = RTLD_NEXT;
  NcclFunctions table;
  table.where = "RTLD_NEXT";
  if (!library.empty()) {
    // Never closed: the functions stay in use until the process ends.
    handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      *error = "ZPP_NCCL_LIBRARY=" + library + " could not be loaded: " + (why ? why : "?");
      return ncclSystemError;
    }
    table.where = library;
  }
#define ZPP_RESOLVE(member) Resolve(handle, "nccl" #member, &table.member)
  ZPP_RESOLVE(CommInitRank);
  ZPP_RESOLVE(CommInitRankConfig);
  ZPP_RESOLVE(CommInitAll);
  ZPP_RESOLVE(CommInitRankScalable);
  ZPP_RESOLVE(CommSplit);
  ZPP_RESOLVE(CommShrink);
  ZPP_RESOLVE(CommFinalize);
  ZPP_RESOLVE(CommDestroy);
  ZPP_RESOLVE(CommAbort);
  ZPP_RESOLVE(GroupStart);
  ZPP_RESOLVE(GroupEnd);
  ZPP_RESOLVE(RedOpCreatePreMulSum);
  ZPP_RESOLVE(RedOpDestroy);
  ZPP_RESOLVE(AllGather);
  ZPP_RESOLVE(ReduceScatter);
  ZPP_RESOLVE(GetVersion);
  ZPP_RESOLVE(CommCount);
  ZPP_RESOLVE(CommUserRank);
  ZPP_RESOLVE(CommCuDevice);
  ZPP_RESOLVE(AlltoAll);
  ZPP_RESOLVE(Send);
  ZPP_RESOLVE(Recv);
#undef ZPP_RESOLVE
  if (table.AllGather == nullptr || table.ReduceScatter == nullptr || table.CommCount == nullptr ||
      table.CommUserRank == nullptr || table.GroupStart == nullptr || table.GroupEnd == nullptr) {
    *error = "no NCCL found through " + table.where +
             " (ncclAllGather, ncclReduceScatter, ncclCommCount, ncclCommUserRank or the group "
             "calls are missing): load libnccl before zpp, or set ZPP_NCCL_LIBRARY";
    return ncclSystemError;
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
      ZPP_WARN("zpp: %s; every intercepted NCCL call fails with ncclSystemError", error.c_str());
      delete loaded;
      return static_cast<const NcclFunctions*>(nullptr);
    }
    ZPP_INFO(kPlugin, "real NCCL %d from %s", loaded->version, loaded->where.c_str());
    return static_cast<const NcclFunctions*>(loaded);
  }();
  return table;
}

}  // namespace zpp
