// Eight processes under zpp-launch, bound over UCX, against eight threads: the engine matrix
// bitwise and byte for byte, a rank killed inside a collective, a rank with different settings,
// and a long run of small collectives with flat memory; two processes with two communicators.
// Every job is bounded in time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "launch_job.h"
#include "matrix_cases.h"
#include "mp_record.h"
#include "point_to_point.h"
#include "zpp/zpp.h"

namespace zpp::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kRanks[] = "8";

std::vector<std::string> Worker(std::vector<std::string> launcher_args,
                                const std::vector<std::string>& worker_args) {
  launcher_args.push_back("--");
  launcher_args.push_back(ZPP_MP_WORKER_BINARY);
  launcher_args.insert(launcher_args.end(), worker_args.begin(), worker_args.end());
  return launcher_args;
}

int CountOf(const std::string& text, const std::string& what) {
  int count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

TEST(MultiProcessTest, MatrixMatchesThreadsBitwiseWithSameByteCounts) {
  TempDir dir;
  const JobResult job =
      RunLauncher(Worker({"-n", kRanks, "--timeout", "200"}, {"matrix", dir.path()}), {}, 240);
  ASSERT_EQ(job.exit_code, 0) << job.stderr_text;

  const std::vector<MatrixTopology> topologies = MatrixTopologies();
  const std::vector<MatrixCase> cases = MatrixCases();
  std::vector<std::vector<RankRecord>> records(kMatrixRanks);
  for (int r = 0; r < kMatrixRanks; ++r) {
    ASSERT_TRUE(ReadRecords(RecordPath(dir.path(), "matrix", r), &records[r])) << "rank " << r;
    ASSERT_EQ(records[r].size(), cases.size()) << "rank " << r;
  }
  uint64_t off_node_total = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const MatrixCase& c = cases[i];
    const sim::ClusterLayout& layout = topologies[c.topology].layout;
    const CollectiveRun threads = RunCollective(layout, sim::ShapeOf(layout), c.settings, c.spec);
    ASSERT_EQ(threads.failures, 0);
    const std::string where = topologies[c.topology].name + " " + c.mode + " case " +
                              std::to_string(i) + " count " + std::to_string(c.spec.count);
    for (int r = 0; r < kMatrixRanks; ++r) {
      const RankRecord& process = records[r][i];
      ASSERT_EQ(process.case_index, i);
      ASSERT_EQ(process.failures, 0) << where << " rank " << r;
      EXPECT_EQ(process.plan_kind, static_cast<int32_t>(threads.plan.kind)) << where;
      EXPECT_EQ(process.plan_reason, static_cast<int32_t>(threads.plan.reason)) << where;
      ASSERT_EQ(process.output, threads.output[r]) << where << " rank " << r << ": output differs";
      for (int link = 0; link < zppNumLinks; ++link) {
        ASSERT_EQ(process.sent[link], threads.sent_bytes[r][link])
            << where << " rank " << r << " link " << link;
      }
      off_node_total += process.sent[zppLinkInterNode] + process.sent[zppLinkInterRack];
    }
  }
  EXPECT_GT(off_node_total, 0u);  // the comparison covered traffic between nodes
}

TEST(MultiProcessTest, PointToPointMatchesThreadsWithSameByteCounts) {
  TempDir dir;
  const JobResult job =
      RunLauncher(Worker({"-n", kRanks, "--timeout", "60"}, {"p2p", dir.path()}), {}, 90);
  ASSERT_EQ(job.exit_code, 0) << job.stderr_text;
  sim::SimWorld threads_world(sim::ClusterLayout::Uniform(2, 4));
  const PointToPointRun threads = RunPointToPoint(threads_world);
  ASSERT_EQ(threads.failures, 0);
  for (int r = 0; r < kMatrixRanks; ++r) {
    std::vector<RankRecord> records;
    ASSERT_TRUE(ReadRecords(RecordPath(dir.path(), "p2p", r), &records)) << "rank " << r;
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].failures, 0) << "rank " << r;
    ASSERT_EQ(records[0].output, threads.received[r]) << "rank " << r << ": messages differ";
    EXPECT_EQ(records[0].sent, threads.sent_bytes[r]) << "rank " << r;
  }
  // The ring's content, independently: rank r's first world message comes from rank r - 1.
  EXPECT_EQ(threads.received[0][0], static_cast<uint8_t>(7 * 31 + 0));
}

