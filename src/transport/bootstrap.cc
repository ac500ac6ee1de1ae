#include "transport/bootstrap.h"

#include <algorithm>
#include <cstring>

namespace zpp::transport {
namespace {

struct Hello {
  uint32_t magic;
  uint32_t rank;
  uint32_t size;
  uint32_t address_bytes;
};

struct Table {
  uint32_t magic;
  uint32_t size;
};

// How long an accepted rank may take to send its hello: it writes right after connecting.
constexpr auto kHelloWait = std::chrono::seconds(10);
constexpr auto kPollStep = std::chrono::milliseconds(50);

}  // namespace

Result ExchangeAddresses(const LaunchInfo& launch, const Address& mine, Clock::time_point deadline,
                         std::vector<Address>* all) {
  uint16_t port = 0;
  ZPP_CHECK(ParseLoopbackAddress(launch.bootstrap, &port));
  Fd fd;
  ZPP_CHECK(ConnectLoopback(port, deadline, &fd));
  const Hello hello{kBootstrapMagic, static_cast<uint32_t>(launch.rank),
                    static_cast<uint32_t>(launch.size), static_cast<uint32_t>(mine.size())};
  ZPP_CHECK(WriteAll(fd, &hello, sizeof(hello), deadline));
  ZPP_CHECK(WriteAll(fd, mine.data(), mine.size(), deadline));
  Table table{};
  ZPP_CHECK(ReadAll(fd, &table, sizeof(table), deadline));
  if (table.magic != kBootstrapMagic || table.size != static_cast<uint32_t>(launch.size)) {
    ZPP_WARN(
        "bootstrap: the launcher answered with a bad table (size %u, expected %d); the bootstrap "
        "fails (are zpp-launch and the ranks from one zpp build?)",
        table.size, launch.size);
    return ncclRemoteError;
  }
  std::vector<Address> addresses(launch.size);
  for (Address& address : addresses) {
    uint32_t bytes = 0;
    ZPP_CHECK(ReadAll(fd, &bytes, sizeof(bytes), deadline));
    if (bytes > kMaxAddressBytes) {
      ZPP_WARN(
          "bootstrap: an address of %u bytes is too long; the bootstrap fails (are zpp-launch and "
          "the ranks from one zpp build?)",
          bytes);
      return ncclRemoteError;
    }
    address.resize(bytes);
    ZPP_CHECK(ReadAll(fd, address.data(), bytes, deadline));
  }
  *all = std::move(addresses);
  return ncclSuccess;
}

Result ServeAddresses(const Fd& listener, int size, Clock::time_point deadline,
                      const std::function<bool()>& keep_waiting) {
  std::vector<Fd> connections(size);
  std::vector<Address> addresses(size);
  int arrived = 0;
  while (arrived < size) {
    if (!keep_waiting()) return ncclRemoteError;
    if (Clock::now() >= deadline) {
      ZPP_WARN(
          "bootstrap: only %d of %d ranks connected before the timeout (ZPP_TIMEOUT); the "
          "bootstrap fails (a rank that exited says why above; raise ZPP_TIMEOUT if ranks start "
          "slowly)",
          arrived, size);
      return ncclRemoteError;
    }
    Fd fd;
    const Result accepted =
        AcceptBefore(listener, std::min(deadline, Clock::now() + kPollStep), &fd);
    if (accepted == ncclInProgress) continue;
    ZPP_CHECK(accepted);
    const Clock::time_point hello_deadline = std::min(deadline, Clock::now() + kHelloWait);
    Hello hello{};
    ZPP_CHECK(ReadAll(fd, &hello, sizeof(hello), hello_deadline));
    if (hello.magic != kBootstrapMagic || hello.size != static_cast<uint32_t>(size) ||
        hello.rank >= static_cast<uint32_t>(size) || connections[hello.rank].valid() ||
        hello.address_bytes > kMaxAddressBytes) {
      ZPP_WARN(
          "bootstrap: bad hello (rank %u, size %u; expected a new rank of %d); the bootstrap fails "
          "(are zpp-launch and the ranks from one zpp build?)",
          hello.rank, hello.size, size);
      return ncclRemoteError;
    }
    addresses[hello.rank].resize(hello.address_bytes);
    ZPP_CHECK(ReadAll(fd, addresses[hello.rank].data(), hello.address_bytes, hello_deadline));
    connections[hello.rank] = std::move(fd);
    ++arrived;
  }
  std::vector<std::byte> table(sizeof(Table));
  const Table header{kBootstrapMagic, static_cast<uint32_t>(size)};
  std::memcpy(table.data(), &header, sizeof(header));
  for (const Address& address : addresses) {
    const uint32_t bytes = static_cast<uint32_t>(address.size());
    const auto* length = reinterpret_cast<const std::byte*>(&bytes);
    table.insert(table.end(), length, length + sizeof(bytes));
    table.insert(table.end(), address.begin(), address.end());
  }
  for (const Fd& fd : connections) ZPP_CHECK(WriteAll(fd, table.data(), table.size(), deadline));
  return ncclSuccess;
}

}  // namespace zpp::transport
