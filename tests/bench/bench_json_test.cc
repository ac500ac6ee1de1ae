// zpp-bench as a user runs it: the JSON it writes has the documented fields with the right
// types and consistent values, and --backend nccl without a GPU fails plainly, no figures faked.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/common/run_command.h"

namespace zpp::bench {
namespace {

using Command = zpp::test::CommandRun;
using zpp::test::RunCommand;

const char* const kRowFields[] = {"op",
                                  "mode",
                                  "dtype",
                                  "bytes",
                                  "time_us",
                                  "algbw_gbps",
                                  "busbw_gbps",
                                  "bytes_intra_node",
                                  "bytes_inter_node",
                                  "bytes_inter_rack",
                                  "rel_l2_err",
                                  "max_abs_err",
                                  "wrong",
                                  "kernel_launches",
                                  "collective_launches"};
const char* const kStepFields[] = {
    "model",   "config",   "inter_node_bytes_per_step", "relative_volume", "rel_l2_err",
    "buffers", "hpz_hits", "hpz_verify_failures"};

class BenchJsonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(testing::TempDir() + "zpp_bench_test.json");
    std::remove(path_->c_str());
    run_ = new Command(
        RunCommand(std::string(ZPP_BENCH_BINARY) +
                   " --backend sim --nodes 2 --gpus-per-node 2 -b 64K -e 256K -f 4 -w 0 -n 1"
                   " --zpp-min-bytes 0 --modes plain,qwz,qwz4+hpz,qgz,zero++ -d bfloat16,float"
                   " --step-model 125M --step-configs qwz8,zero++ --steps 3 --step-elements 65536"
                   " --json " +
                   *path_));
    std::ifstream file(*path_);
    report_ = new nlohmann::json(nlohmann::json::parse(file, nullptr, false));
  }
  static void TearDownTestSuite() {
    std::remove(path_->c_str());
    delete report_;
    delete run_;
    delete path_;
  }
  static std::string* path_;
  static Command* run_;
  static nlohmann::json* report_;
};

std::string* BenchJsonTest::path_ = nullptr;
Command* BenchJsonTest::run_ = nullptr;
nlohmann::json* BenchJsonTest::report_ = nullptr;

TEST_F(BenchJsonTest, RunsAndWritesJson) {
  ASSERT_EQ(run_->exit_code, 0) << run_->output;
  ASSERT_FALSE(report_->is_discarded()) << "not JSON: " << *path_;
  ASSERT_TRUE(report_->is_object());
  for (const char* key : {"machine", "backend", "nccl_version"}) {
    ASSERT_TRUE(report_->contains(key)) << key;
    EXPECT_TRUE((*report_)[key].is_string()) << key;
    EXPECT_FALSE((*report_)[key].get<std::string>().empty()) << key;
  }
  EXPECT_EQ((*report_)["backend"], "sim");
  ASSERT_TRUE((*report_)["rows"].is_array());
  ASSERT_TRUE((*report_)["steps"].is_array());
  // The table is printed too, with nccl-tests' columns.
  for (const char* column : {"size", "count", "type", "time", "algbw", "busbw", "#wrong"}) {
    EXPECT_NE(run_->output.find(column), std::string::npos) << column;
  }
}

