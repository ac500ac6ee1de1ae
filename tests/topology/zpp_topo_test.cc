// The built zpp-topo binary: it prints this machine, and the grouping of a simulated cluster as
// a table and as JSON that parses to the documented shape.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/common/run_command.h"
#include "topology/str_cat.h"

namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
using zpp::topology::StrCat;

// A clean environment: no rack variables of the machine running the tests leak in.
zpp::test::CommandRun RunZppTopo(const std::string& args) {
  return zpp::test::RunCommand(StrCat("env -i ZPP_DEBUG=WARN ", ZPP_TOPO_BINARY, " ", args));
}

std::string Fixture(const std::string& name) { return StrCat(ZPP_TOPOLOGY_FIXTURES, "/", name); }

TEST(ZppTopoTest, PrintsThisMachine) {
  const zpp::test::CommandRun run = RunZppTopo("");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("zpp-topo: this machine (host "));
  EXPECT_THAT(run.output, HasSubstr("NUMA nodes"));
  EXPECT_THAT(run.output, HasSubstr("GPUs:"));
  EXPECT_THAT(run.output, HasSubstr("NICs:"));
  EXPECT_THAT(run.output, HasSubstr("rack none: the job is one rack (source none)"));
  EXPECT_THAT(run.output, ::testing::Not(HasSubstr("WARN")));
}

TEST(ZppTopoTest, SixteenRanksOfFourInTwoRacksAsJson) {
  const zpp::test::CommandRun run = RunZppTopo("--ranks 16 --local-size 4 --racks 2 --json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const json doc = json::parse(run.output);
  ASSERT_TRUE(doc.contains("nodes"));
  ASSERT_TRUE(doc.contains("racks"));
  ASSERT_EQ(doc["nodes"].size(), 4u);
  ASSERT_EQ(doc["racks"].size(), 2u);
  for (int n = 0; n < 4; ++n) {
    const json& node = doc["nodes"][static_cast<size_t>(n)];
    EXPECT_EQ(node["node"], n);
    EXPECT_EQ(node["rack"], n / 2);
    EXPECT_EQ(node["ranks"], json::array({4 * n, 4 * n + 1, 4 * n + 2, 4 * n + 3}));
  }
  EXPECT_EQ(doc["racks"][0]["nodes"], json::array({0, 1}));
  EXPECT_EQ(doc["racks"][1]["nodes"], json::array({2, 3}));
  EXPECT_EQ(doc["hierarchical"]["allowed"], true);
  EXPECT_EQ(doc["hierarchical"]["rack_level"], true);
}

TEST(ZppTopoTest, SimulatedClusterAsTable) {
  const zpp::test::CommandRun run = RunZppTopo("--ranks 16 --local-size 4 --racks 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("16 ranks on 4 nodes (4 per node) in 2 racks"));
  EXPECT_THAT(run.output, ::testing::ContainsRegex("3 +sim-node3 +rack1 +12-15 +4"));
}

TEST(ZppTopoTest, UnevenSimulatedClusterReportsWhyHierarchyIsOff) {
  const zpp::test::CommandRun run = RunZppTopo("--ranks 7 --local-size 4 --json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const json doc = json::parse(run.output);
  EXPECT_EQ(doc["nodes"].size(), 2u);
  EXPECT_EQ(doc["hierarchical"]["allowed"], false);
  EXPECT_EQ(doc["hierarchical"]["verdict"], "uneven-nodes");
  EXPECT_EQ(doc["uniform"]["ranks_per_node"], false);
}

TEST(ZppTopoTest, MachineFromXmlAsJson) {
  const zpp::test::CommandRun run = RunZppTopo(
      StrCat("--xml ", Fixture("two_socket_8gpu_4nic.xml"), " --gpu 0000:93:00.0 --json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const json doc = json::parse(run.output);
  const json& machine = doc["machine"];
  EXPECT_EQ(machine["host"], "fixture-2s8g");
  EXPECT_EQ(machine["gpus"].size(), 8u);
  EXPECT_EQ(machine["nics"].size(), 4u);
  EXPECT_EQ(machine["selected_gpu"], 5);
  EXPECT_EQ(machine["gpus"][5]["nearest_nics"], json::array({2}));
  EXPECT_EQ(machine["gpus"][5]["nic_path"], "pcie-switch");
  EXPECT_EQ(doc["nodes"].size(), 1u);
  EXPECT_EQ(doc["racks"].size(), 1u);
}

TEST(ZppTopoTest, RackFromTheEnvironmentShows) {
  const zpp::test::CommandRun run = RunZppTopo("--json");  // env -i: no rack
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(json::parse(run.output)["machine"]["rack_source"], "none");
  const zpp::test::CommandRun with_rack =
      zpp::test::RunCommand(StrCat("env -i ZPP_RACK_ID=rack-9 ", ZPP_TOPO_BINARY, " --json"));
  ASSERT_EQ(with_rack.exit_code, 0) << with_rack.output;
  const json doc = json::parse(with_rack.output);
  EXPECT_EQ(doc["machine"]["rack"], "rack-9");
  EXPECT_EQ(doc["machine"]["rack_source"], "ZPP_RACK_ID");
  EXPECT_EQ(doc["racks"][0]["name"], "rack-9");
}

TEST(ZppTopoTest, ImpossibleShapesAndBadArgumentsFail) {
  const zpp::test::CommandRun too_many_racks = RunZppTopo("--ranks 8 --local-size 4 --racks 3");
  EXPECT_EQ(too_many_racks.exit_code, 2);
  EXPECT_THAT(too_many_racks.output, HasSubstr("3 racks need at least as many hosts"));

  EXPECT_NE(RunZppTopo("--local-size 4").exit_code, 0);  // needs --ranks
  EXPECT_NE(RunZppTopo("--ranks 0").exit_code, 0);
  EXPECT_NE(RunZppTopo("--xml /nonexistent.xml").exit_code, 0);
  const zpp::test::CommandRun bad_gpu = RunZppTopo("--gpu 12345");
  EXPECT_EQ(bad_gpu.exit_code, 2);
  EXPECT_THAT(bad_gpu.output, HasSubstr("not a PCI address"));
}

}  // namespace
