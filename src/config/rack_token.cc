#include "config/rack_token.h"

namespace zpp::config {
namespace {

bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

}  // namespace

std::string_view RackTokenProblem(std::string_view token) {
  if (token.empty()) return "is empty";
  if (token.size() > kMaxRackTokenLength) return "is longer than 64 characters";
  for (char c : token) {
    if (!IsTokenChar(c)) return "is not a token ([A-Za-z0-9._:-])";
  }
  return "";
}

bool IsValidRackToken(std::string_view token) { return RackTokenProblem(token).empty(); }

}  // namespace zpp::config
