// The rack sources in order (first found wins) and the WARN/INFO line and fallback of each bad
// input. Environment values come through an injected lookup, never the process environment.
#include "topology/rack_resolution.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include "log_capture.h"
#include "topology/str_cat.h"

namespace zpp::topology {
namespace {

using test_support::LogCapture;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

config::EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

class RackResolutionTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& path : files_) std::remove(path.c_str());
  }
  std::string WriteFile(const std::string& contents) {
    char path[] = "/tmp/zpp_racks_XXXXXX";
    const int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
    close(fd);
    files_.emplace_back(path);
    return path;
  }
  std::vector<std::string> files_;
  LogCapture log_;
};

TEST_F(RackResolutionTest, RackIdFromTheEnvironmentWinsOverFileAndSlurm) {
  Config config;
  config.rack_id = "rack-env";
  config.topo_file = WriteFile("node01 rack-file\n");
  const RackChoice choice =
      ResolveRack(config, Env({{"SLURM_TOPOLOGY_ADDR", "s0.s1.node01"}}), "node01");
  EXPECT_EQ(choice.rack, "rack-env");
  EXPECT_EQ(choice.source, RackSource::kEnv);
  EXPECT_THAT(log_.At("WARN"), IsEmpty());
}

TEST_F(RackResolutionTest, FileWinsOverSlurm) {
  Config config;
  config.topo_file = WriteFile("# racks\nnode01 rack-file\n");
  const RackChoice choice =
      ResolveRack(config, Env({{"SLURM_TOPOLOGY_ADDR", "s0.s1.node01"}}), "node01.cluster");
  EXPECT_EQ(choice.rack, "rack-file");
  EXPECT_EQ(choice.source, RackSource::kTopoFile);
  EXPECT_THAT(log_.All(), HasSubstr(StrCat("rack 'rack-file' for host 'node01.cluster' from "
                                           "ZPP_TOPO_FILE ",
                                           config.topo_file, ":2")));
}

TEST_F(RackResolutionTest, SlurmWhenNothingElse) {
  const RackChoice choice =
      ResolveRack(Config{},
                  Env({{"SLURM_TOPOLOGY_ADDR", "core.leaf3.node01"},
                       {"SLURM_TOPOLOGY_ADDR_PATTERN", "switch.switch.node"}}),
                  "node01");
  EXPECT_EQ(choice.rack, "leaf3");
  EXPECT_EQ(choice.source, RackSource::kSlurm);
}

TEST_F(RackResolutionTest, NoSourceIsOneRackWithAnInfoLine) {
  const RackChoice choice = ResolveRack(Config{}, Env({}), "node01");
  EXPECT_EQ(choice.rack, "");
  EXPECT_EQ(choice.source, RackSource::kNone);
  EXPECT_THAT(log_.At("WARN"), IsEmpty());
  ASSERT_EQ(log_.At("INFO").size(), 1u);
  EXPECT_THAT(log_.At("INFO")[0], HasSubstr("no rack id"));
  EXPECT_THAT(log_.At("INFO")[0], HasSubstr("one rack"));
}

TEST_F(RackResolutionTest, MissingFileWarnsAndFallsBackToOneRackWithoutAskingSlurm) {
  Config config;
  config.topo_file = "/nonexistent/zpp/racks.txt";
  const RackChoice choice =
      ResolveRack(config, Env({{"SLURM_TOPOLOGY_ADDR", "s0.s1.node01"}}), "node01");
  EXPECT_EQ(choice.rack, "");
  EXPECT_EQ(choice.source, RackSource::kNone);
  EXPECT_THAT(log_.At("WARN"),
              ElementsAre(HasSubstr("ZPP_TOPO_FILE /nonexistent/zpp/racks.txt: cannot open (No "
                                    "such file or directory)"),
                          HasSubstr("ZPP_TOPO_FILE /nonexistent/zpp/racks.txt is unusable; zpp "
                                    "treats the job as one rack")));
}

