// DiscoverTopology end to end over a threaded all-gather: every rank reaches the same Topology,
// local trouble never skips the exchange (so nobody hangs), and the log says what happened.
#include "topology/discovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "common/hash.h"
#include "log_capture.h"
#include "thread_all_gather.h"
#include "topology/grouping.h"

namespace zpp::topology {
namespace {

using test_support::LogCapture;
using test_support::ThreadAllGather;
using test_support::ThreadGroup;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

config::EnvLookup NoEnv() {
  return [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
}

LocalFacts FactsOnHost(const std::string& host) {
  LocalFacts facts;
  facts.host.name = host;
  facts.host.hash = Fnv1a64(host);
  facts.host.basis = "test";
  return facts;
}

struct RankRun {
  Result result = ncclInternalError;
  Topology topology;
  int exchanges = 0;
};

// Runs DiscoverTopology on `configs.size()` threads, rank r on host hosts[r] with configs[r].
std::vector<RankRun> RunRanks(const std::vector<std::string>& hosts,
                              const std::vector<Config>& configs) {
  const int n = static_cast<int>(hosts.size());
  ThreadGroup group(n);
  std::vector<RankRun> runs(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      log::ScopedRank scoped(r);
      ThreadAllGather exchange(&group, r);
      RankRun& run = runs[static_cast<size_t>(r)];
      run.result =
          DiscoverTopology(configs[static_cast<size_t>(r)], NoEnv(),
                           FactsOnHost(hosts[static_cast<size_t>(r)]), exchange, &run.topology);
      run.exchanges = exchange.calls();
    });
  }
  for (std::thread& thread : threads) thread.join();
  return runs;
}

void ExpectSameTopology(const std::vector<RankRun>& runs) {
  for (const RankRun& run : runs) {
    EXPECT_EQ(run.result, ncclSuccess);
    EXPECT_EQ(run.exchanges, 1);
    EXPECT_EQ(run.topology.node_of_rank, runs[0].topology.node_of_rank);
    EXPECT_EQ(run.topology.local_rank, runs[0].topology.local_rank);
    EXPECT_EQ(run.topology.num_racks(), runs[0].topology.num_racks());
    EXPECT_EQ(run.topology.hierarchy, runs[0].topology.hierarchy);
    EXPECT_EQ(run.topology.rack_level_allowed, runs[0].topology.rack_level_allowed);
  }
}

TEST(DiscoveryTest, EveryRankReachesTheSameGroupingWithRacks) {
  LogCapture log;
  const std::vector<std::string> hosts = {"a", "a", "b", "b", "c", "c", "d", "d"};
  std::vector<Config> configs(8);
  for (int r = 0; r < 8; ++r) configs[static_cast<size_t>(r)].rack_id = r < 4 ? "r0" : "r1";
  const std::vector<RankRun> runs = RunRanks(hosts, configs);
  ExpectSameTopology(runs);
  const Topology& t = runs[0].topology;
  EXPECT_EQ(t.num_nodes(), 4);
  EXPECT_EQ(t.num_racks(), 2);
  EXPECT_TRUE(t.hierarchical_allowed());
  EXPECT_TRUE(t.rack_level_allowed);
  EXPECT_THAT(log.At("WARN"), IsEmpty()) << log.All();
  // The summary is logged once, by rank 0.
  EXPECT_THAT(log.At("INFO"),
              ::testing::Contains(AllOf(HasSubstr("[0]"), HasSubstr("8 ranks on 4 nodes"))));
}

TEST(DiscoveryTest, LocalSizeOverrideActsAsSeveralNodesOnOneMachine) {
  std::vector<Config> configs(8);
  for (Config& config : configs) config.local_size = 4;
  const std::vector<RankRun> runs = RunRanks(std::vector<std::string>(8, "box"), configs);
  ExpectSameTopology(runs);
  EXPECT_EQ(runs[0].topology.basis, GroupingBasis::kLocalSizeOverride);
  EXPECT_EQ(runs[0].topology.num_nodes(), 2);
  EXPECT_TRUE(runs[0].topology.hierarchical_allowed());
}

TEST(DiscoveryTest, LauncherRankIsRanksNumberOrUnset) {
  auto env_with = [](std::optional<std::string> rank) -> config::EnvLookup {
    return [rank](std::string_view name) { return name == "RANK" ? rank : std::nullopt; };
  };
  EXPECT_EQ(LauncherRank(env_with("3")), 3);
  EXPECT_EQ(LauncherRank(env_with("1023")), 1023);
  EXPECT_EQ(LauncherRank(env_with(std::nullopt)), -1);
  EXPECT_EQ(LauncherRank(env_with("")), -1);
  EXPECT_EQ(LauncherRank(env_with("-1")), -1);
  EXPECT_EQ(LauncherRank(env_with("2x")), -1);
  EXPECT_EQ(LauncherRank(env_with("99999999999999999999")), -1);
}

// A topology file that only some ranks can read: those ranks WARN and have no rack, the others
// have one, and the grouping turns that into one rack for everyone. Nobody skips the exchange.
TEST(DiscoveryTest, BadTopologyFileOnSomeRanksGivesOneRackAndNoHang) {
  LogCapture log;
  std::vector<Config> configs(4);
  configs[0].rack_id = "r0";
  configs[1].rack_id = "r0";
  configs[2].topo_file = "/nonexistent/racks";
  configs[3].topo_file = "/nonexistent/racks";
  const std::vector<RankRun> runs = RunRanks({"a", "a", "b", "b"}, configs);
  ExpectSameTopology(runs);
  EXPECT_EQ(runs[0].topology.num_racks(), 1);
  EXPECT_TRUE(runs[0].topology.hierarchical_allowed());
  const std::vector<std::string> warnings = log.At("WARN");
  EXPECT_THAT(warnings, ::testing::Contains(
                            AllOf(HasSubstr("[2]"), HasSubstr("/nonexistent/racks: cannot open"))));
  EXPECT_THAT(warnings,
              ::testing::Contains(AllOf(HasSubstr("[0]"),
                                        HasSubstr("rank 2 (host b) has no rack id but rank 0 (host "
                                                  "a) is in rack 'r0' (from ZPP_RACK_ID); zpp "
                                                  "treats the communicator as one rack"))));
}

TEST(DiscoveryTest, ShapeProblemsWarnOnlyWhenHierarchicalPlansAreAsked) {
  const std::vector<std::string> uneven = {"a", "a", "a", "b", "b", "b", "b"};
  {
    LogCapture log;
    const std::vector<RankRun> runs = RunRanks(uneven, std::vector<Config>(7));
    EXPECT_EQ(runs[0].topology.hierarchy, HierarchyVerdict::kUnevenNodes);
    EXPECT_THAT(log.At("WARN"), IsEmpty());
    EXPECT_THAT(log.At("INFO"), ::testing::Contains(HasSubstr("ranks per node are uneven")));
  }
  {
    LogCapture log;
    std::vector<Config> configs(7);
    for (Config& config : configs) config.hpz = 1;
    RunRanks(uneven, configs);
    // Once per communicator (rank 0), not once per rank.
    EXPECT_THAT(log.At("WARN"),
                ElementsAre(AllOf(HasSubstr("[0]"),
                                  HasSubstr("ranks per node are uneven (3 on node 0 (host a), 4 "
                                            "on node 1 (host b)); hierarchical plans disabled for "
                                            "this communicator, flat quantized plans still "
                                            "allowed"))));
  }
}

// An exchange that hands back bytes that are not records (a rank of another zpp build).
class CorruptingAllGather : public ByteAllGather {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Result AllGather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    std::memcpy(all.data(), mine.data(), mine.size());
    std::memcpy(all.data() + mine.size(), mine.data(), mine.size());
    all[mine.size() + 4] = std::byte{99};  // rank 1's version field
    return ncclSuccess;
  }
};

