#include "epoch/training_pass.h"

#include <pthread.h>

#include <cstring>

namespace zpp {
namespace {

thread_local TrainingPass hinted = TrainingPass::kUnknown;

// PyTorch's autograd engine names the thread it runs each device's backward on (engine.cpp,
// Engine::thread_init); the CPU's backward runs on the caller's thread, which has no such name.
bool OnAutogradDeviceThread() {
  char name[16] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof(name)) != 0) return false;
  constexpr char kPrefix[] = "pt_autograd_";
  return std::strncmp(name, kPrefix, sizeof(kPrefix) - 1) == 0;
}

}  // namespace

void SetThreadTrainingPass(TrainingPass pass) { hinted = pass; }

TrainingPass CallerTrainingPass() {
  if (hinted != TrainingPass::kUnknown) return hinted;
  // Read once per thread: glibc reads a thread's name from /proc, and the engine names its
  // threads when it starts them, before they run any work.
  thread_local const bool autograd = OnAutogradDeviceThread();
  return autograd ? TrainingPass::kBackward : TrainingPass::kForward;
}

}  // namespace zpp