TEST_F(BenchJsonTest, RowsHaveEveryFieldWithItsType) {
  const nlohmann::json& rows = (*report_)["rows"];
  // 2 dtypes x (all-gather: plain, qwz8, qwz4+hpz, zero++; reduce-scatter: plain, qgz, zero++)
  // x 2 sizes.
  ASSERT_EQ(rows.size(), 2u * 7u * 2u);
  std::set<std::string> modes;
  for (const nlohmann::json& row : rows) {
    for (const char* field : kRowFields) ASSERT_TRUE(row.contains(field)) << field << row;
    EXPECT_TRUE(row["op"] == "allgather" || row["op"] == "reducescatter") << row;
    EXPECT_TRUE(row["dtype"] == "bfloat16" || row["dtype"] == "float") << row;
    for (const char* field :
         {"bytes", "bytes_intra_node", "bytes_inter_node", "bytes_inter_rack"}) {
      EXPECT_TRUE(row[field].is_number_unsigned()) << field << row;
    }
    for (const char* field : {"time_us", "algbw_gbps", "busbw_gbps", "rel_l2_err", "max_abs_err"}) {
      EXPECT_TRUE(row[field].is_number()) << field << row;
      EXPECT_GE(row[field].get<double>(), 0.0) << field << row;
    }
    EXPECT_GT(row["time_us"].get<double>(), 0.0) << row;
    // The sim counts launches: a pass-through is one collective and no kernel; a zpp plan at
    // least one kernel (its codec).
    ASSERT_TRUE(row["kernel_launches"].is_number() && row["collective_launches"].is_number())
        << row;
    EXPECT_EQ(row["kernel_launches"].get<double>() == 0.0, row["plan"] == "pass-through") << row;
    // busbw = algbw x (n-1)/n with n = 4; algbw = bytes / time.
    EXPECT_NEAR(row["busbw_gbps"].get<double>(), row["algbw_gbps"].get<double>() * 3 / 4, 1e-9);
    EXPECT_NEAR(row["algbw_gbps"].get<double>(),
                row["bytes"].get<double>() / row["time_us"].get<double>() / 1e3, 1e-9);
    modes.insert(row["mode"].get<std::string>());
    if (row["mode"] == "plain") {
      // Lossless: #wrong is a count, and zero. The ring takes each rank's quarter of the buffer
      // to the other node once: 4 ranks x bytes / 4.
      ASSERT_TRUE(row["wrong"].is_number_unsigned()) << row;
      EXPECT_EQ(row["wrong"].get<uint64_t>(), 0u) << row;
      EXPECT_EQ(row["bytes_inter_node"].get<uint64_t>(), row["bytes"].get<uint64_t>()) << row;
      if (row["op"] == "allgather") {
        EXPECT_EQ(row["rel_l2_err"].get<double>(), 0.0) << row;
      }
    } else {
      // Quantized across nodes: fewer bytes there, some error, #wrong not applicable.
      EXPECT_TRUE(row["wrong"].is_null()) << row;
      EXPECT_LT(row["bytes_inter_node"].get<uint64_t>(), row["bytes"].get<uint64_t>()) << row;
      EXPECT_GT(row["rel_l2_err"].get<double>(), 0.0) << row;
      EXPECT_LT(row["rel_l2_err"].get<double>(), 0.2) << row;
    }
  }
  EXPECT_EQ(modes, (std::set<std::string>{"plain", "qwz8", "qwz4+hpz", "qgz8/4", "zero++"}));
}

TEST_F(BenchJsonTest, StepsHaveEveryFieldPlainFirst) {
  const nlohmann::json& steps = (*report_)["steps"];
  ASSERT_EQ(steps.size(), 3u);  // plain added in front of the two asked for
  for (const nlohmann::json& step : steps) {
    for (const char* field : kStepFields) ASSERT_TRUE(step.contains(field)) << field << step;
    EXPECT_EQ(step["model"], "125M");
    EXPECT_TRUE(step["inter_node_bytes_per_step"].is_number());
    EXPECT_TRUE(step["rel_l2_err"].is_number());
  }
  EXPECT_EQ(steps[0]["config"], "plain");
  EXPECT_EQ(steps[0]["relative_volume"].get<double>(), 3.0);
  EXPECT_EQ(steps[1]["config"], "qwz8");
  EXPECT_EQ(steps[2]["config"], "zero++");
  EXPECT_LE(steps[2]["relative_volume"].get<double>(), 0.80);
  // The closing summary: one line per configuration.
  EXPECT_NE(run_->output.find("zero++             inter-node volume"), std::string::npos);
}