TEST(DiscoveryTest, UnreadableRecordGivesTheFallbackTopologyAndAWarning) {
  LogCapture log;
  CorruptingAllGather exchange;
  Topology topology;
  ASSERT_EQ(DiscoverTopology(Config{}, NoEnv(), FactsOnHost("a"), exchange, &topology),
            ncclSuccess);
  EXPECT_EQ(topology.basis, GroupingBasis::kFallback);
  EXPECT_EQ(topology.hierarchy, HierarchyVerdict::kUntrustedRecords);
  EXPECT_EQ(topology.num_nodes(), 2);
  EXPECT_THAT(log.At("WARN"),
              ElementsAre(HasSubstr("the topology record of rank 1 has version 99, this zpp "
                                    "reads version 2 (mixed zpp builds in one job?); zpp treats "
                                    "every rank as its own node in one rack; hierarchical plans "
                                    "disabled")));
}

class FailingAllGather : public ByteAllGather {
 public:
  int rank() const override { return 0; }
  int size() const override { return 4; }
  Result AllGather(std::span<const std::byte>, std::span<std::byte>) override {
    return ncclRemoteError;
  }
};

TEST(DiscoveryTest, FailedExchangeIsAnErrorAndAWarning) {
  LogCapture log;
  FailingAllGather exchange;
  Topology topology;
  EXPECT_EQ(DiscoverTopology(Config{}, NoEnv(), FactsOnHost("a"), exchange, &topology),
            ncclRemoteError);
  EXPECT_THAT(log.At("WARN"), ElementsAre(HasSubstr("topology exchange failed (ncclRemoteError): "
                                                    "zpp cannot plan for this communicator")));
}

// The threaded exchange itself gives up rather than hang when a rank never arrives, so a test of
// a missing rank fails instead of blocking CI.
TEST(DiscoveryTest, MissingRankTimesOutInsteadOfHanging) {
  LogCapture log;
  ThreadGroup group(2);
  ThreadAllGather exchange(&group, 0, std::chrono::milliseconds(50));
  Topology topology;
  EXPECT_EQ(DiscoverTopology(Config{}, NoEnv(), FactsOnHost("a"), exchange, &topology),
            ncclSystemError);
  EXPECT_THAT(log.At("WARN"), ElementsAre(HasSubstr("topology exchange failed")));
}

class OneRank : public ByteAllGather {
 public:
  explicit OneRank(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Result AllGather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    std::memcpy(all.data(), mine.data(), mine.size());
    return ncclSuccess;
  }

 private:
  int rank_;
  int size_;
};

TEST(DiscoveryTest, RankOutsideTheCommunicatorIsAnInvalidArgument) {
  LogCapture log;
  OneRank exchange(3, 2);
  Topology topology;
  EXPECT_EQ(DiscoverTopology(Config{}, NoEnv(), FactsOnHost("a"), exchange, &topology),
            ncclInvalidArgument);
  EXPECT_THAT(log.At("WARN"), ElementsAre(HasSubstr("rank 3 of 2")));
}

TEST(DiscoveryTest, FindingsOfOtherRanksStayOutOfWarnAndInfo) {
  LogCapture log;
  const Topology t = FallbackTopology(2, "test reason");
  LogFindings(t, 1, true);
  EXPECT_THAT(log.lines(), IsEmpty());  // TRACE only, and the capture is at INFO
  LogFindings(t, 0, true);
  EXPECT_THAT(log.At("WARN"), ElementsAre(HasSubstr("test reason")));
  EXPECT_THAT(log.At("WARN")[0], Not(HasSubstr("INFO")));
}

}  // namespace
}  // namespace zpp::topology
