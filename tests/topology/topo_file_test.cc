#include "topology/topo_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "topology/str_cat.h"

namespace zpp::topology {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST(TopoFileTest, ReadsHostsAndRacksSkippingCommentsAndBlankLines) {
  const TopoFileParse parsed = ParseTopoFile(
      "# cluster A\n"
      "\n"
      "node01  rack-a\n"
      "node02\track-a   # trailing comment\n"
      "   node03.cluster.local rack-b\r\n"
      "node01 rack-a\n",  // repeated with the same rack: harmless
      "racks.txt");
  ASSERT_TRUE(parsed.file) << parsed.errors[0];
  EXPECT_TRUE(parsed.errors.empty());
  ASSERT_THAT(parsed.file->entries, SizeIs(3));
  EXPECT_EQ(parsed.file->entries[2].host, "node03.cluster.local");
  EXPECT_EQ(parsed.file->entries[2].rack, "rack-b");
  EXPECT_EQ(parsed.file->entries[2].line, 5);
}

TEST(TopoFileTest, FindsHostsByFullOrShortName) {
  const TopoFileParse parsed =
      ParseTopoFile("node01 r1\nnode02.cluster.local r2\nnode03.a r3\n", "f");
  ASSERT_TRUE(parsed.file);
  const TopoFile& file = *parsed.file;
  ASSERT_NE(file.Find("node01"), nullptr);
  EXPECT_EQ(file.Find("node01")->rack, "r1");
  EXPECT_EQ(file.Find("node01.cluster.local")->rack, "r1");  // short name of ours
  EXPECT_EQ(file.Find("node02")->rack, "r2");                // short name of the entry
  EXPECT_EQ(file.Find("node03.a")->rack, "r3");
  EXPECT_EQ(file.Find("node04"), nullptr);
  EXPECT_EQ(file.Find("node0"), nullptr);
}

// Every error names the file and the line, and any error rejects the whole file.
TEST(TopoFileTest, ReportsEachBadLineWithFileAndLineNumber) {
  const TopoFileParse parsed = ParseTopoFile(StrCat("node01 rack-a\n"
                                                    "node02\n"               // 2: one field
                                                    "node03 rack-b extra\n"  // 3: three fields
                                                    "node04 rack/7\n"        // 4: not a token
                                                    "node01 rack-c\n"        // 5: contradicts 1
                                                    "node05 ",
                                                    std::string(65, 'r'), "\n"),  // 6: too long
                                             "/etc/zpp/racks");
  EXPECT_FALSE(parsed.file);
  EXPECT_THAT(parsed.errors,
              ElementsAre("/etc/zpp/racks:2: expected 'hostname rack', found 1 field",
                          "/etc/zpp/racks:3: expected 'hostname rack', found 3 fields",
                          "/etc/zpp/racks:4: rack 'rack/7' is not a token ([A-Za-z0-9._:-])",
                          "/etc/zpp/racks:5: host 'node01' is in rack 'rack-c' here but in rack "
                          "'rack-a' on line 1",
                          HasSubstr("/etc/zpp/racks:6: rack 'rrrr")));
  EXPECT_THAT(parsed.errors[4], HasSubstr("is longer than 64 characters"));
}

TEST(TopoFileTest, GarbledBytesAreReportedPrintably) {
  // The start of an ELF binary: NULs and control bytes where host names should be.
  constexpr char kElfStart[] =
      "\x7f"
      "ELF\x02\x01\x01 \x00\x00\x00\x00 \x03\x00>\x00";
  const std::string garbled(kElfStart, sizeof(kElfStart) - 1);
  const TopoFileParse parsed = ParseTopoFile(garbled, "bin");
  EXPECT_FALSE(parsed.file);
  ASSERT_FALSE(parsed.errors.empty());
  EXPECT_THAT(parsed.errors[0], HasSubstr("bin:1: "));
  for (const std::string& error : parsed.errors) {
    for (char c : error) EXPECT_TRUE(c >= ' ' && c <= '~') << "unprintable byte in: " << error;
  }
}

TEST(TopoFileTest, AFileWithoutHostsIsAnError) {
  EXPECT_THAT(ParseTopoFile("", "empty").errors, ElementsAre("empty: lists no hosts"));
  EXPECT_THAT(ParseTopoFile("# nothing\n\n", "c").errors, ElementsAre("c: lists no hosts"));
}

class TopoFileOnDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/zpp_topo_file_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    for (const std::string& path : created_) std::remove(path.c_str());
    rmdir(dir_.c_str());
  }
  std::string Write(const std::string& name, const std::string& contents) {
    const std::string path = StrCat(dir_, "/", name);
    FILE* file = std::fopen(path.c_str(), "wb");
    std::fwrite(contents.data(), 1, contents.size(), file);
    std::fclose(file);
    created_.push_back(path);
    return path;
  }
  std::string dir_;
  std::vector<std::string> created_;
};

TEST_F(TopoFileOnDiskTest, LoadsAFile) {
  const TopoFileParse parsed = LoadTopoFile(Write("racks", "node01 r1\n"));
  ASSERT_TRUE(parsed.file);
  EXPECT_EQ(parsed.file->Find("node01")->rack, "r1");
}

TEST_F(TopoFileOnDiskTest, MissingFileIsOneErrorNamingIt) {
  const std::string path = dir_ + "/absent";
  const TopoFileParse parsed = LoadTopoFile(path);
  EXPECT_FALSE(parsed.file);
  EXPECT_THAT(parsed.errors, ElementsAre(path + ": cannot open (No such file or directory)"));
}

TEST_F(TopoFileOnDiskTest, DirectoryIsUnreadable) {
  const TopoFileParse parsed = LoadTopoFile(dir_);
  EXPECT_FALSE(parsed.file);
  ASSERT_THAT(parsed.errors, SizeIs(1));
  EXPECT_THAT(parsed.errors[0], HasSubstr(dir_ + ": cannot"));
}

// Runs everywhere, root included (CI runs as root): the open fails as it does for a user
// without read permission.
TEST_F(TopoFileOnDiskTest, OpenDeniedIsUnreadableEvenAsRoot) {
  const std::string path = Write("secret", "node01 r1\n");
  int opens = 0;
  const TopoFileParse parsed = LoadTopoFile(path, [&opens](const std::string&) -> FILE* {
    ++opens;
    errno = EACCES;
    return nullptr;
  });
  EXPECT_EQ(opens, 1);
  EXPECT_FALSE(parsed.file);
  EXPECT_THAT(parsed.errors, ElementsAre(path + ": cannot open (Permission denied)"));
}

// The same through the file system, where the user is not root.
TEST_F(TopoFileOnDiskTest, FileWithoutReadPermissionIsUnreadable) {
  if (geteuid() == 0)
    GTEST_SKIP() << "root reads any file (OpenDeniedIsUnreadableEvenAsRoot "
                    "covers the case there)";
  const std::string path = Write("secret", "node01 r1\n");
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  const TopoFileParse parsed = LoadTopoFile(path);
  EXPECT_FALSE(parsed.file);
  EXPECT_THAT(parsed.errors, ElementsAre(path + ": cannot open (Permission denied)"));
}

}  // namespace
}  // namespace zpp::topology
