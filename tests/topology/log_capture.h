// Captures zpp's log lines at INFO (all subsystems) for the life of the object.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "log/log.h"
#include "topology/str_cat.h"

namespace zpp::topology::test_support {

class LogCapture {
 public:
  LogCapture() {
    log::Settings settings;
    settings.level = log::Level::kInfo;
    settings.subsys_mask = log::kAll;
    log::Configure(settings);
    log::SetSinkForTesting([this](std::string_view line) { lines_.emplace_back(line); });
  }
  ~LogCapture() {
    log::SetSinkForTesting(nullptr);
    log::Configure(log::Settings{});
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  const std::vector<std::string>& lines() const { return lines_; }

  // The lines at one level ("WARN" or "INFO"), as NCCL's format writes it: "ZPP WARN ...".
  std::vector<std::string> At(std::string_view level) const {
    std::vector<std::string> out;
    const std::string tag = StrCat("ZPP ", level, " ");
    for (const std::string& line : lines_) {
      if (line.find(tag) != std::string::npos) out.push_back(line);
    }
    return out;
  }

  // All lines in one string, for failure messages.
  std::string All() const {
    std::string out;
    for (const std::string& line : lines_) out += line;
    return out;
  }

 private:
  std::vector<std::string> lines_;
};

}  // namespace zpp::topology::test_support
