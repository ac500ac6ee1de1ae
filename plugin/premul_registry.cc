#include "plugin/premul_registry.h"

#include <cstdint>
#include <cstring>

#include "kernels/math/float_convert.h"

namespace zpp::plugin {

void PreMulRegistry::Add(ncclComm_t comm, ncclRedOp_t op, const PreMulSum& premul) {
  std::lock_guard<std::mutex> lock(mutex_);
  ops_[{comm, static_cast<int>(op)}] = premul;
}

void PreMulRegistry::Remove(ncclComm_t comm, ncclRedOp_t op) {
  std::lock_guard<std::mutex> lock(mutex_);
  ops_.erase({comm, static_cast<int>(op)});
}

void PreMulRegistry::RemoveComm(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = ops_.begin(); it != ops_.end();) {
    it = it->first.first == comm ? ops_.erase(it) : std::next(it);
  }
}

std::optional<PreMulSum> PreMulRegistry::Find(ncclComm_t comm, ncclRedOp_t op) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = ops_.find({comm, static_cast<int>(op)});
  if (found == ops_.end()) return std::nullopt;
  return found->second;
}

PreMulRegistry& PreMuls() {
  static PreMulRegistry* registry = new PreMulRegistry();
  return *registry;
}

std::optional<float> ReadHostScalar(const void* scalar, ncclDataType_t dtype) {
  if (scalar == nullptr) return std::nullopt;
  switch (dtype) {
    case ncclFloat32: {
      float value = 0;
      std::memcpy(&value, scalar, sizeof(value));
      return value;
    }
    case ncclFloat16: {
      uint16_t bits = 0;
      std::memcpy(&bits, scalar, sizeof(bits));
      return zpp::codec::HalfToFloat(bits);
    }
    case ncclBfloat16: {
      uint16_t bits = 0;
      std::memcpy(&bits, scalar, sizeof(bits));
      return zpp::codec::Bf16ToFloat(bits);
    }
    default:
      return std::nullopt;
  }
}

}  // namespace zpp::plugin
