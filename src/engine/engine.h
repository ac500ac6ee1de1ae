// One communicator's zpp: plans each call from agreed state and runs the plan on the backend,
// or runs the plain collective when the plan says pass through. The plugin wraps one of these
// per NCCL communicator; the tests and the demo, one per simulated rank.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "engine/collective_args.h"
#include "fence/buffer_pool.h"
#include "plan/plan.h"
#include "stats/stats.h"

namespace zpp::engine {

class Engine {
 public:
  Engine(Backend& backend, const plan::Shape& shape, const plan::Settings& settings,
         bool fence_enabled, StatsCounters& stats);

  // NCCL's semantics; `chosen`, when given, receives the plan that ran.
  Result AllGather(const AllGatherArgs& args, Stream& stream, plan::Plan* chosen = nullptr);
  Result ReduceScatter(const ReduceScatterArgs& args, Stream& stream, plan::Plan* chosen = nullptr);

  const plan::Shape& shape() const { return shape_; }
  BufferPool& pool() { return pool_; }

 private:
  Result RunAllGather(const plan::Plan& plan, const AllGatherArgs& args, Stream& stream);
  Result RunReduceScatter(const plan::Plan& plan, const ReduceScatterArgs& args, Stream& stream);
  void Count(const plan::Plan& plan, uint64_t input_bytes, plan::CollectiveOp op);

  Backend& backend_;
  const plan::Shape shape_;
  const plan::Settings settings_;
  BufferPool pool_;
  StatsCounters& stats_;
};

}  // namespace zpp::engine
