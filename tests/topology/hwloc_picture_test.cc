// The hwloc side: the hand-written XML fixtures give the GPU-NIC-NUMA affinities their README
// documents, this machine (no GPU in CI) loads and says so, and bad XML fails cleanly.
#include "topology/hwloc_picture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "log_capture.h"
#include "topology/str_cat.h"

namespace zpp::topology {
namespace {

using test_support::LogCapture;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Fixture(const std::string& name) { return StrCat(ZPP_TOPOLOGY_FIXTURES, "/", name); }

LocalPicture Load(const std::string& fixture, std::optional<std::string> gpu = std::nullopt) {
  PictureRequest request;
  request.xml_path = Fixture(fixture);
  if (gpu) request.gpu = ParsePciAddress(*gpu);
  LocalPicture picture;
  EXPECT_EQ(LoadLocalPicture(request, &picture), ncclSuccess);
  return picture;
}

const GpuInfo& GpuAt(const LocalPicture& picture, const std::string& address) {
  for (const GpuInfo& gpu : picture.gpus) {
    if (FormatPciAddress(gpu.pci) == address) return gpu;
  }
  ADD_FAILURE() << "no GPU at " << address;
  static const GpuInfo none;
  return none;
}

std::vector<std::string> NearestNicNames(const LocalPicture& picture, const GpuInfo& gpu) {
  std::vector<std::string> names;
  for (int n : gpu.nearest_nics) names.push_back(picture.nics[static_cast<size_t>(n)].name);
  return names;
}

TEST(HwlocPictureTest, TwoSocketNodeHasEightGpusFourNicsTwoNumaNodes) {
  const LocalPicture picture = Load("two_socket_8gpu_4nic.xml");
  EXPECT_EQ(picture.host_name, "fixture-2s8g");
  EXPECT_EQ(picture.packages, 2);
  EXPECT_EQ(picture.numa_nodes, 2);
  EXPECT_EQ(picture.cores, 16);
  EXPECT_EQ(picture.pus, 16);
  EXPECT_EQ(picture.gpus.size(), 8u);  // the BMC's VGA is not one of them
  ASSERT_EQ(picture.nics.size(), 4u);
  for (size_t n = 0; n < 4; ++n) {
    EXPECT_EQ(picture.nics[n].name, StrCat("mlx5_", n));
    EXPECT_EQ(picture.nics[n].os_devices, StrCat("ib", n, ",mlx5_", n));
    EXPECT_EQ(picture.nics[n].numa_node, n < 2 ? 0 : 1);
  }
}

TEST(HwlocPictureTest, TwoSocketNodeGpusUseTheNicOnTheirPcieSwitch) {
  const LocalPicture picture = Load("two_socket_8gpu_4nic.xml");
  // GPU bus -> (NIC, NUMA node, CPUs), from the fixture's README.
  const struct {
    const char* gpu;
    const char* nic;
    int numa;
    const char* cpus;
  } expected[] = {
      {"0000:12:00.0", "mlx5_0", 0, "0-7"},  {"0000:13:00.0", "mlx5_0", 0, "0-7"},
      {"0000:22:00.0", "mlx5_1", 0, "0-7"},  {"0000:23:00.0", "mlx5_1", 0, "0-7"},
      {"0000:92:00.0", "mlx5_2", 1, "8-15"}, {"0000:93:00.0", "mlx5_2", 1, "8-15"},
      {"0000:a2:00.0", "mlx5_3", 1, "8-15"}, {"0000:a3:00.0", "mlx5_3", 1, "8-15"},
  };
  for (const auto& e : expected) {
    SCOPED_TRACE(e.gpu);
    const GpuInfo& gpu = GpuAt(picture, e.gpu);
    EXPECT_EQ(gpu.vendor_id, 0x10de);
    EXPECT_EQ(gpu.numa_node, e.numa);
    EXPECT_EQ(gpu.numa_nodes, std::to_string(e.numa));
    EXPECT_EQ(gpu.cpus, e.cpus);
    EXPECT_EQ(gpu.cores_near, 8);
    EXPECT_THAT(NearestNicNames(picture, gpu), ElementsAre(e.nic));
    EXPECT_EQ(gpu.nic_path, NicPath::kPcieSwitch);
  }
}

TEST(HwlocPictureTest, SelectingAGpuByBusIdGivesItsNearestNic) {
  const LocalPicture picture = Load("two_socket_8gpu_4nic.xml", "0000:A2:00.0");
  const GpuInfo* gpu = picture.SelectedGpu();
  ASSERT_NE(gpu, nullptr) << picture.gpu_note;
  EXPECT_EQ(FormatPciAddress(gpu->pci), "0000:a2:00.0");
  ASSERT_NE(picture.NearestNic(), nullptr);
  EXPECT_EQ(picture.NearestNic()->name, "mlx5_3");
  EXPECT_THAT(picture.gpu_note, IsEmpty());
}

TEST(HwlocPictureTest, SingleSocketBoxFindsGpusByClassAndVendor) {
  const LocalPicture picture = Load("single_socket_4gpu.xml");
  EXPECT_EQ(picture.host_name, "fixture-1s4g");
  EXPECT_EQ(picture.packages, 1);
  EXPECT_EQ(picture.numa_nodes, 1);
  EXPECT_EQ(picture.cores, 8);
  EXPECT_EQ(picture.pus, 16);
  ASSERT_EQ(picture.gpus.size(), 4u);  // two VGA-class and two 3D-class NVIDIA; not the ASPEED
  ASSERT_EQ(picture.nics.size(), 2u);
  EXPECT_EQ(picture.nics[0].name, "enp2s0f0");  // no OpenFabrics device: the interface name
  EXPECT_EQ(picture.nics[1].name, "enp2s0f1");
}

TEST(HwlocPictureTest, SingleSocketBoxNicPathsGoThroughHostBridgeOrCpu) {
  const LocalPicture picture = Load("single_socket_4gpu.xml");
  const struct {
    const char* gpu;
    NicPath path;
  } expected[] = {{"0000:01:00.0", NicPath::kHostBridge},
                  {"0000:21:00.0", NicPath::kHostBridge},
                  {"0000:41:00.0", NicPath::kSameNuma},
                  {"0000:61:00.0", NicPath::kSameNuma}};
  for (const auto& e : expected) {
    SCOPED_TRACE(e.gpu);
    const GpuInfo& gpu = GpuAt(picture, e.gpu);
    EXPECT_EQ(gpu.numa_node, 0);
    EXPECT_EQ(gpu.cpus, "0-15");
    EXPECT_EQ(gpu.cores_near, 8);
    EXPECT_THAT(NearestNicNames(picture, gpu), ElementsAre("enp2s0f0", "enp2s0f1"));
    EXPECT_EQ(gpu.nic_path, e.path);
  }
}

TEST(HwlocPictureTest, UnknownGpuBusIdLeavesNoAffinityAndSaysWhy) {
  LogCapture log;
  const LocalPicture picture = Load("single_socket_4gpu.xml", "0000:99:00.0");
  EXPECT_EQ(picture.selected_gpu, -1);
  EXPECT_EQ(picture.SelectedGpu(), nullptr);
  EXPECT_EQ(picture.NearestNic(), nullptr);
  EXPECT_EQ(picture.gpu_note, "GPU 0000:99:00.0 is not on hwloc's PCI tree");
  EXPECT_THAT(log.At("WARN"), IsEmpty());
  EXPECT_THAT(log.At("INFO"), ElementsAre(HasSubstr("GPU 0000:99:00.0 is not on hwloc's PCI "
                                                    "tree; zpp goes on without GPU affinity")));
}

TEST(HwlocPictureTest, ThisMachineLoadsWithOrWithoutGpus) {
  PictureRequest request;
  LocalPicture picture;
  ASSERT_EQ(LoadLocalPicture(request, &picture), ncclSuccess);
  EXPECT_EQ(picture.source, kThisMachine);
  EXPECT_FALSE(picture.host_name.empty());
  EXPECT_GE(picture.cores, 1);
  EXPECT_GE(picture.pus, picture.cores);
  EXPECT_EQ(picture.selected_gpu, -1);
  // No GPU was asked for: the note says whether the machine has any.
  EXPECT_EQ(picture.gpu_note, picture.gpus.empty() ? "no GPU on this machine"
                                                   : "no GPU given (a process without a CUDA "
                                                     "device)");
}

TEST(HwlocPictureTest, MissingXmlFailsWithAWarning) {
  LogCapture log;
  PictureRequest request;
  request.xml_path = Fixture("does_not_exist.xml");
  LocalPicture picture;
  EXPECT_EQ(LoadLocalPicture(request, &picture), ncclSystemError);
  EXPECT_THAT(log.At("WARN"), ElementsAre(HasSubstr("does_not_exist.xml")));
  EXPECT_THAT(log.At("WARN")[0], HasSubstr("no local picture"));
}

TEST(HwlocPictureTest, GarbledXmlFailsWithAWarning) {
  char path[] = "/tmp/zpp_garbled_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string garbage = "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=";
  ASSERT_EQ(write(fd, garbage.data(), garbage.size()), static_cast<ssize_t>(garbage.size()));
  close(fd);
  LogCapture log;
  PictureRequest request;
  request.xml_path = path;
  LocalPicture picture;
  EXPECT_EQ(LoadLocalPicture(request, &picture), ncclSystemError);
  std::remove(path);
  EXPECT_THAT(log.At("WARN"), ElementsAre(HasSubstr(path)));
}

TEST(LocalPictureTest, NicPathNames) {
  EXPECT_EQ(NicPathName(NicPath::kPcieSwitch), "pcie-switch");
  EXPECT_EQ(NicPathName(NicPath::kHostBridge), "host-bridge");
  EXPECT_EQ(NicPathName(NicPath::kSameNuma), "same-numa");
  EXPECT_EQ(NicPathName(NicPath::kCrossNuma), "cross-numa");
}

}  // namespace
}  // namespace zpp::topology
