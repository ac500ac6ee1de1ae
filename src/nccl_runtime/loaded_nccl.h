// Finding an NCCL that the process already loaded where dlsym(RTLD_NEXT) cannot see it. pip
// PyTorch loads its NCCL wheel with ctypes.CDLL (RTLD_LOCAL) and libtorch_cuda.so needs
// libnccl.so.2 privately, so from a preloaded libzpp.so that NCCL is in no global scope.
#pragma once

#include <string>
#include <vector>

namespace zpp {

struct LoadedNccl {
  std::string path;      // the file that defines ncclAllGather
  bool needed_by_other;  // some other loaded object reaches it through its own dependencies
};

// Every loaded object other than the one holding `self` (an address inside libzpp.so) that
// defines ncclAllGather, in load order, each file once.
std::vector<LoadedNccl> FindLoadedNccls(const void* self);

// Which of several to take: the only one, else the only one another library depends on (the
// framework's), else the first loaded. Null for an empty list.
const LoadedNccl* ChooseLoadedNccl(const std::vector<LoadedNccl>& found);

}  // namespace zpp
