#include "topology/pci_address.h"

#include <gtest/gtest.h>

namespace zpp::topology {
namespace {

TEST(PciAddressTest, ParsesTheFormsCudaNvidiaSmiAndLspciWrite) {
  const PciAddress expected{0, 0x07, 0x00, 0};
  EXPECT_EQ(ParsePciAddress("0000:07:00.0"), expected);      // cudaDeviceGetPCIBusId
  EXPECT_EQ(ParsePciAddress("00000000:07:00.0"), expected);  // nvidia-smi
  EXPECT_EQ(ParsePciAddress("07:00.0"), expected);           // lspci without -D
  EXPECT_EQ(ParsePciAddress(" 0000:07:00.0\n"), expected);

  const std::optional<PciAddress> upper = ParsePciAddress("0001:B3:1F.7");
  ASSERT_TRUE(upper);
  EXPECT_EQ(upper->domain, 1u);
  EXPECT_EQ(upper->bus, 0xb3);
  EXPECT_EQ(upper->device, 0x1f);
  EXPECT_EQ(upper->function, 7);
}

TEST(PciAddressTest, RejectsWhatIsNotAnAddress) {
  for (const char* bad : {"", "0000:07:00", "07.00.0", "0000:07:00.0.1", "0000:107:00.0",
                          "0000:07:20.0", "0000:07:00.8", "0000:07:00.a", "000000000:07:00.0",
                          "0000:0g:00.0", "0000::00.0", "a:b:c:d.0", "-1:07:00.0"}) {
    EXPECT_FALSE(ParsePciAddress(bad)) << bad;
  }
}

TEST(PciAddressTest, FormatsCanonicallyAndRoundTrips) {
  const PciAddress address{0x1, 0xb3, 0x1f, 7};
  EXPECT_EQ(FormatPciAddress(address), "0001:b3:1f.7");
  EXPECT_EQ(ParsePciAddress(FormatPciAddress(address)), address);
  EXPECT_EQ(FormatPciAddress(PciAddress{}), "0000:00:00.0");
}

}  // namespace
}  // namespace zpp::topology