// Rank 3 kills itself (SIGKILL) inside its 21st all-gather; the others are in it or about to be.
// They see its process gone (issue 29, item 6), long before ZPP_TIMEOUT.
TEST(MultiProcessTest, KilledRankMakesSurvivorsFailAtOnce) {
  constexpr int kTimeoutSeconds = 60;
  constexpr double kSlackMs = 1500;  // scheduling of eight processes on two cores
  TempDir dir;
  const JobResult job = RunLauncher(
      Worker({"-n", kRanks, "--grace", "30", "--timeout", "90"}, {"fault", dir.path(), "3"}),
      {{"ZPP_TIMEOUT", std::to_string(kTimeoutSeconds)}}, 120);
  EXPECT_EQ(job.exit_code, 1) << job.stderr_text;
  EXPECT_THAT(job.stderr_text, HasSubstr("rank 3"));
  EXPECT_THAT(job.stderr_text, HasSubstr("killed by signal 9"));
  EXPECT_LT(job.seconds, 20.0);
  EXPECT_FALSE(std::ifstream(RecordPath(dir.path(), "fault", 3)).good());
  for (int r = 0; r < kMatrixRanks; ++r) {
    if (r == 3) continue;
    // Written after the rank released its transport (endpoints, worker, context).
    std::ifstream in(RecordPath(dir.path(), "fault", r));
    ASSERT_TRUE(in.good()) << "rank " << r << " did not finish cleanly\n" << job.stderr_text;
    int async_error = 0, next_call = 0;
    double failing_ms = 0, teardown_ms = 0;
    in >> async_error >> next_call >> failing_ms >> teardown_ms;
    ASSERT_TRUE(in) << "rank " << r;
    EXPECT_EQ(async_error, ncclRemoteError) << "rank " << r;
    EXPECT_EQ(next_call, ncclRemoteError) << "rank " << r << ": the engine must return the error";
    EXPECT_GT(failing_ms, 0) << "rank " << r;
    EXPECT_LE(failing_ms, kSlackMs) << "rank " << r;
    EXPECT_LE(teardown_ms, 2000) << "rank " << r;
  }
}

// A good job whose ranks but rank 0 leave without closing their transport; rank 0 closes 200 ms
// later, over TCP as across machines (UCX_TLS=^cma, the torch backend's choice): UCX's flushes
// to the ranks gone are not printed as errors (issue 46). Three jobs: before the fix, about 3 in
// 4 such jobs printed them.
TEST(MultiProcessTest, ClosingAfterThePeersLeftPrintsNoError) {
  for (int job_number = 0; job_number < 3; ++job_number) {
    TempDir dir;
    const JobResult job = RunLauncher(
        Worker({"-n", kRanks, "--grace", "30", "--timeout", "60"}, {"exit", dir.path(), "200"}),
        {{"UCX_TLS", "^cma"}}, 90);
    ASSERT_EQ(job.exit_code, 0) << job.stderr_text;
    EXPECT_EQ(CountOf(job.stdout_text + job.stderr_text, "ERROR"), 0)
        << job.stdout_text << job.stderr_text;
    for (int r = 0; r < kMatrixRanks; ++r) {
      std::ifstream in(RecordPath(dir.path(), "exit", r));
      int result = -1;
      double teardown_ms = 0;
      in >> result >> teardown_ms;
      ASSERT_TRUE(in) << "rank " << r << "\n" << job.stderr_text;
      EXPECT_EQ(result, ncclSuccess) << "rank " << r;
      EXPECT_LE(teardown_ms, 6000) << "rank " << r;  // the close's bound, 5 s, and slack
    }
  }
}

