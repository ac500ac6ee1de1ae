#include "engine/pool_reservation.h"

#include "log/log.h"
#include "plan/planner.h"
#include "topology/setup_outcome.h"

namespace zpp::engine {

uint64_t StagingReservationBytes(const plan::Settings& settings, const plan::Shape& shape,
                                 uint64_t pool_bytes) {
  // The planner decides from the shape and the settings alone once a call is large: a plan for
  // a large call of any collective is a plan this communicator can run.
  plan::Settings any_size = settings;
  any_size.min_bytes = 0;
  constexpr uint64_t kLarge = uint64_t{1} << 24;  // elements per rank
  const plan::Call gather{plan::CollectiveOp::kAllGather, kLarge, ncclFloat32,
                          plan::Reduction::kNone};
  const plan::Call scatter{plan::CollectiveOp::kReduceScatter, kLarge, ncclFloat32,
                           plan::Reduction::kSum};
  const plan::Call all_reduce{plan::CollectiveOp::kAllReduce, kLarge, ncclFloat32,
                              plan::Reduction::kSum};
  for (const plan::Call& call : {gather, scatter, all_reduce}) {
    if (plan::MakePlan(call, shape, any_size, plan::HpzState{}).kind !=
        plan::PlanKind::kPassThrough) {
      return pool_bytes;
    }
  }
  return 0;
}

Result ReserveStagingPool(Backend& backend, topology::ByteAllGather& exchange, uint64_t bytes,
                          bool fence_enabled, std::unique_ptr<BufferPool>* out) {
  std::unique_ptr<DeviceMemory> reservation;
  const bool reserved = bytes == 0 || backend.Allocate(bytes, &reservation) == ncclSuccess;
  topology::SetUpOutcome outcome;
  ZPP_CHECK(topology::AgreeOnOutcome(exchange, reserved, &outcome));
  const auto mib = static_cast<unsigned long long>(bytes >> 20);
  if (!outcome.all_ok) {
    reservation.reset();
    ZPP_WARN(
        "zpp: reserving ZPP_POOL_MB=%llu MiB of device memory failed (%s): every call on this "
        "communicator that needs zpp's staging goes to NCCL (reason 'pool' in ZPP_STATS); leave "
        "more memory free or lower ZPP_POOL_MB",
        mib, outcome.Describe().c_str());
  } else if (bytes == 0) {
    ZPP_INFO(kInit, "no staging reserved: every call on this communicator goes to NCCL");
  } else {
    ZPP_INFO(kInit, "reserved ZPP_POOL_MB=%llu MiB for zpp's staging on every rank", mib);
  }
  *out = std::make_unique<BufferPool>(backend, fence_enabled, std::move(reservation));
  return ncclSuccess;
}

}  // namespace zpp::engine
