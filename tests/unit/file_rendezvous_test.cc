// The file hand-over the GPU tools use for NCCL's id: all or nothing, and a bounded wait.
#include "transport/file_rendezvous.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <thread>

namespace zpp {
namespace {

TEST(FileRendezvousTest, AWaiterGetsWhatWasPublishedLater) {
  const std::string path = testing::TempDir() + "zpp_rendezvous_" + std::to_string(getpid());
  std::filesystem::remove(path);
  const std::array<std::byte, 4> sent = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
  std::thread publisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(PublishFile(path, sent), ncclSuccess);
  });
  std::array<std::byte, 4> got{};
  EXPECT_EQ(AwaitFile(path, got, std::chrono::seconds(10)), ncclSuccess);
  publisher.join();
  EXPECT_EQ(got, sent);
  std::filesystem::remove(path);
}

TEST(FileRendezvousTest, NoFileIsAnErrorAfterTheTimeout) {
  std::array<std::byte, 4> got{};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(
      AwaitFile(testing::TempDir() + "zpp_rendezvous_never", got, std::chrono::milliseconds(200)),
      ncclSystemError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace zpp
