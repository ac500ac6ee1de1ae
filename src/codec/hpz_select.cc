#include "codec/hpz_select.h"

#include <atomic>
#include <cstring>

namespace zpp::codec {

Result SelectPartition(const uint64_t* now, const HpzCandidates& candidates, uint32_t hit,
                       std::span<std::byte> send, uint32_t* counters) {
  constexpr const char* kApi = "codec::SelectPartition";
  ZPP_CHECK_ARG(now != nullptr && counters != nullptr,
                "%s: null fingerprint or counters" ZPP_BUG_REPORT, kApi);
  ZPP_CHECK_ARG(candidates.count <= kMaxHpzCandidates,
                "%s: %u candidates (at most %u)" ZPP_BUG_REPORT, kApi, candidates.count,
                kMaxHpzCandidates);
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
