// Loopback TCP for the bootstrap of a multi-process job: an owned descriptor, and reads, writes,
// accepts and connects that all give up at a deadline. Only 127.0.0.1 is ever bound or dialled.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "log/check.h"

namespace zpp::transport {

using Clock = std::chrono::steady_clock;

// Owns one file descriptor; closes it when it goes.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset();

 private:
  int fd_ = -1;
};

// A listening socket on 127.0.0.1 at an ephemeral port (written to *port).
Result ListenLoopback(int backlog, Fd* out, uint16_t* port);
// "127.0.0.1:PORT" -> the port; anything else (another host, a name) is refused.
Result ParseLoopbackAddress(const std::string& address, uint16_t* port);
Result ConnectLoopback(uint16_t port, Clock::time_point deadline, Fd* out);
// ncclInProgress when nothing connected before the deadline.
Result AcceptBefore(const Fd& listener, Clock::time_point deadline, Fd* out);
Result WriteAll(const Fd& fd, const void* data, size_t bytes, Clock::time_point deadline);
Result ReadAll(const Fd& fd, void* data, size_t bytes, Clock::time_point deadline);

}  // namespace zpp::transport
