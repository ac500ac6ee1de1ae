// The pre-multiplied sums made with ncclRedOpCreatePreMulSum (FSDP divides gradients this way):
// zpp needs the scalar to apply it itself when it takes a reduce-scatter. A host scalar is read
// at creation, as NCCL reads ncclScalarHostImmediate; a device scalar is kept as its address.
#pragma once

#include <nccl.h>

#include <map>
#include <mutex>
#include <optional>
#include <utility>

namespace zpp::plugin {

struct PreMulSum {
  ncclDataType_t dtype = ncclFloat32;
  float host_value = 1.0f;              // ncclScalarHostImmediate
  const void* device_scalar = nullptr;  // ncclScalarDevice
};

class PreMulRegistry {
 public:
  void Add(ncclComm_t comm, ncclRedOp_t op, const PreMulSum& premul);
  void Remove(ncclComm_t comm, ncclRedOp_t op);
  void RemoveComm(ncclComm_t comm);
  std::optional<PreMulSum> Find(ncclComm_t comm, ncclRedOp_t op) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<ncclComm_t, int>, PreMulSum> ops_;
};

PreMulRegistry& PreMuls();

// The host scalar's value widened to float; nullopt for a dtype zpp does not take.
std::optional<float> ReadHostScalar(const void* scalar, ncclDataType_t dtype);

}  // namespace zpp::plugin
