#include "codec/hpz_select.h"

#include <atomic>
#include <cstring>

namespace zpp::codec {

Result CheckSelectPartition(const char* api, const uint64_t* now, const HpzCandidates& candidates,
                            std::span<std::byte> send, const uint32_t* counters) {
  ZPP_CHECK_ARG(now != nullptr && counters != nullptr,
                "%s: null fingerprint or counters" ZPP_BUG_REPORT, api);
  ZPP_CHECK_ARG(candidates.count <= kMaxHpzCandidates,
                "%s: %u candidates (at most %u)" ZPP_BUG_REPORT, api, candidates.count,
                kMaxHpzCandidates);
  ZPP_CHECK_ARG(send.data() != nullptr || send.empty(), "%s: send is null" ZPP_BUG_REPORT, api);
  return ncclSuccess;
}

Result SelectPartition(const uint64_t* now, const HpzCandidates& candidates, uint32_t hit,
                       std::span<std::byte> send, uint32_t* counters) {
  ZPP_CHECK(CheckSelectPartition("codec::SelectPartition", now, candidates, send, counters));
  const int chosen = HpzChoose(candidates, *now);
  // The host reads the counters at any time (host-visible memory): atomic, as on the device.
  std::atomic_ref<uint32_t>(counters[kHpzChoicesCounter])
      .fetch_add(HpzChoiceTerm(hit, chosen < 0 ? -1 : candidates.position[chosen]));
  if (chosen < 0) {
    std::atomic_ref<uint32_t>(counters[kHpzFailuresCounter]).fetch_add(1);
    std::memset(send.data(), kHpzPoisonByte, send.size());
    return ncclSuccess;
  }
  std::memcpy(send.data(), candidates.partition[chosen], send.size());
  return ncclSuccess;
}

}  // namespace zpp::codec
