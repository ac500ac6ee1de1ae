#include "engine/config_agreement.h"

#include <array>
#include <cstring>
#include <span>
#include <vector>

#include "config/config.h"
#include "engine/backend_byte_all_gather.h"
#include "log/log.h"

namespace zpp::engine {
namespace {

// The settings every rank must share (env_vars.def's Agreed rows), in this order on the wire.
struct Agreed {
  const char* name;
  int64_t Config::*value;
};
constexpr Agreed kAgreed[] = {
#define ZPP_ENV_NUM(member, name, kind, def, lo, hi, scope, doc) ZPP_AGREED_##scope(member, name)
#define ZPP_AGREED_Agreed(member, name) {name, &Config::member},
#define ZPP_AGREED_Local(member, name)
#define ZPP_ENV_STR(member, name, kind, def, doc)
#include "config/env_vars.def"
#undef ZPP_ENV_NUM
#undef ZPP_AGREED_Agreed
#undef ZPP_AGREED_Local
#undef ZPP_ENV_STR
};
constexpr size_t kAgreedCount = std::size(kAgreed);

}  // namespace

Result AgreeOnConfiguration(Backend& backend, Stream& stream, const Config& config,
                            ConfigAgreement* out) {
  const int ranks = backend.world_size();
  std::array<int64_t, kAgreedCount> mine{};
  for (size_t i = 0; i < kAgreedCount; ++i) mine[i] = config.*kAgreed[i].value;
  std::vector<int64_t> all(kAgreedCount * ranks);
  BackendByteAllGather exchange(backend, stream);
  ZPP_CHECK(
      exchange.AllGather(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all))));

  *out = ConfigAgreement{};
  for (size_t i = 0; i < kAgreedCount && out->agreed; ++i) {
    for (int r = 1; r < ranks; ++r) {
      const int64_t first = all[i];
      const int64_t other = all[r * kAgreedCount + i];
      if (other != first) {
        out->agreed = false;
        out->first_difference = std::string(kAgreed[i].name) +
                                " (rank 0: " + std::to_string(first) + ", rank " +
                                std::to_string(r) + ": " + std::to_string(other) + ")";
        break;
      }
    }
  }
  if (!out->agreed) {
    ZPP_WARN(
        "ranks run with different zpp settings: %s; this communicator uses plain NCCL (set the "
        "same ZPP_* values on every rank)",
        out->first_difference.c_str());
  }
  return ncclSuccess;
}

}  // namespace zpp::engine
