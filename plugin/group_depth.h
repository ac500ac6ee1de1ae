// NCCL's group nesting is per thread: calls between ncclGroupStart and the outermost
// ncclGroupEnd are deferred by NCCL, so zpp passes them through (contract 4).
#pragma once

namespace zpp::plugin {

int& GroupDepth();  // this thread's open ncclGroupStart calls

}  // namespace zpp::plugin