// A failed call's send still queued in UCX (eager, as zpp's default across machines without
// RDMA) must not be read after the error returns: the caller frees its buffer at once. Nor may
// its receive that UCX matched and cannot cancel write the rest of its message, arriving later,
// into the caller's buffer. Both go through a CallerBuffer that the failed call detaches, on
// this machine and taken to be on others (TCP, UCX's peer-failure mode, no RDMA here). The
// variants across machines run that path but pass with a forced close instead too
// (bench/results/caller_buffer_ab_cpu.json): only this machine's variants hold the detach.
void ExpectFailedCallsBufferUntouchedAfterTheError(std::vector<std::string> scenario) {
  TempDir dir;
  const std::string name = scenario.front();
  const int recording_rank = name == "stuck-send" ? 0 : 1;
  scenario.insert(scenario.begin() + 1, dir.path());
  const JobResult job = RunLauncher(Worker({"-n", kRanks, "--timeout", "60"}, scenario),
                                    {{"ZPP_TIMEOUT", "1"}, {"UCX_RNDV_THRESH", "inf"}}, 90);
  ASSERT_EQ(job.exit_code, 0) << job.stderr_text << job.stdout_text;
  std::ifstream in(RecordPath(dir.path(), name, recording_rank));
  int result = -1;
  double close_ms = -1;
  in >> result >> close_ms;
  ASSERT_TRUE(in);
  EXPECT_EQ(result, ncclRemoteError);
  EXPECT_THAT(job.stdout_text + job.stderr_text, Not(HasSubstr("Caught signal")));
}

TEST(MultiProcessTest, FailedSendsBufferIsNotReadAfterTheError) {
  ExpectFailedCallsBufferUntouchedAfterTheError({"stuck-send"});
}

TEST(MultiProcessTest, FailedSendToAnotherMachineIsNotReadAfterTheError) {
  ExpectFailedCallsBufferUntouchedAfterTheError({"stuck-send", "remote"});
}

TEST(MultiProcessTest, FailedReceivesBufferIsNotWrittenAfterTheError) {
  ExpectFailedCallsBufferUntouchedAfterTheError({"stuck-receive"});
}

TEST(MultiProcessTest, FailedReceiveFromAnotherMachineIsNotWrittenAfterTheError) {
  ExpectFailedCallsBufferUntouchedAfterTheError({"stuck-receive", "remote"});
}

// Two ranks make calls on two communicators over TCP (two_communicators.h), with UCX's socket
// send buffers at 8 KB so that a call often ends with bytes of its worker still to move. Before
// idle waits progressed the other communicators' workers, alternating calls hung within the
// first 300 rounds in 9 of 10 jobs (bench/results/two_communicators_cpu.md), so three such jobs
// all pass with it about once in a thousand. `how`: "" to alternate, "threads" for each
// communicator's calls on a thread of its own, both at once.
void ExpectTwoCommunicatorsComplete(const std::string& how) {
  constexpr int kRounds = 300;
  TempDir dir;
  std::vector<std::string> scenario = {"two-comms", dir.path(), std::to_string(kRounds)};
  if (!how.empty()) scenario.push_back(how);
  const JobResult job = RunLauncher(Worker({"-n", "2", "--timeout", "60"}, scenario),
                                    {{"ZPP_TIMEOUT", "3"}, {"UCX_TCP_SNDBUF", "8k"}}, 90);
  EXPECT_EQ(job.exit_code, 0) << job.stderr_text;
  for (int r = 0; r < 2; ++r) {
    std::ifstream in(RecordPath(dir.path(), "two-comms", r));
    int rounds = -1, result = -1;
    in >> rounds >> result;
    ASSERT_TRUE(in) << "rank " << r << "\n" << job.stderr_text;
    EXPECT_EQ(rounds, kRounds) << "rank " << r << "\n" << job.stderr_text;
    EXPECT_EQ(result, ncclSuccess) << "rank " << r;
  }
}

