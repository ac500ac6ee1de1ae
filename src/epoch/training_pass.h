// Which pass of a training step issues an all-gather: hpZ pairs a backward gather with the
// forward fill of the same step (docs/architecture.md, "hpZ's pairing"). Unknown means no
// reuse: zpp gathers across nodes rather than guess.
#pragma once

#include "zpp/zpp.h"

namespace zpp {

enum class TrainingPass : int {
  kUnknown = zppPassUnknown,
  kForward = zppPassForward,
  kBackward = zppPassBackward,
};

// The calling thread's hint (zppSetTrainingPass); kUnknown clears it.
void SetThreadTrainingPass(TrainingPass pass);

// The pass of an NCCL call from this thread: its hint when it set one; otherwise kBackward on a
// thread PyTorch's autograd engine runs a device's backward on (named "pt_autograd_<device>"),
// else kForward. Taking an unnamed thread's call for forward is safe: a forward fill that no
// backward gather pairs with is only kept, never reused.
TrainingPass CallerTrainingPass();

}  // namespace zpp
