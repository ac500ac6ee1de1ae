// A process like a pip PyTorch one: libzpp.so comes first in the global scope (here linked, there
// preloaded) and NCCL is loaded privately (RTLD_LOCAL), where dlsym(RTLD_NEXT) cannot see it.
// Loads each argument that way, in order, then makes two hook calls and prints their results.
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (dlopen(argv[i], RTLD_NOW | RTLD_LOCAL) == nullptr) {
      std::fprintf(stderr, "probe: cannot load %s: %s\n", argv[i], dlerror());
      return 2;
    }
  }
  const ncclResult_t start = ncclGroupStart();
  const ncclResult_t end = ncclGroupEnd();
  std::printf("probe: ncclGroupStart %d ncclGroupEnd %d\n", static_cast<int>(start),
              static_cast<int>(end));
  return start == ncclSuccess && end == ncclSuccess ? 0 : 1;
}
