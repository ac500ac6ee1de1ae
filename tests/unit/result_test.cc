#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "log/check.h"
#include "plugin/c_boundary.h"

namespace zpp {
namespace {

using ::testing::HasSubstr;

Result Inner() { return ncclSystemError; }
Result Middle() {
  ZPP_CHECK(Inner());
  return ncclSuccess;
}
Result Outer() {
  ZPP_CHECK(Middle());
  return ncclSuccess;
}
Result CheckArg(int value) {
  ZPP_CHECK_ARG(value >= 0, "value %d is negative", value);
  return ncclSuccess;
}

class ResultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::SetSinkForTesting([this](std::string_view line) { lines_.emplace_back(line); });
    log::Settings settings;
    settings.level = log::Level::kInfo;
    log::Configure(settings);
  }
  void TearDown() override {
    log::SetSinkForTesting(nullptr);
    log::Configure(log::Settings{});
  }
  std::vector<std::string> lines_;
};

TEST_F(ResultTest, CheckPropagatesAndLeavesTrail) {
  EXPECT_EQ(Outer(), ncclSystemError);
  ASSERT_EQ(lines_.size(), 2u);  // one per frame the failure passed through
  EXPECT_THAT(lines_[0], HasSubstr("result_test.cc"));
  EXPECT_THAT(lines_[0], HasSubstr("-> 2 (ncclSystemError)"));
  EXPECT_THAT(lines_[1], HasSubstr("-> 2 (ncclSystemError)"));
}

TEST_F(ResultTest, CheckArgWarnsOnce) {
  EXPECT_EQ(CheckArg(1), ncclSuccess);
  EXPECT_TRUE(lines_.empty());
  EXPECT_EQ(CheckArg(-3), ncclInvalidArgument);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_THAT(lines_[0], HasSubstr("ZPP WARN value -3 is negative"));
}

TEST_F(ResultTest, CatchAllMapsExceptionsToResults) {
  EXPECT_EQ(CatchAll("f", [] { return ncclInvalidUsage; }), ncclInvalidUsage);
  EXPECT_EQ(CatchAll("f", []() -> Result { throw std::bad_alloc(); }), ncclSystemError);
  EXPECT_EQ(CatchAll("f", []() -> Result { throw std::runtime_error("boom"); }), ncclInternalError);
  EXPECT_EQ(CatchAll("f", []() -> Result { throw 7; }), ncclInternalError);
  ASSERT_EQ(lines_.size(), 3u);
  EXPECT_THAT(lines_[1], HasSubstr("f: internal error: boom"));
}

TEST(ResultNameTest, NamesEveryCode) {
  EXPECT_STREQ(ResultName(ncclSuccess), "ncclSuccess");
  EXPECT_STREQ(ResultName(ncclInProgress), "ncclInProgress");
  EXPECT_STREQ(ResultName(static_cast<Result>(99)), "unknown ncclResult_t");
}

}  // namespace
}  // namespace zpp
