// "Never hangs", seen in seconds: a simulated collective that one rank never joins fails on the
// others with ncclRemoteError after the rendezvous deadline, with a WARN naming the collective,
// instead of blocking their streams until ctest's timeout kills the binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "log/log.h"
#include "sim/sim_backend.h"
#include "transport/in_process_transport.h"

namespace zpp {
namespace {

using Clock = std::chrono::steady_clock;
// Long enough that members that all come (under the sanitizers, on a loaded machine) never
// miss it; short enough for a test.
constexpr auto kDeadline = std::chrono::milliseconds(1500);
// Far above the deadline plus the work, far below ctest's 300 s: a wait without a limit fails.
constexpr auto kInTime = std::chrono::seconds(15);

class LogLines {
 public:
  LogLines() {
    log::SetSinkForTesting([this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.emplace_back(line);
    });
  }
  ~LogLines() { log::SetSinkForTesting(nullptr); }
  int Containing(std::string_view text) {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(std::count_if(lines_.begin(), lines_.end(), [&](const std::string& l) {
      return l.find(text) != std::string::npos;
    }));
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

sim::SimWorld WorldWithDeadline(sim::ClusterLayout layout) {
  return sim::SimWorld(std::move(layout), /*local_rank=*/-1,
                       std::make_shared<transport::InProcessTransport>(kDeadline));
}

// Rank `absent` skips the collective `call` runs on every other rank; returns each rank's
// AsyncError after its stream drained, and how long the whole world took.
template <typename Call>
std::vector<Result> SkipOnOneRank(sim::ClusterLayout layout, int absent, Call call,
                                  Clock::duration* took) {
  sim::SimWorld world = WorldWithDeadline(std::move(layout));
  std::vector<Result> errors(world.world_size(), ncclSuccess);
  const Clock::time_point start = Clock::now();
  world.RunRanks([&](sim::SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    if (backend.rank() != absent) {
      ASSERT_EQ(call(backend, *stream), ncclSuccess);
    }
    backend.Synchronize(*stream);
    errors[backend.rank()] = backend.AsyncError();
    // A rank whose call failed is broken: a later collective fails when called, without waiting.
    if (errors[backend.rank()] != ncclSuccess) {
      EXPECT_EQ(call(backend, *stream), ncclRemoteError);
    }
  });
  *took = Clock::now() - start;
  return errors;
}

TEST(RendezvousDeadlineTest, AllGatherThatOneRankSkipsFailsTheOthersInTime) {
  LogLines lines;
  std::vector<char> send(64, 1);
  std::vector<std::vector<char>> recv(4, std::vector<char>(64 * 4));  // per rank
  Clock::duration took{};
  const std::vector<Result> errors = SkipOnOneRank(
      sim::ClusterLayout::Uniform(1, 4), /*absent=*/2,
      [&](sim::SimBackend& backend, Stream& stream) {
        return backend.AllGather(send.data(), recv[backend.rank()].data(), send.size(),
                                 GroupKind::kWorld, stream);
      },
      &took);
  EXPECT_LT(took, kInTime);
  EXPECT_GE(took, kDeadline);
  for (int rank : {0, 1, 3}) EXPECT_EQ(errors[rank], ncclRemoteError) << "rank " << rank;
  EXPECT_EQ(errors[2], ncclSuccess);
  EXPECT_EQ(lines.Containing("all-gather #0 on its world group"), 3);
}

TEST(RendezvousDeadlineTest, AllToAllThatOneRankSkipsFailsTheOthersInTime) {
  LogLines lines;
  std::vector<char> send(4 * 16, 1);
  std::vector<std::vector<char>> recv(8, std::vector<char>(4 * 16));  // per rank
  Clock::duration took{};
  const std::vector<Result> errors = SkipOnOneRank(
      sim::ClusterLayout::Uniform(2, 4), /*absent=*/5,
      [&](sim::SimBackend& backend, Stream& stream) {
        return backend.AllToAll(send.data(), recv[backend.rank()].data(), 16, GroupKind::kIntraNode,
                                stream);
      },
      &took);
  EXPECT_LT(took, kInTime);
  // Node 0's ranks all came: their call completes. Node 1's three others time out.
  for (int rank : {0, 1, 2, 3, 5}) EXPECT_EQ(errors[rank], ncclSuccess) << "rank " << rank;
  for (int rank : {4, 6, 7}) EXPECT_EQ(errors[rank], ncclRemoteError) << "rank " << rank;
  EXPECT_EQ(lines.Containing("all-to-all #0 on its intra-node group"), 3);
}

TEST(RendezvousDeadlineTest, ReceiveWithoutItsSendFailsInTime) {
  LogLines lines;
  std::vector<char> buffer(32);
  sim::SimWorld world = WorldWithDeadline(sim::ClusterLayout::Uniform(1, 2));
  std::vector<Result> errors(2, ncclSuccess);
  const Clock::time_point start = Clock::now();
  world.RunRanks([&](sim::SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    if (backend.rank() == 1) {
      ASSERT_EQ(backend.Recv(buffer.data(), buffer.size(), 0, GroupKind::kWorld, *stream),
                ncclSuccess);
    }
    backend.Synchronize(*stream);
    errors[backend.rank()] = backend.AsyncError();
  });
  EXPECT_LT(Clock::now() - start, kInTime);
  EXPECT_EQ(errors[0], ncclSuccess);
  EXPECT_EQ(errors[1], ncclRemoteError);
  EXPECT_EQ(lines.Containing("receive #0"), 1);
}

// The same collective with every rank present completes: the deadline only bounds a wait.
TEST(RendezvousDeadlineTest, EveryRankPresentCompletes) {
  sim::SimWorld world = WorldWithDeadline(sim::ClusterLayout::Uniform(2, 2));
  world.RunRanks([&](sim::SimBackend& backend) {
    std::unique_ptr<Stream> stream;
    ASSERT_EQ(backend.CreateStream(&stream), ncclSuccess);
    std::vector<int> send(8, backend.rank()), recv(8 * 4, -1);
    for (int i = 0; i < 20; ++i) {
      ASSERT_EQ(
          backend.AllGather(send.data(), recv.data(), sizeof(int) * 8, GroupKind::kWorld, *stream),
          ncclSuccess);
    }
    backend.Synchronize(*stream);
    EXPECT_EQ(backend.AsyncError(), ncclSuccess);
    for (int r = 0; r < 4; ++r) EXPECT_EQ(recv[r * 8], r);
  });
}

}  // namespace
}  // namespace zpp
