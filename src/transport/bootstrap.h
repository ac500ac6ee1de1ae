// The bootstrap of a multi-process job, over one loopback TCP connection from each rank to
// zpp-launch: every rank sends its transport address (its UCP worker's) and gets everyone's back
// once all have arrived. Every wait ends at a deadline.
//
// Wire (host byte order; both ends run on this machine):
//   rank -> launcher: Hello{magic, rank, size, address_bytes}, then the address
//   launcher -> rank: Table{magic, size}, then per rank r: uint32 bytes, then its address
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "transport/launch_env.h"
#include "transport/socket.h"

namespace zpp::transport {

inline constexpr uint32_t kBootstrapMagic = 0x7a70704c;  // "zppL"
inline constexpr uint32_t kMaxAddressBytes = 1u << 20;

using Address = std::vector<std::byte>;

// A rank's side: sends `mine`, returns every rank's address in rank order.
Result ExchangeAddresses(const LaunchInfo& launch, const Address& mine, Clock::time_point deadline,
                         std::vector<Address>* all);

// The launcher's side: accepts `size` ranks on `listener`, then answers each with the table.
// `keep_waiting` is asked between accepts; when it says no (a rank died), the exchange stops
// with ncclRemoteError. ncclRemoteError too at the deadline.
Result ServeAddresses(const Fd& listener, int size, Clock::time_point deadline,
                      const std::function<bool()>& keep_waiting);

}  // namespace zpp::transport
