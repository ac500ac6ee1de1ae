// The one fixed-size record each rank contributes to the topology exchange: who its host is,
// which rack it believes it is in, which GPU it drives, and a summary of its local picture.
// Trivially copyable with no padding, so it goes over any byte all-gather as it is and every
// rank sees identical bytes (the grouping then gives every rank the same Topology).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "topology/host_identity.h"
#include "topology/local_picture.h"
#include "topology/rack_resolution.h"

namespace zpp::topology {

inline constexpr uint32_t kRankRecordMagic = 0x54505a5a;  // "ZZPT" in memory order
// Bumped whenever the layout or the meaning of a field changes: ranks of different zpp builds
// then fail to decode each other's records instead of misreading them.
inline constexpr uint32_t kRankRecordVersion = 2;

struct RankRecord {
  uint32_t magic;
  uint32_t version;
  uint64_t host_hash;           // HostIdentity::hash
  int64_t launcher_rank;        // the launcher's global rank (RANK); -1: not set
  int32_t local_device;         // CUDA ordinal; -1: none
  int32_t numa_node;            // NUMA node of the GPU; -1: unknown
  int32_t node_id_override;     // ZPP_NODE_ID; -1: not set
  int32_t local_size_override;  // ZPP_LOCAL_SIZE; 0: not set
  int32_t gpu_count;            // GPUs hwloc found on the host
  int32_t nic_count;            // NICs hwloc found on the host
  int32_t cores_near_gpu;       // cores local to the GPU
  uint32_t rack_source;         // RackSource
  char host_name[64];           // short host name, NUL-terminated; for messages only
  char rack[72];                // rack token, NUL-terminated; empty: none
  char gpu_bus_id[16];          // "0000:07:00.0"; empty: none
  char nearest_nic[32];         // "mlx5_0"; empty: none
};

static_assert(std::is_trivially_copyable_v<RankRecord>);
static_assert(std::is_standard_layout_v<RankRecord>);
// No padding: no uninitialized byte is ever sent, and equal records have equal bytes.
static_assert(std::has_unique_object_representations_v<RankRecord>);
static_assert(sizeof(RankRecord) == 240, "the wire size of the record changed: bump the version");

// What goes into a record besides the local picture. Strings longer than their field are cut
// (the host name also at its first dot).
struct RankRecordInputs {
  HostIdentity host;
  RackChoice rack;
  int local_device = -1;
  int node_id_override = -1;
  int local_size_override = 0;
  int64_t launcher_rank = -1;
};

// Zero-filled, then filled in; the picture may be empty (hwloc failed) and still gives a record.
RankRecord MakeRankRecord(const RankRecordInputs& inputs, const LocalPicture& picture);

// The NUL-terminated text of a char field (bounded: never reads past the field).
template <size_t N>
std::string_view FieldText(const char (&field)[N]) {
  size_t length = 0;
  while (length < N && field[length] != '\0') ++length;
  return std::string_view(field, length);
}

// Copies a received record and checks what can be checked without the others: the magic, the
// version, the char fields NUL-terminated. nullopt with `why` set when it is not a record of
// this zpp build. Rack tokens are checked by the grouping, which knows what to do about them.
std::optional<RankRecord> DecodeRankRecord(std::span<const std::byte> bytes, std::string* why);

}  // namespace zpp::topology
