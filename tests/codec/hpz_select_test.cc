// hpZ's choice of the partition a hit sends, on the CPU (codec/hpz_select.h): the first
// candidate whose fingerprint matches, its bytes copied; NaN bytes and a failure when none does;
// a choice sum that tells choices apart.
#include "codec/hpz_select.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "codec/element_io.h"

namespace zpp::codec {
namespace {

// Three kept fills, at positions 0, 1 and 2, each of whose partition bytes are its position + 1.
struct Fills {
  std::vector<uint64_t> fingerprints = {100, 200, 300};
  std::vector<std::vector<std::byte>> partitions;
  explicit Fills(size_t bytes) {
    for (int i = 0; i < 3; ++i) partitions.emplace_back(bytes, std::byte(i + 1));
  }
  // Candidates in the given order of positions.
  HpzCandidates Candidates(const std::vector<int>& order) const {
    HpzCandidates candidates;
    for (int position : order) {
      const uint32_t i = candidates.count++;
      candidates.position[i] = position;
      candidates.fingerprint[i] = &fingerprints[position];
      candidates.partition[i] = reinterpret_cast<const unsigned char*>(partitions[position].data());
    }
    return candidates;
  }
};

TEST(HpzSelectTest, SendsThePlannedPartitionWhenItMatches) {
  const Fills fills(40);
  std::vector<std::byte> send(40);
  uint32_t counters[2] = {0, 0};
  const uint64_t now = 200;
  ASSERT_EQ(SelectPartition(&now, fills.Candidates({1, 2, 0}), 5, send, counters), ncclSuccess);
  EXPECT_EQ(send, fills.partitions[1]);
  EXPECT_EQ(counters[kHpzFailuresCounter], 0u);
  EXPECT_EQ(counters[kHpzChoicesCounter], HpzChoiceTerm(5, 1));
}

TEST(HpzSelectTest, SendsAnotherMatchingPartitionWhenThePlannedOneDoesNot) {
  const Fills fills(40);
  std::vector<std::byte> send(40);
  uint32_t counters[2] = {0, 0};
  const uint64_t now = 100;  // the shard of position 0, where position 2 was planned
  ASSERT_EQ(SelectPartition(&now, fills.Candidates({2, 1, 0}), 5, send, counters), ncclSuccess);
  EXPECT_EQ(send, fills.partitions[0]);
  EXPECT_EQ(counters[kHpzFailuresCounter], 0u);
  EXPECT_EQ(counters[kHpzChoicesCounter], HpzChoiceTerm(5, 0));
  EXPECT_NE(HpzChoiceTerm(5, 0), HpzChoiceTerm(5, 2)) << "another choice, another sum";
}

TEST(HpzSelectTest, TheFirstOfTwoMatchesInTheHostsOrder) {
  Fills fills(40);
  fills.fingerprints[2] = 100;  // positions 0 and 2 hold equal shards
  std::vector<std::byte> send(40);
  uint32_t counters[2] = {0, 0};
  const uint64_t now = 100;
  ASSERT_EQ(SelectPartition(&now, fills.Candidates({1, 2, 0}), 5, send, counters), ncclSuccess);
  EXPECT_EQ(send, fills.partitions[2]);
}

TEST(HpzSelectTest, NoMatchSendsNaNAndCountsAFailure) {
  const Fills fills(40);
  std::vector<std::byte> send(40);
  uint32_t counters[2] = {0, 0};
  const uint64_t now = 400;  // changed since every fill
  ASSERT_EQ(SelectPartition(&now, fills.Candidates({1, 0, 2}), 5, send, counters), ncclSuccess);
  EXPECT_EQ(counters[kHpzFailuresCounter], 1u);
  EXPECT_EQ(counters[kHpzChoicesCounter], HpzChoiceTerm(5, -1));
  for (ncclDataType_t dtype : {ncclFloat32, ncclFloat16, ncclBfloat16}) {
    const size_t count = send.size() / NcclTypeBytes(dtype);
    std::vector<float> values(count);
    LoadElements(send.data(), dtype, 0, count, values.data());
    for (float value : values) EXPECT_TRUE(std::isnan(value)) << dtype;
  }
}

TEST(HpzSelectTest, RefusesMoreCandidatesThanTheKernelArgumentHolds) {
  const Fills fills(8);
  HpzCandidates candidates = fills.Candidates({0});
  candidates.count = kMaxHpzCandidates + 1;
  std::vector<std::byte> send(8);
  uint32_t counters[2] = {0, 0};
  const uint64_t now = 100;
  EXPECT_EQ(SelectPartition(&now, candidates, 0, send, counters), ncclInvalidArgument);
}

}  // namespace
}  // namespace zpp::codec
