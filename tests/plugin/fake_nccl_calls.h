// The tests' window on the stand-in NCCL (fake_nccl.cc) that libzpp.so loaded through
// ZPP_NCCL_LIBRARY: how many times a function reached it.
#pragma once

#include <dlfcn.h>
#include <nccl.h>

namespace zpp::test {

// -1 until zpp has loaded the fake (on the first hook called).
inline int FakeCalls(const char* name) {
  void* fake = dlopen(ZPP_FAKE_NCCL, RTLD_NOW | RTLD_NOLOAD);
  if (fake == nullptr) return -1;
  auto calls = reinterpret_cast<int (*)(const char*)>(dlsym(fake, "fakeNcclCalls"));
  const int count = calls == nullptr ? -1 : calls(name);
  dlclose(fake);  // drops the reference RTLD_NOLOAD took
  return count;
}

// fakeNcclCommGrow: a communicator zpp never saw created, at the address of the last one ended.
inline ncclResult_t FakeCommGrow(ncclComm_t* comm, int nranks, int rank) {
  void* fake = dlopen(ZPP_FAKE_NCCL, RTLD_NOW | RTLD_NOLOAD);
  if (fake == nullptr) return ncclInternalError;
  auto grow =
      reinterpret_cast<ncclResult_t (*)(ncclComm_t*, int, int)>(dlsym(fake, "fakeNcclCommGrow"));
  const ncclResult_t result = grow == nullptr ? ncclInternalError : grow(comm, nranks, rank);
  dlclose(fake);
  return result;
}

}  // namespace zpp::test
