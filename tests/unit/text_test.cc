#include "common/text.h"

#include <gtest/gtest.h>

namespace zpp::text {
namespace {

TEST(TextTest, TrimStripsBlanksOnly) {
  EXPECT_EQ(Trim(" \t a b \r\n"), "a b");
  EXPECT_EQ(Trim("   "), "");
  EXPECT_EQ(Trim(""), "");
}

TEST(TextTest, SplitKeepsEmptyPieces) {
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string_view>{"a", "", "b"}));
  EXPECT_EQ(Split("", ','), (std::vector<std::string_view>{""}));
  EXPECT_EQ(Split("a,", ','), (std::vector<std::string_view>{"a", ""}));
}

TEST(TextTest, EqualsIgnoreCase) {
  EXPECT_TRUE(EqualsIgnoreCase("Warn", "WARN"));
  EXPECT_FALSE(EqualsIgnoreCase("WARN", "WARNING"));
}

}  // namespace
}  // namespace zpp::text