// --step-buffers framework: gathers into recycled blocks, in place, as FSDP2 does. hpZ's reuse
// is found from content, so the figures are the dedicated buffers' (0.766 at full replay size).
TEST(BenchStepBuffersTest, FrameworkBuffersGiveTheDedicatedFigures) {
  std::map<std::string, nlohmann::json> zero;
  for (const char* buffers : {"dedicated", "framework"}) {
    const std::string path = testing::TempDir() + "zpp_bench_buffers_" + buffers + ".json";
    const Command run = RunCommand(std::string(ZPP_BENCH_BINARY) +
                                   " --no-sweep --nodes 2 --gpus-per-node 4 --step-model 125M"
                                   " --step-configs zero++ --steps 4 --step-elements 65536"
                                   " --step-buffers " +
                                   buffers + " --json " + path);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    std::ifstream file(path);
    const nlohmann::json report = nlohmann::json::parse(file, nullptr, false);
    std::remove(path.c_str());
    ASSERT_TRUE(report.is_object()) << run.output;
    ASSERT_EQ(report["steps"].size(), 2u);
    EXPECT_NE(run.output.find(std::string(buffers) + " buffers"), std::string::npos);
    zero[buffers] = report["steps"][1];
  }
  const nlohmann::json& framework = zero["framework"];
  EXPECT_EQ(framework["buffers"], "framework");
  EXPECT_EQ(zero["dedicated"]["buffers"], "dedicated");
  EXPECT_EQ(framework["hpz_verify_failures"].get<uint64_t>(), 0u);
  // 125M is 13 units (embeddings, 12 blocks): every backward gather of 8 ranks in steps 0 to 3.
  EXPECT_EQ(framework["hpz_hits"].get<uint64_t>(), 8u * 13u * 4u);
  EXPECT_EQ(framework["hpz_hits"], zero["dedicated"]["hpz_hits"]);
  EXPECT_EQ(framework["relative_volume"], zero["dedicated"]["relative_volume"]);
}

// No GPU here (and no CUDA in the sanitizer builds): the GPU runner says what it needs.
// DDP's and HSDP's all-reduce in nccl-tests' all_reduce_perf form: size is the buffer, busbw
// 2(n-1)/n of algbw; plain is NCCL's ring (each rank's share crosses to the other node twice:
// reduced, then gathered) and exact; qAR's bytes are the issue's 0.27 (8 bits) and 0.14 (4 bits
// with error feedback) of it at most.
TEST(BenchAllReduceTest, AllReducePerfColumnsAndCompressedFigures) {
  const std::string path = testing::TempDir() + "zpp_bench_all_reduce.json";
  std::remove(path.c_str());
  // The sweep's numbers twice, as tools/gpu-bench.sh appends its caller's: the last ones win.
  const Command run = RunCommand(std::string(ZPP_BENCH_BINARY) +
                                 " --backend sim --nodes 2 --gpus-per-node 2 --ops allreduce"
                                 " -b 8 -e 256M -f 2 -w 2 -n 10"
                                 " --modes plain,qar8,qar4+ef -b 256K -e 1M -f 4 -w 0 -n 1"
                                 " --zpp-min-bytes 0 -d float --json " +
                                 path);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream file(path);
  const nlohmann::json report = nlohmann::json::parse(file, nullptr, false);
  std::remove(path.c_str());
  ASSERT_FALSE(report.is_discarded());
  const nlohmann::json& rows = report["rows"];
  ASSERT_EQ(rows.size(), 3u * 2u);  // 3 modes x 2 sizes
  std::map<std::pair<std::string, uint64_t>, nlohmann::json> by;
  for (const nlohmann::json& row : rows) {
    EXPECT_EQ(row["op"], "allreduce") << row;
    EXPECT_NEAR(row["busbw_gbps"].get<double>(), row["algbw_gbps"].get<double>() * 2 * 3 / 4, 1e-9);
    by[{row["mode"].get<std::string>(), row["bytes"].get<uint64_t>()}] = row;
  }
  for (const uint64_t bytes : {uint64_t{256} << 10, uint64_t{1} << 20}) {
    const nlohmann::json& plain = by[{"plain", bytes}];
    const nlohmann::json& eight = by[{"qar8", bytes}];
    const nlohmann::json& four = by[{"qar4+ef", bytes}];
    ASSERT_FALSE(plain.is_null() || eight.is_null() || four.is_null()) << bytes;
    EXPECT_EQ(plain["wrong"].get<uint64_t>(), 0u) << plain;
    EXPECT_EQ(plain["bytes_inter_node"].get<uint64_t>(), 2 * bytes) << plain;
    const double inter = plain["bytes_inter_node"].get<double>();
    EXPECT_EQ(eight["plan"], "qar-hierarchical-allreduce") << eight;
    EXPECT_LE(eight["bytes_inter_node"].get<double>() / inter, 0.27) << eight;
    EXPECT_LE(four["bytes_inter_node"].get<double>() / inter, 0.14) << four;
    EXPECT_GT(eight["rel_l2_err"].get<double>(), 0.0) << eight;
    EXPECT_LT(eight["rel_l2_err"].get<double>(), 0.01) << eight;
    // One call at int4, unrotated under error feedback, through two quantized stages: about
    // 18% (measured); feedback carries it into the next step, which one call cannot show.
    EXPECT_GT(four["rel_l2_err"].get<double>(), eight["rel_l2_err"].get<double>()) << four;
    EXPECT_LT(four["rel_l2_err"].get<double>(), 0.25) << four;
  }
  for (const char* column : {"size", "count", "type", "allreduce", "algbw", "busbw"}) {
    EXPECT_NE(run.output.find(column), std::string::npos) << column;
  }
}

