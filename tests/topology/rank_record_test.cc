#include "topology/rank_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <span>

namespace zpp::topology {
namespace {

using ::testing::HasSubstr;

RankRecordInputs Inputs() {
  RankRecordInputs inputs;
  inputs.host.name = "gpu-node-17.cluster.example.org";
  inputs.host.hash = 0x1234567890abcdefull;
  inputs.rack = {"rack-3", RackSource::kTopoFile};
  inputs.local_device = 5;
  inputs.node_id_override = 7;
  inputs.local_size_override = 8;
  inputs.launcher_rank = 12;
  return inputs;
}

LocalPicture PictureWithGpu() {
  LocalPicture picture;
  NicInfo nic;
  nic.pci = {0, 0x14, 0, 0};
  nic.name = "mlx5_0";
  picture.nics = {nic};
  GpuInfo gpu;
  gpu.pci = {0, 0x12, 0, 0};
  gpu.numa_node = 1;
  gpu.cores_near = 24;
  gpu.nearest_nics = {0};
  picture.gpus = {GpuInfo{}, gpu};
  picture.selected_gpu = 1;
  return picture;
}

std::span<const std::byte> Bytes(const RankRecord& record) {
  return std::as_bytes(std::span(&record, 1));
}

TEST(RankRecordTest, CarriesIdentityRackDeviceAndSummary) {
  const RankRecord record = MakeRankRecord(Inputs(), PictureWithGpu());
  EXPECT_EQ(record.magic, kRankRecordMagic);
  EXPECT_EQ(record.version, kRankRecordVersion);
  EXPECT_EQ(record.host_hash, 0x1234567890abcdefull);
  EXPECT_EQ(FieldText(record.host_name), "gpu-node-17");  // the short name
  EXPECT_EQ(FieldText(record.rack), "rack-3");
  EXPECT_EQ(static_cast<RackSource>(record.rack_source), RackSource::kTopoFile);
  EXPECT_EQ(record.local_device, 5);
  EXPECT_EQ(record.node_id_override, 7);
  EXPECT_EQ(record.launcher_rank, 12);
  EXPECT_EQ(record.local_size_override, 8);
  EXPECT_EQ(record.gpu_count, 2);
  EXPECT_EQ(record.nic_count, 1);
  EXPECT_EQ(record.numa_node, 1);
  EXPECT_EQ(record.cores_near_gpu, 24);
  EXPECT_EQ(FieldText(record.gpu_bus_id), "0000:12:00.0");
  EXPECT_EQ(FieldText(record.nearest_nic), "mlx5_0");
}

TEST(RankRecordTest, EmptyPictureStillGivesARecord) {
  const RankRecord record = MakeRankRecord(Inputs(), LocalPicture{});
  EXPECT_EQ(record.numa_node, -1);
  EXPECT_EQ(record.gpu_count, 0);
  EXPECT_EQ(FieldText(record.gpu_bus_id), "");
  EXPECT_EQ(FieldText(record.nearest_nic), "");
}

TEST(RankRecordTest, LongStringsAreCutToTheirFields) {
  RankRecordInputs inputs = Inputs();
  inputs.host.name = std::string(100, 'h');
  inputs.rack.rack = std::string(64, 'r');  // the longest valid token fits whole
  const RankRecord record = MakeRankRecord(inputs, LocalPicture{});
  EXPECT_EQ(FieldText(record.host_name), std::string(63, 'h'));
  EXPECT_EQ(FieldText(record.rack), std::string(64, 'r'));
}

TEST(RankRecordTest, RecordsOfEqualInputsHaveEqualBytes) {
  const RankRecord a = MakeRankRecord(Inputs(), PictureWithGpu());
  const RankRecord b = MakeRankRecord(Inputs(), PictureWithGpu());
  EXPECT_EQ(std::memcmp(&a, &b, sizeof(RankRecord)), 0);
}

TEST(RankRecordTest, DecodesWhatItEncodes) {
  const RankRecord record = MakeRankRecord(Inputs(), PictureWithGpu());
  std::string why;
  const std::optional<RankRecord> decoded = DecodeRankRecord(Bytes(record), &why);
  ASSERT_TRUE(decoded) << why;
  EXPECT_EQ(std::memcmp(&*decoded, &record, sizeof(RankRecord)), 0);
}

TEST(RankRecordTest, RejectsBytesThatAreNotARecordOfThisBuild) {
  const RankRecord good = MakeRankRecord(Inputs(), LocalPicture{});
  std::string why;

  EXPECT_FALSE(DecodeRankRecord(Bytes(good).first(100), &why));
  EXPECT_THAT(why, HasSubstr("is 100 bytes, not 240"));

  RankRecord bad = good;
  bad.magic = 0;
  EXPECT_FALSE(DecodeRankRecord(Bytes(bad), &why));
  EXPECT_THAT(why, HasSubstr("bad magic"));

  bad = good;
  bad.version = kRankRecordVersion + 1;
  EXPECT_FALSE(DecodeRankRecord(Bytes(bad), &why));
  EXPECT_THAT(why, HasSubstr("mixed zpp builds"));

  bad = good;
  std::memset(bad.rack, 'x', sizeof(bad.rack));  // no terminating NUL
  EXPECT_FALSE(DecodeRankRecord(Bytes(bad), &why));
  EXPECT_THAT(why, HasSubstr("without its terminating NUL"));
}

}  // namespace
}  // namespace zpp::topology
