#include "plugin/group_depth.h"

namespace zpp::plugin {

int& GroupDepth() {
  thread_local int depth = 0;
  return depth;
}

}  // namespace zpp::plugin