TEST(MultiProcessTest, CallsOnTwoCommunicatorsOverTcpNeverWaitOnEachOther) {
  for (int job = 0; job < 3; ++job) ExpectTwoCommunicatorsComplete("");
}

// Both communicators at once, each waited on by its own thread, as the torch backend runs them:
// ProgressOthers beside other threads' calls, for make tsan. The test above is the one that
// holds the fix (tools/mutants.toml); here each worker is mostly driven by its own wait.
TEST(MultiProcessTest, TwoCommunicatorsOnTwoThreadsOverTcpComplete) {
  ExpectTwoCommunicatorsComplete("threads");
}

TEST(MultiProcessTest, RankWithDifferentSettingsFallsBackEverywhere) {
  TempDir dir;
  const JobResult job =
      RunLauncher(Worker({"-n", kRanks, "--timeout", "60", "--rank-env", "5:ZPP_QWZ_BITS=4"},
                         {"mismatch", dir.path()}),
                  {{"ZPP_QWZ", "1"}, {"ZPP_MIN_BYTES", "0"}}, 90);
  ASSERT_EQ(job.exit_code, 0) << job.stderr_text;
  EXPECT_EQ(CountOf(job.stderr_text,
                    "ZPP_QWZ_BITS (rank 0: 8, rank 5: 4); this communicator "
                    "uses plain NCCL"),
            kMatrixRanks)
      << job.stderr_text;

  constexpr size_t kCount = 1000;
  for (int r = 0; r < kMatrixRanks; ++r) {
    std::vector<RankRecord> records;
    ASSERT_TRUE(ReadRecords(RecordPath(dir.path(), "mismatch", r), &records)) << "rank " << r;
    ASSERT_EQ(records.size(), 2u);
    for (const RankRecord& record : records) {
      EXPECT_EQ(record.failures, 0) << "rank " << r;
      EXPECT_EQ(record.plan_kind, static_cast<int32_t>(plan::PlanKind::kPassThrough));
      EXPECT_EQ(record.plan_reason, zppReasonConfigMismatch) << "rank " << r;
    }
    // The plain collectives' exact results (inputs: rank r's element i is r * 0.5 + i).
    std::vector<float> gathered(kCount * kMatrixRanks), reduced(kCount, 0.0f);
    for (int s = 0; s < kMatrixRanks; ++s) {
      for (size_t i = 0; i < kCount; ++i) {
        gathered[s * kCount + i] = static_cast<float>(s * 0.5 + i);
        reduced[i] += static_cast<float>(s * 0.5 + (r * kCount + i));
      }
    }
    std::vector<uint8_t> expected_gather(gathered.size() * 4), expected_reduce(kCount * 4);
    std::memcpy(expected_gather.data(), gathered.data(), expected_gather.size());
    std::memcpy(expected_reduce.data(), reduced.data(), expected_reduce.size());
    EXPECT_EQ(records[0].output, expected_gather) << "rank " << r;
    EXPECT_EQ(records[1].output, expected_reduce) << "rank " << r;
  }
}

// 10^5 engine calls on every rank (plain, hpZ, qwZ, qgZ; all-gathers and reduce-scatters of 4 B
// to 64 KiB): no error, every result checked by the rank itself, and the resident set after the
// first tenth no larger at the end, nor at any point, than a small allowance.
// Under the sanitizers, which check memory and threads (their allocators hold freed memory back,
// so the resident set is not the program's), a shorter run and no memory bound.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int64_t kLoadCalls = 2000;
constexpr bool kCheckResidentSet = false;
#else
constexpr int64_t kLoadCalls = 100000;
constexpr bool kCheckResidentSet = true;
#endif

