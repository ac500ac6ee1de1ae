// The table of environment variables in docs/configuration.md is the one generated from the
// declarations (`make readme-env` regenerates it).
#include "config/env_doc.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace zpp::config {
namespace {

constexpr char kBegin[] = "<!-- env-table:begin (make readme-env) -->\n";
constexpr char kEnd[] = "<!-- env-table:end -->";

TEST(EnvDocTest, ConfigurationDocTableMatchesDeclarations) {
  std::ifstream in(std::string(ZPP_SOURCE_DIR) + "/docs/configuration.md");
  ASSERT_TRUE(in) << "docs/configuration.md not found";
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string doc = buffer.str();
  const size_t begin = doc.find(kBegin);
  const size_t end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << "docs/configuration.md lacks the marker " << kBegin;
  ASSERT_NE(end, std::string::npos) << "docs/configuration.md lacks the marker " << kEnd;
  const std::string table =
      doc.substr(begin + sizeof(kBegin) - 1, end - begin - sizeof(kBegin) + 1);
  EXPECT_EQ(table, EnvMarkdownTable()) << "run `make readme-env` to regenerate the table";
}

TEST(EnvDocTest, TableHasOneRowPerVariable) {
  const std::string table = EnvMarkdownTable();
  size_t rows = 0;
  for (size_t pos = table.find("| `ZPP_"); pos != std::string::npos;
       pos = table.find("| `ZPP_", pos + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 34u);
}

}  // namespace
}  // namespace zpp::config