TEST(BenchCliTest, NcclBackendWithoutAGpuFailsWithAMessage) {
  const Command run = RunCommand(std::string(ZPP_BENCH_BINARY) + " --backend nccl -b 1M -e 1M");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.output.find("--backend nccl needs a"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find(" allgather "), std::string::npos) << "no figures without a GPU";
}

TEST(BenchCliTest, ProjectionIsLabelledAndFavoursZeroPlusPlusOnASlowNetwork) {
  const std::string calibration = testing::TempDir() + "zpp_calibration.json";
  {
    std::ofstream file(calibration);
    file << R"({"kernels": {"quantize_gbps": 500}})";
  }
  const Command run = RunCommand(std::string(ZPP_BENCH_BINARY) +
                                 " --project --nodes 48 --gpus-per-node 8 --inter-gbps 100"
                                 " --intra-gbps 2400 --step-model 7B --calibration " +
                                 calibration);
  std::remove(calibration.c_str());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("not a measurement"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("500/1000/1000 GB/s"), std::string::npos) << run.output;
  // "zero++  comm  codec  total  speed-upx  volume": faster than plain, 0.766 of the volume.
  const size_t row = run.output.find("\n            zero++ ");
  ASSERT_NE(row, std::string::npos) << run.output;
  double comm = 0, codec = 0, total = 0, speed_up = 0, volume = 0;
  ASSERT_EQ(std::sscanf(run.output.c_str() + row, " zero++ %lf %lf %lf %lfx %lf", &comm, &codec,
                        &total, &speed_up, &volume),
            5)
      << run.output;
  EXPECT_GT(speed_up, 2.0);
  EXPECT_NEAR(volume, 0.766, 0.001);
  EXPECT_NEAR(total, comm + codec, 0.11);
}

// The interposer's cost is measured through zpp's hooks on NCCL: the sim has neither.
TEST(BenchCliTest, PassThroughModeNeedsTheNcclBackend) {
  const Command run =
      RunCommand(std::string(ZPP_BENCH_BINARY) + " --modes plain,passthrough -b 1M -e 1M");
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("passthrough measures zpp's NCCL hooks: it needs --backend nccl"),
            std::string::npos)
      << run.output;
}

TEST(BenchCliTest, BadArgumentsFail) {
  for (const char* args : {"--modes qwz3", "-b 12Q", "--ops broadcast", "--racks 3"}) {
    const Command run = RunCommand(std::string(ZPP_BENCH_BINARY) + " " + args);
    EXPECT_NE(run.exit_code, 0) << args << run.output;
  }
}

}  // namespace
}  // namespace zpp::bench
