#include "transport/socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace zpp::transport {
namespace {

// Milliseconds left before `deadline` (0 when passed), for poll().
int MillisecondsLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// Waits until `fd` is ready for `events`; ncclInProgress at the deadline.
Result WaitReady(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, MillisecondsLeft(deadline));
    if (ready > 0) return ncclSuccess;
    if (ready == 0) return ncclInProgress;
    if (errno != EINTR) {
      ZPP_WARN("bootstrap: poll failed: %s; the bootstrap fails", std::strerror(errno));
      return ncclSystemError;
    }
  }
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

}  // namespace

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Fd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result ListenLoopback(int backlog, Fd* out, uint16_t* port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    ZPP_WARN("bootstrap: socket failed: %s; the bootstrap fails", std::strerror(errno));
    return ncclSystemError;
  }
  sockaddr_in address = Loopback(0);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd.get(), backlog) != 0) {
    ZPP_WARN("bootstrap: cannot listen on 127.0.0.1: %s; the bootstrap fails",
             std::strerror(errno));
    return ncclSystemError;
  }
  socklen_t length = sizeof(address);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ZPP_WARN("bootstrap: getsockname failed: %s; the bootstrap fails", std::strerror(errno));
    return ncclSystemError;
  }
  *port = ntohs(address.sin_port);
  *out = std::move(fd);
  return ncclSuccess;
}

Result ParseLoopbackAddress(const std::string& address, uint16_t* port) {
  constexpr std::string_view kHost = "127.0.0.1:";
  ZPP_CHECK_ARG(address.starts_with(kHost),
                "bootstrap address '%s' (ZPP_LAUNCH_BOOTSTRAP) is not 127.0.0.1:PORT; the "
                "bootstrap fails (zpp-launch sets it: start the ranks with zpp-launch)",
                address.c_str());
  const char* first = address.data() + kHost.size();
  const char* last = address.data() + address.size();
  unsigned value = 0;
  const auto [end, error] = std::from_chars(first, last, value);
  ZPP_CHECK_ARG(error == std::errc() && end == last && value > 0 && value < 65536,
                "bootstrap address '%s' (ZPP_LAUNCH_BOOTSTRAP) has no valid port; the bootstrap "
                "fails (zpp-launch sets it: start the ranks with zpp-launch)",
                address.c_str());
  *port = static_cast<uint16_t>(value);
  return ncclSuccess;
}

Result ConnectLoopback(uint16_t port, Clock::time_point deadline, Fd* out) {
  // The launcher listens before it starts any rank, so a refusal is final, not a race.
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) {
    ZPP_WARN("bootstrap: socket failed: %s; the bootstrap fails", std::strerror(errno));
    return ncclSystemError;
  }
  const sockaddr_in address = Loopback(port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    if (errno != EINPROGRESS) {
      ZPP_WARN(
          "bootstrap: cannot connect to 127.0.0.1:%u: %s; the bootstrap fails (has zpp-launch "
          "exited? its output says why)",
          port, std::strerror(errno));
      return ncclSystemError;
    }
    const Result ready = WaitReady(fd.get(), POLLOUT, deadline);
    if (ready == ncclInProgress) {
      ZPP_WARN(
          "bootstrap: connecting to 127.0.0.1:%u timed out; the bootstrap fails (ZPP_TIMEOUT "
          "bounds it: raise it if ranks start slowly)",
          port);
      return ncclRemoteError;
    }
    ZPP_CHECK(ready);
    int error = 0;
    socklen_t length = sizeof(error);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      ZPP_WARN(
          "bootstrap: cannot connect to 127.0.0.1:%u: %s; the bootstrap fails (has zpp-launch "
          "exited? its output says why)",
          port, std::strerror(error));
      return ncclSystemError;
    }
  }
  *out = std::move(fd);
  return ncclSuccess;
}

Result AcceptBefore(const Fd& listener, Clock::time_point deadline, Fd* out) {
  const Result ready = WaitReady(listener.get(), POLLIN, deadline);
  if (ready != ncclSuccess) return ready;
  Fd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!fd.valid()) {
    if (errno == EAGAIN || errno == EINTR) return ncclInProgress;
    ZPP_WARN("bootstrap: accept failed: %s; the bootstrap fails", std::strerror(errno));
    return ncclSystemError;
  }
  *out = std::move(fd);
  return ncclSuccess;
}

Result WriteAll(const Fd& fd, const void* data, size_t bytes, Clock::time_point deadline) {
  const char* next = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t written = ::send(fd.get(), next, bytes, MSG_NOSIGNAL);
    if (written > 0) {
      next += written;
      bytes -= static_cast<size_t>(written);
      continue;
    }
    if (written < 0 && errno != EAGAIN && errno != EINTR) {
      ZPP_WARN("bootstrap: send failed: %s; the bootstrap fails", std::strerror(errno));
      return ncclRemoteError;
    }
    const Result ready = WaitReady(fd.get(), POLLOUT, deadline);
    if (ready == ncclInProgress) {
      ZPP_WARN(
          "bootstrap: send timed out; the bootstrap fails (ZPP_TIMEOUT bounds it: raise it if "
          "ranks start slowly)");
      return ncclRemoteError;
    }
    ZPP_CHECK(ready);
  }
  return ncclSuccess;
}

Result ReadAll(const Fd& fd, void* data, size_t bytes, Clock::time_point deadline) {
  char* next = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t got = ::recv(fd.get(), next, bytes, 0);
    if (got > 0) {
      next += got;
      bytes -= static_cast<size_t>(got);
      continue;
    }
    if (got == 0) {
      ZPP_WARN(
          "bootstrap: the other side closed the connection; the bootstrap fails (a rank or "
          "zpp-launch exited: its output says why)");
      return ncclRemoteError;
    }
    if (errno != EAGAIN && errno != EINTR) {
      ZPP_WARN("bootstrap: recv failed: %s; the bootstrap fails", std::strerror(errno));
      return ncclRemoteError;
    }
    const Result ready = WaitReady(fd.get(), POLLIN, deadline);
    if (ready == ncclInProgress) {
      ZPP_WARN(
          "bootstrap: receive timed out; the bootstrap fails (ZPP_TIMEOUT bounds it: raise it if "
          "ranks start slowly)");
      return ncclRemoteError;
    }
    ZPP_CHECK(ready);
  }
  return ncclSuccess;
}

}  // namespace zpp::transport
