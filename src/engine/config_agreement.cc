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

// The settings every rank must share, in this order on the wire.
struct Agreed {
  const char* name;
  int64_t Config::*value;
};
constexpr std::array<Agreed, 22> kAgreed = {{
    {"ZPP_QWZ", &Config::qwz},
    {"ZPP_QWZ_BITS", &Config::qwz_bits},
    {"ZPP_QWZ_ROTATE", &Config::qwz_rotate},
    {"ZPP_QWZ_DELTA", &Config::qwz_delta},  // a delta and a full send differ in size
    {"ZPP_QWZ_DELTA_BITS", &Config::qwz_delta_bits},
    {"ZPP_QWZ_DELTA_REFRESH", &Config::qwz_delta_refresh},
    {"ZPP_HPZ", &Config::hpz},
    {"ZPP_QGZ", &Config::qgz},
    {"ZPP_QGZ_BITS_INTRA", &Config::qgz_bits_intra},
    {"ZPP_QGZ_BITS_INTER", &Config::qgz_bits_inter},
    {"ZPP_QGZ_EF", &Config::qgz_ef},                  // the residuals' staging must be taken alike
    {"ZPP_EF_MAX_MB", &Config::ef_max_mb},            // and refused alike past the bound
    {"ZPP_LOSSY_ONE_NODE", &Config::lossy_one_node},  // one node: quantize or pass through
    {"ZPP_QAR", &Config::qar},
    {"ZPP_QAR_BITS", &Config::qar_bits},
    {"ZPP_QAR_EF", &Config::qar_ef},  // the residuals' staging must be taken alike
    {"ZPP_BLOCK", &Config::block},
    {"ZPP_MIN_BYTES", &Config::min_bytes},
    {"ZPP_FENCE", &Config::fence},
    {"ZPP_HPZ_MAX_MB", &Config::hpz_max_mb},
    {"ZPP_POOL_MB", &Config::pool_mb},  // the pool refuses alike on every rank only if equal
    {"ZPP_TUNE", &Config::tune},        // every rank tunes, or none
}};

}  // namespace

Result AgreeOnConfiguration(Backend& backend, Stream& stream, const Config& config,
                            ConfigAgreement* out) {
  const int ranks = backend.world_size();
  std::array<int64_t, kAgreed.size()> mine{};
  for (size_t i = 0; i < kAgreed.size(); ++i) mine[i] = config.*kAgreed[i].value;
  std::vector<int64_t> all(kAgreed.size() * ranks);
  BackendByteAllGather exchange(backend, stream);
  ZPP_CHECK(
      exchange.AllGather(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all))));

  *out = ConfigAgreement{};
  for (size_t i = 0; i < kAgreed.size() && out->agreed; ++i) {
    for (int r = 1; r < ranks; ++r) {
      const int64_t first = all[i];
      const int64_t other = all[r * kAgreed.size() + i];
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
