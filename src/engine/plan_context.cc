#include "engine/plan_context.h"

namespace zpp::engine {

Staging::~Staging() {
  if (!leases_.empty() && Finish() != ncclSuccess) {
    ZPP_WARN(
        "could not record the end of a plan's use of its staging buffers (the CUDA error above; "
        "ZPP_DEBUG=INFO shows the failing step)");
  }
}

Result Staging::Take(size_t bytes, std::byte** data) {
  BufferLease lease;
  ZPP_CHECK(context_.pool.Take(bytes, &lease));
  ZPP_CHECK(lease.fence().BeginWrite(context_.stream));
  *data = static_cast<std::byte*>(lease.data());
  leases_.push_back(std::move(lease));
  return ncclSuccess;
}

Result Staging::Finish() {
  Result result = ncclSuccess;
  for (BufferLease& lease : leases_) {
    const Result ended = lease.fence().EndWrite(context_.stream);
    if (result == ncclSuccess) result = ended;
  }
  leases_.clear();
  return result;
}

}  // namespace zpp::engine
