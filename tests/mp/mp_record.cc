#include "mp_record.h"

#include <cstdio>
#include <memory>

namespace zpp::test {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

struct Header {
  uint32_t case_index;
  int32_t plan_kind;
  int32_t plan_reason;
  int32_t failures;
  uint64_t sent[zppNumLinks];
  uint64_t output_bytes;
};

}  // namespace

std::string RecordPath(const std::string& dir, const std::string& scenario, int rank) {
  return dir + "/" + scenario + ".rank" + std::to_string(rank);
}

bool WriteRecords(const std::string& path, const std::vector<RankRecord>& records) {
  const std::string partial = path + ".partial";  // renamed when complete: no torn reads
  {
    File file(std::fopen(partial.c_str(), "wb"));
    if (!file) return false;
    for (const RankRecord& record : records) {
      Header header{record.case_index,   record.plan_kind, record.plan_reason, record.failures, {},
                    record.output.size()};
      for (int link = 0; link < zppNumLinks; ++link) header.sent[link] = record.sent[link];
      if (std::fwrite(&header, sizeof(header), 1, file.get()) != 1) return false;
      if (!record.output.empty() &&
          std::fwrite(record.output.data(), record.output.size(), 1, file.get()) != 1) {
        return false;
      }
    }
    if (std::fflush(file.get()) != 0) return false;
  }
  return std::rename(partial.c_str(), path.c_str()) == 0;
}

bool ReadRecords(const std::string& path, std::vector<RankRecord>* records) {
  File file(std::fopen(path.c_str(), "rb"));
  if (!file) return false;
  records->clear();
  Header header{};
  while (std::fread(&header, sizeof(header), 1, file.get()) == 1) {
    RankRecord record;
    record.case_index = header.case_index;
    record.plan_kind = header.plan_kind;
    record.plan_reason = header.plan_reason;
    record.failures = header.failures;
    for (int link = 0; link < zppNumLinks; ++link) record.sent[link] = header.sent[link];
    record.output.resize(header.output_bytes);
    if (header.output_bytes > 0 &&
        std::fread(record.output.data(), header.output_bytes, 1, file.get()) != 1) {
      return false;
    }
    records->push_back(std::move(record));
  }
  return std::feof(file.get()) != 0;
}

}  // namespace zpp::test