TEST(MultiProcessTest, LoadOfManyCollectivesKeepsMemoryFlat) {
  constexpr int64_t kCalls = kLoadCalls;
  constexpr uint64_t kAllowance = uint64_t{4} << 20;
  TempDir dir;
  const JobResult job = RunLauncher(
      Worker({"-n", kRanks, "--timeout", "280"}, {"load", dir.path(), std::to_string(kCalls)}), {},
      290);
  ASSERT_EQ(job.exit_code, 0) << job.stderr_text;
  for (int r = 0; r < kMatrixRanks; ++r) {
    std::ifstream in(RecordPath(dir.path(), "load", r));
    int64_t calls = 0, errors = 0, wrong = 0;
    uint64_t rss_warm = 0, rss_end = 0, rss_max = 0;
    double seconds = 0;
    in >> calls >> errors >> wrong >> rss_warm >> rss_end >> rss_max >> seconds;
    ASSERT_TRUE(in) << "rank " << r;
    EXPECT_EQ(calls, kCalls) << "rank " << r;
    EXPECT_EQ(errors, 0) << "rank " << r;
    EXPECT_EQ(wrong, 0) << "rank " << r;
    ASSERT_GT(rss_warm, 0u) << "rank " << r;
    if (kCheckResidentSet) {
      EXPECT_LE(rss_end, rss_warm + kAllowance) << "rank " << r;
      EXPECT_LE(rss_max, rss_warm + kAllowance) << "rank " << r;
    }
    RecordProperty("rank" + std::to_string(r) + "_rss_warm_kib", std::to_string(rss_warm >> 10));
    RecordProperty("rank" + std::to_string(r) + "_rss_end_kib", std::to_string(rss_end >> 10));
    RecordProperty("rank" + std::to_string(r) + "_rss_max_kib", std::to_string(rss_max >> 10));
  }
}

TEST(LauncherTest, FailingRankStopsTheJobWithAClearMessage) {
  const JobResult job = RunLauncher({"-n", "4", "--timeout", "60", "--", "/bin/sh", "-c",
                                     "if [ \"$ZPP_LAUNCH_RANK\" = 2 ]; then exit 3; fi; sleep 60"},
                                    {}, 90);
  EXPECT_EQ(job.exit_code, 1);
  EXPECT_THAT(job.stderr_text, HasSubstr("rank 2"));
  EXPECT_THAT(job.stderr_text, HasSubstr("exited with status 3"));
  EXPECT_LT(job.seconds, 10.0);  // the others were killed, not waited for
}

TEST(LauncherTest, RanksThatNeverBootstrapFailWithinTimeout) {
  const JobResult job =
      RunLauncher({"-n", "2", "--", "/bin/sleep", "60"}, {{"ZPP_TIMEOUT", "1"}}, 60);
  EXPECT_EQ(job.exit_code, 1);
  EXPECT_THAT(job.stderr_text, HasSubstr("0 of 2 ranks connected"));
  EXPECT_LT(job.seconds, 5.0);
}

// Issue 29, item 9: fewer ranks than the worker's cluster layout is one clear line per rank, and
// no UCX noise (the ranks stop before they open a worker).
TEST(LauncherTest, FewerRanksThanTheLayoutSayHowMany) {
  TempDir out;
  const JobResult job = RunLauncher(
      {"-n", "2", "--timeout", "60", "--", ZPP_MP_WORKER_BINARY, "matrix", out.path()}, {}, 90);
  EXPECT_EQ(job.exit_code, 1);
  EXPECT_THAT(job.stderr_text, HasSubstr("zpp-launch started 2 ranks; the cluster layout has 8"));
  EXPECT_THAT(job.stderr_text, ::testing::Not(HasSubstr("UCX")));
  EXPECT_THAT(job.stderr_text, ::testing::Not(HasSubstr("ucp")));
  EXPECT_LT(job.seconds, 10.0);
}

TEST(LauncherTest, JobPastItsTimeoutIsStopped) {
  const JobResult job =
      RunLauncher({"-n", "2", "--timeout", "1", "--", "/bin/sleep", "60"}, {}, 60);
  EXPECT_EQ(job.exit_code, 124) << job.stderr_text;
  EXPECT_THAT(job.stderr_text, HasSubstr("--timeout"));
  EXPECT_LT(job.seconds, 5.0);
}

}  // namespace
}  // namespace zpp::test
