#include "transport/launch_env.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace zpp::transport {
namespace {

bool ParseInt(const char* text, int* out) {
  if (text == nullptr) return false;
  const char* last = text + std::strlen(text);
  const auto [end, error] = std::from_chars(text, last, *out);
  return error == std::errc() && end == last;
}

}  // namespace

Result ReadLaunchInfo(LaunchInfo* out) {
  LaunchInfo info;
  const char* bootstrap = std::getenv(kLaunchBootstrapEnv);
  if (!ParseInt(std::getenv(kLaunchRankEnv), &info.rank) ||
      !ParseInt(std::getenv(kLaunchSizeEnv), &info.size) || bootstrap == nullptr) {
    ZPP_WARN(
        "this process was not started by zpp-launch (%s, %s, %s unset or bad); it fails with "
        "ncclInvalidUsage (run it under zpp-launch -n N -- PROGRAM)",
        kLaunchRankEnv, kLaunchSizeEnv, kLaunchBootstrapEnv);
    return ncclInvalidUsage;
  }
  ZPP_CHECK_ARG(info.size > 0 && info.rank >= 0 && info.rank < info.size,
                "zpp-launch gave rank %d of %d; it fails with ncclInvalidArgument (%s and %s are "
                "zpp-launch's to set)",
                info.rank, info.size, kLaunchRankEnv, kLaunchSizeEnv);
  info.bootstrap = bootstrap;
  *out = std::move(info);
  return ncclSuccess;
}

}  // namespace zpp::transport
