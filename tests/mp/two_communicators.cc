#include "two_communicators.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "config/config.h"
#include "transport/ucp_transport.h"

namespace zpp::test {
namespace {

using transport::Address;
using transport::UcpTransport;

constexpr size_t kLargeBytes = size_t{1} << 20;
constexpr size_t kSmallBytes = 64;

// Every rank's address, gathered over `over`: the lengths, then the addresses padded to the
// longest.
Result GatherAddresses(transport::Transport& over, int rank, int size, const Address& mine,
                       std::vector<Address>* all) {
  std::vector<int> members(size);
  for (int r = 0; r < size; ++r) members[r] = r;
  const transport::GroupView world{GroupKind::kWorld, members, rank};
  const uint64_t length = mine.size();
  std::vector<uint64_t> lengths(size);
  ZPP_CHECK(over.AllGather(rank, world, 0, &length, lengths.data(), sizeof(length)));
  const size_t longest = *std::max_element(lengths.begin(), lengths.end());
  Address padded = mine;
  padded.resize(longest);
  std::vector<std::byte> table(longest * size);
  ZPP_CHECK(over.AllGather(rank, world, 1, padded.data(), table.data(), longest));
  all->resize(size);
  for (int r = 0; r < size; ++r) {
    (*all)[r].assign(table.begin() + r * longest, table.begin() + r * longest + lengths[r]);
  }
  return ncclSuccess;
}

Result OpenSecond(const sim::LaunchedJob& job, std::unique_ptr<UcpTransport>* out) {
  const std::chrono::milliseconds timeout = std::chrono::seconds(GetConfig().timeout);
  Address mine;
  ZPP_CHECK(UcpTransport::Open(job.rank, job.size, UcpTransport::Reach::kAnyMachine, timeout, out,
                               &mine));
  std::vector<Address> all;
  ZPP_CHECK(GatherAddresses(*job.transport, job.rank, job.size, mine, &all));
  return (*out)->Connect(all, UcpTransport::Placement::kAllOnOtherMachines);
}

// One exchange of `bytes` between ranks 0 and 1, each sending bytes of value `fill + rank`:
// ncclSuccess only when the peer's bytes all arrived.
Result Exchange(transport::Transport& over, const char* name, int rank, uint64_t sequence,
                size_t bytes, uint8_t fill) {
  over.BeginCall({sequence, static_cast<uint32_t>(bytes), name});
  const int pair[] = {0, 1};
  const transport::GroupView group{GroupKind::kWorld, pair, rank};
  std::vector<uint8_t> send(bytes, static_cast<uint8_t>(fill + rank)), receive(bytes * 2);
  ZPP_CHECK(over.AllGather(rank, group, sequence, send.data(), receive.data(), bytes));
  const auto peer = static_cast<uint8_t>(fill + (1 - rank));
  const uint8_t* from_peer = receive.data() + (1 - rank) * bytes;
  return std::all_of(from_peer, from_peer + bytes, [peer](uint8_t b) { return b == peer; })
             ? ncclSuccess
             : ncclInternalError;
}

// One communicator's part of the scenario: its name in errors, the sequence of its first
// exchange (the first communicator's sequences 0 and 1 carried the address exchange), the
// bytes each rank sends per exchange, and what its fill adds to the round's (the two
// communicators' bytes differ: one landing on the other is seen).
struct Side {
  transport::Transport& over;
  const char* name;
  uint64_t first_sequence;
  size_t bytes;
  uint8_t fill_offset;
};

Result Round(const Side& side, int rank, int round) {
  return Exchange(side.over, side.name, rank, side.first_sequence + round, side.bytes,
                  static_cast<uint8_t>(round * 2 + side.fill_offset));
}

// `rounds` exchanges on one side, each checked.
TwoCommunicatorsRun Rounds(const Side& side, int rank, int rounds) {
  TwoCommunicatorsRun run;
  for (int round = 0; round < rounds && run.first_failure == ncclSuccess; ++round) {
    run.first_failure = Round(side, rank, round);
    if (run.first_failure == ncclSuccess) ++run.rounds_done;
  }
  return run;
}

}  // namespace

TwoCommunicatorsRun RunTwoCommunicators(const sim::LaunchedJob& job, int rounds, bool on_threads) {
  TwoCommunicatorsRun run;
  std::unique_ptr<UcpTransport> second_transport;
  run.first_failure = OpenSecond(job, &second_transport);
  if (run.first_failure != ncclSuccess) return run;
  const Side first{*job.transport, "the first's exchange", 2, kLargeBytes, 0};
  const Side second{*second_transport, "the second's exchange", 0, kSmallBytes, 100};
  if (on_threads) {
    TwoCommunicatorsRun first_run;
    std::thread first_thread([&] { first_run = Rounds(first, job.rank, rounds); });
    const TwoCommunicatorsRun second_run = Rounds(second, job.rank, rounds);
    first_thread.join();
    run.rounds_done = std::min(first_run.rounds_done, second_run.rounds_done);
    run.first_failure =
        first_run.first_failure != ncclSuccess ? first_run.first_failure : second_run.first_failure;
    return run;
  }
  for (int round = 0; round < rounds && run.first_failure == ncclSuccess; ++round) {
    run.first_failure = Round(first, job.rank, round);
    if (run.first_failure == ncclSuccess) run.first_failure = Round(second, job.rank, round);
    if (run.first_failure == ncclSuccess) ++run.rounds_done;
  }
  return run;
}

}  // namespace zpp::test
