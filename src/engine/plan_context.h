// What a running plan works with: the rank's backend, its buffer pool and the caller's stream.
#pragma once

#include <cstddef>
#include <vector>

#include "backend/backend.h"
#include "fence/buffer_pool.h"

namespace zpp::engine {

struct PlanContext {
  Backend& backend;
  BufferPool& pool;
  Stream& stream;
};

// The staging buffers of one plan run. Each is fenced as written from Take to Finish, on the
// plan's stream: a later plan that gets the same buffer, on whatever stream, waits for this one.
class Staging {
 public:
  explicit Staging(PlanContext& context) : context_(context) {}
  ~Staging();  // Finish, if the plan returned early
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  Result Take(size_t bytes, std::byte** data);
  Result Finish();

 private:
  PlanContext& context_;
  std::vector<BufferLease> leases_;
};

}  // namespace zpp::engine
