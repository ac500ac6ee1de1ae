// A stand-in for libtorch_cuda.so: a library that needs an NCCL of its own (linked against the
// stand-in NCCL), so that zpp can tell which of two loaded NCCLs the framework is bound to.
#include <nccl.h>

extern "C" __attribute__((visibility("default"))) int fakeFrameworkNcclVersion() {
  int version = 0;
  return ncclGetVersion(&version) == ncclSuccess ? version : -1;
}
