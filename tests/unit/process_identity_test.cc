// Who a peer's process is, and whether it is gone: what the UCP transport names in its errors and
// reads to fail a dead peer's waits within a moment (issue 29, item 6).
#include "transport/process_identity.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

namespace zpp::transport {
namespace {

TEST(ProcessIdentityTest, ThisProcessIsAliveAndSharesItsOwnProcessTable) {
  const ProcessIdentity self = ProcessIdentity::Self();
  EXPECT_EQ(self.pid, getpid());
  EXPECT_GT(self.start_ticks, 0u);
  EXPECT_TRUE(self.SharesProcessTable(self));
  EXPECT_FALSE(self.Gone());
  EXPECT_NE(self.Describe().find("pid " + std::to_string(getpid())), std::string::npos);
}

TEST(ProcessIdentityTest, AnotherMachineOrPidNamespaceIsNotLookedUp) {
  const ProcessIdentity self = ProcessIdentity::Self();
  ProcessIdentity other = self;
  other.host_key = "another-boot-id" + self.host_key.substr(self.host_key.find('/'));
  EXPECT_FALSE(self.SharesProcessTable(other));
  other.host_key = self.host_key + "x";
  EXPECT_FALSE(self.SharesProcessTable(other));
  ProcessIdentity unknown = self;
  unknown.host_key = "/pid:[1]";  // no boot id could be read
  EXPECT_FALSE(unknown.SharesProcessTable(unknown));
}

TEST(ProcessIdentityTest, AChildIsGoneOnceItExitedReapedOrNot) {
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  ProcessIdentity identity;
  ASSERT_TRUE(ProcessIdentity::Of(child, &identity));
  EXPECT_TRUE(ProcessIdentity::Self().SharesProcessTable(identity));
  EXPECT_FALSE(identity.Gone());
  ProcessIdentity reused = identity;
  reused.start_ticks += 1;  // the pid now belongs to another process
  EXPECT_TRUE(reused.Gone());

  kill(child, SIGKILL);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);  // exited, still a zombie
  EXPECT_TRUE(identity.Gone());
  ASSERT_EQ(waitpid(child, nullptr, 0), child);  // reaped: no such pid
  EXPECT_TRUE(identity.Gone());
}

TEST(ProcessIdentityTest, TheWireFormRoundTripsAndRefusesOtherBytes) {
  ProcessIdentity identity = ProcessIdentity::Self();
  identity.hostname = "node-17";
  std::vector<std::byte> wire(kIdentityBytes);
  WriteIdentity(identity, wire.data());
  ProcessIdentity back;
  ASSERT_TRUE(ReadIdentity(wire.data(), wire.size(), &back));
  EXPECT_EQ(back.pid, identity.pid);
  EXPECT_EQ(back.start_ticks, identity.start_ticks);
  EXPECT_EQ(back.host_key, identity.host_key);
  EXPECT_EQ(back.hostname, "node-17");
  EXPECT_FALSE(ReadIdentity(wire.data(), wire.size() - 1, &back));
  wire[0] = std::byte{0};
  EXPECT_FALSE(ReadIdentity(wire.data(), wire.size(), &back));
}

}  // namespace
}  // namespace zpp::transport
