#include "bench/zpp_bench/bench_inputs.h"

#include <cmath>
#include <cstdint>
#include <random>

#include "codec/element_io.h"

namespace zpp::bench {

double Epsilon(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclFloat32:
      return std::ldexp(1.0, -24);
    case ncclFloat16:
      return std::ldexp(1.0, -11);
    default:
      return std::ldexp(1.0, -8);
  }
}

std::vector<float> HeldInput(int rank, size_t count, ncclDataType_t dtype) {
  std::mt19937_64 generator(0x5eed0000u + static_cast<uint64_t>(rank));
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& v : values) v = normal(generator);
  std::vector<uint8_t> held(count * codec::ElementBytes(dtype));
  codec::StoreElements(held.data(), dtype, 0, count, values.data());
  codec::LoadElements(held.data(), dtype, 0, count, values.data());
  return values;
}

bool Lossless(const plan::Plan& plan, plan::CollectiveOp op) {
  if (plan.kind == plan::PlanKind::kPassThrough) return true;
  return op == plan::CollectiveOp::kAllGather && plan.bits_inter == 0;
}

}  // namespace zpp::bench