TEST_F(RackResolutionTest, UnreadableFileWarnsAndFallsBackToOneRack) {
  Config config;
  config.topo_file = "/tmp";  // a directory opens, and then cannot be read
  const RackChoice choice = ResolveRack(config, Env({}), "node01");
  EXPECT_EQ(choice.source, RackSource::kNone);
  EXPECT_THAT(log_.At("WARN"), ElementsAre(HasSubstr("ZPP_TOPO_FILE /tmp: cannot"),
                                           HasSubstr("is unusable; zpp treats the job as one")));
}

TEST_F(RackResolutionTest, GarbledFileWarnsWithLineNumbersAndFallsBackToOneRack) {
  Config config;
  config.topo_file = WriteFile("node01 rack-a\nnode02 rack b\nnode03 r@ck\n");
  const RackChoice choice = ResolveRack(config, Env({}), "node01");
  EXPECT_EQ(choice.rack, "");  // node01's own line is fine, but the file is not trusted
  EXPECT_EQ(choice.source, RackSource::kNone);
  const std::string& path = config.topo_file;
  EXPECT_THAT(log_.At("WARN"),
              ElementsAre(HasSubstr(path + ":2: expected 'hostname rack', found 3 fields"),
                          HasSubstr(path + ":3: rack 'r@ck' is not a token"),
                          HasSubstr(path + " is unusable; zpp treats the job as one rack")));
}

TEST_F(RackResolutionTest, ManyBadLinesAreSummarized) {
  std::string contents;
  for (int i = 0; i < 20; ++i) contents += "bad\n";
  Config config;
  config.topo_file = WriteFile(contents);
  ResolveRack(config, Env({}), "node01");
  const std::vector<std::string> warnings = log_.At("WARN");
  ASSERT_EQ(warnings.size(), 7u) << log_.All();  // 5 lines, "15 more", "unusable"
  EXPECT_THAT(warnings[5], HasSubstr(": 15 more errors"));
}

TEST_F(RackResolutionTest, HostMissingFromFileWarnsAndFallsBackToOneRack) {
  Config config;
  config.topo_file = WriteFile("node01 rack-a\n");
  const RackChoice choice = ResolveRack(config, Env({}), "node99");
  EXPECT_EQ(choice.source, RackSource::kNone);
  EXPECT_THAT(log_.At("WARN"), ElementsAre(HasSubstr("does not list host 'node99'; zpp treats "
                                                     "the job as one rack")));
}

TEST_F(RackResolutionTest, MalformedSlurmAddressWarnsAndFallsBackToOneRack) {
  const RackChoice choice =
      ResolveRack(Config{}, Env({{"SLURM_TOPOLOGY_ADDR", "s0.s#1.node01"}}), "node01");
  EXPECT_EQ(choice.source, RackSource::kNone);
  EXPECT_THAT(log_.At("WARN"),
              ElementsAre(HasSubstr("SLURM_TOPOLOGY_ADDR=\"s0.s#1.node01\" names switch 's#1', "
                                    "which is not a token ([A-Za-z0-9._:-]); zpp treats the job "
                                    "as one rack")));
}

TEST_F(RackResolutionTest, FlatSlurmTopologyIsOneRackWithAnInfoLine) {
  const RackChoice choice =
      ResolveRack(Config{}, Env({{"SLURM_TOPOLOGY_ADDR", "node01"}}), "node01");
  EXPECT_EQ(choice.source, RackSource::kNone);
  EXPECT_THAT(log_.At("WARN"), IsEmpty());
  EXPECT_THAT(log_.All(), HasSubstr("has no switch above the node; one rack"));
}

TEST_F(RackResolutionTest, RackIdThatIsNotATokenIsNotUsed) {
  // The config parser normally empties a bad ZPP_RACK_ID; a Config made otherwise is checked too.
  Config config;
  config.rack_id = "rack 7";
  const RackChoice choice = ResolveRack(config, Env({}), "node01");
  EXPECT_EQ(choice.source, RackSource::kNone);
}

}  // namespace
}  // namespace zpp::topology
