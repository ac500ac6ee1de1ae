// What a rank of a multi-process test writes for the test process to compare: one record per
// collective (the plan, the failures, the bytes this rank sent per link class, the output).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "zpp/zpp.h"

namespace zpp::test {

struct RankRecord {
  uint32_t case_index = 0;
  int32_t plan_kind = 0;
  int32_t plan_reason = 0;
  int32_t failures = 0;
  std::array<uint64_t, zppNumLinks> sent{};
  std::vector<uint8_t> output;
};

// `<dir>/<scenario>.rank<r>` : the file rank r writes.
std::string RecordPath(const std::string& dir, const std::string& scenario, int rank);
bool WriteRecords(const std::string& path, const std::vector<RankRecord>& records);
bool ReadRecords(const std::string& path, std::vector<RankRecord>* records);

}  // namespace zpp::test
