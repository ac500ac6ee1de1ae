// Who a rank's process is, as the other ranks of its job need to know it: to name it in an error
// ("rank 1 (host a12, pid 4242) is gone") and, for a process on the same machine, to tell within
// a moment that it died. UCX cannot say so for endpoints over shared memory, which have no peer
// failure detection (ucp_transport.h); the process table can.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace zpp::transport {

struct ProcessIdentity {
  int32_t pid = 0;
  uint64_t start_ticks = 0;  // /proc/PID/stat's starttime: tells a reused pid from ours
  std::string host_key;      // boot id and pid namespace: equal keys see the same pids
  std::string hostname;

  // The calling process.
  static ProcessIdentity Self();
  // A process of this machine, while it runs (false: no such pid).
  static bool Of(int32_t pid, ProcessIdentity* out);
  // Whether `other`'s pids are this process's to look up.
  bool SharesProcessTable(const ProcessIdentity& other) const;
  // For an identity that SharesProcessTable with this process: whether that process exited (no
  // such pid, a zombie, or the pid now belongs to another process).
  bool Gone() const;
  // "host a12, pid 4242"
  std::string Describe() const;
};

// The identity's fixed-size wire form, put in front of a transport address.
inline constexpr size_t kIdentityBytes = 4 + 4 + 8 + 96 + 64;
void WriteIdentity(const ProcessIdentity& identity, std::byte* out);
// false when `bytes` is not an identity written by WriteIdentity.
bool ReadIdentity(const std::byte* bytes, size_t size, ProcessIdentity* out);

}  // namespace zpp::transport
