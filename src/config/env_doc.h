// docs/configuration.md's table of environment variables, generated from the declarations.
#pragma once

#include <string>

namespace zpp::config {

// A Markdown table: variable, type, default, allowed values, meaning. One line per variable.
std::string EnvMarkdownTable();

}  // namespace zpp::config
