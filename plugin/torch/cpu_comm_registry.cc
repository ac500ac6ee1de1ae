#include "plugin/torch/cpu_comm_registry.h"

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "plugin/stats_file.h"
#include "plugin/stats_table.h"

namespace zpp::cpu {
namespace {

struct Entry {
  const CpuComm* key = nullptr;
  std::weak_ptr<CpuComm> comm;
  plugin::CommStatsRow row;
};

struct Registry {
  std::mutex mutex;
  std::vector<Entry> entries;
};

// Never destroyed: the report at exit reads it after other statics may be gone.
Registry& TheRegistry() {
  static auto* registry = new Registry();
  return *registry;
}

std::string StateOf(const CpuComm& comm) {
  if (!comm.config_difference().empty()) return "plain: " + comm.config_difference();
  return "zpp";
}

struct ExitReport {
  ~ExitReport() {
    const Config& config = GetConfig();
    if (config.stats == 0 && config.stats_dir.empty()) return;
    const std::vector<plugin::CommStatsRow> rows = CpuCommRows();
    if (rows.empty()) return;
    if (!config.stats_dir.empty()) plugin::WriteStatsFile(rows, "cpu", config.stats_dir);
    if (config.stats == 0) return;
    const std::string table = plugin::FormatStatsTable(rows);
    std::fputs(table.c_str(), stderr);
  }
};
ExitReport exit_report;

}  // namespace

void RegisterForStatsTable(const std::shared_ptr<CpuComm>& comm) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  Entry entry;
  entry.key = comm.get();
  entry.comm = comm;
  entry.row.id = registry.entries.size();
  entry.row.rank = comm->rank();
  entry.row.nranks = comm->size();
  entry.row.zpp_state = StateOf(*comm);
  registry.entries.push_back(std::move(entry));
}

std::vector<plugin::CommStatsRow> CpuCommRows() {
  Registry& registry = TheRegistry();
  std::vector<plugin::CommStatsRow> rows;
  std::lock_guard<std::mutex> lock(registry.mutex);
  for (Entry& entry : registry.entries) {
    if (const std::shared_ptr<CpuComm> comm = entry.comm.lock()) comm->Snapshot(&entry.row.stats);
    rows.push_back(entry.row);
  }
  return rows;
}

void KeepStatsOf(const CpuComm& comm) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  for (Entry& entry : registry.entries) {
    if (entry.key == &comm) comm.Snapshot(&entry.row.stats);
  }
}

}  // namespace zpp::cpu
