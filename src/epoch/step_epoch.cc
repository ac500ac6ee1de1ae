#include "epoch/step_epoch.h"

namespace zpp {

StepEpoch& ProcessStepEpoch() {
  static StepEpoch epoch;
  return epoch;
}

}  // namespace zpp
