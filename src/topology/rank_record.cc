#include "topology/rank_record.h"

#include <cstring>

#include "topology/str_cat.h"

namespace zpp::topology {
namespace {

template <size_t N>
void CopyField(std::string_view text, char (&field)[N]) {
  const size_t length = text.size() < N - 1 ? text.size() : N - 1;
  std::memcpy(field, text.data(), length);
  field[length] = '\0';
}

template <size_t N>
bool IsTerminated(const char (&field)[N]) {
  return std::memchr(field, '\0', N) != nullptr;
}

}  // namespace

RankRecord MakeRankRecord(const RankRecordInputs& inputs, const LocalPicture& picture) {
  RankRecord record;
  std::memset(&record, 0, sizeof(record));
  record.magic = kRankRecordMagic;
  record.version = kRankRecordVersion;
  record.host_hash = inputs.host.hash;
  record.local_device = inputs.local_device;
  record.node_id_override = inputs.node_id_override;
  record.local_size_override = inputs.local_size_override;
  record.launcher_rank = inputs.launcher_rank;
  record.rack_source = static_cast<uint32_t>(inputs.rack.source);
  const std::string_view host = inputs.host.name;
  CopyField(host.substr(0, host.find('.')), record.host_name);
  CopyField(inputs.rack.rack, record.rack);

  record.numa_node = -1;
  record.gpu_count = static_cast<int32_t>(picture.gpus.size());
  record.nic_count = static_cast<int32_t>(picture.nics.size());
  if (const GpuInfo* gpu = picture.SelectedGpu()) {
    record.numa_node = gpu->numa_node;
    record.cores_near_gpu = gpu->cores_near;
    CopyField(FormatPciAddress(gpu->pci), record.gpu_bus_id);
  }
  if (const NicInfo* nic = picture.NearestNic()) CopyField(nic->name, record.nearest_nic);
  return record;
}

std::optional<RankRecord> DecodeRankRecord(std::span<const std::byte> bytes, std::string* why) {
  if (bytes.size() != sizeof(RankRecord)) {
    *why = StrCat("is ", bytes.size(), " bytes, not ", sizeof(RankRecord));
    return std::nullopt;
  }
  RankRecord record;
  std::memcpy(&record, bytes.data(), sizeof(record));
  if (record.magic != kRankRecordMagic) {
    *why = "is not a zpp topology record (bad magic)";
    return std::nullopt;
  }
  if (record.version != kRankRecordVersion) {
    *why = StrCat("has version ", record.version, ", this zpp reads version ", kRankRecordVersion,
                  " (mixed zpp builds in one job?)");
    return std::nullopt;
  }
  if (!IsTerminated(record.host_name) || !IsTerminated(record.rack) ||
      !IsTerminated(record.gpu_bus_id) || !IsTerminated(record.nearest_nic)) {
    *why = "has a text field without its terminating NUL";
    return std::nullopt;
  }
  return record;
}

}  // namespace zpp::topology
