#include "transport/file_rendezvous.h"

#include <filesystem>
#include <fstream>
#include <thread>

namespace zpp {

Result PublishFile(const std::string& path, std::span<const std::byte> bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    ZPP_CHECK_ARG(out.good(),
                  "rendezvous: cannot write %s; it fails with ncclInvalidArgument (check that the "
                  "folder exists and is writable)",
                  tmp.c_str());
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  ZPP_CHECK_ARG(!error,
                "rendezvous: cannot rename %s to %s: %s; it fails with ncclInvalidArgument (check "
                "the folder's permissions)",
                tmp.c_str(), path.c_str(), error.message().c_str());
  return ncclSuccess;
}

Result AwaitFile(const std::string& path, std::span<std::byte> bytes,
                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    std::ifstream in(path, std::ios::binary);
    if (in.read(reinterpret_cast<char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()))) {
      return ncclSuccess;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  ZPP_WARN(
      "rendezvous: %s did not appear within %lld ms; it fails with ncclSystemError (did rank 0 "
      "start, and do all ranks see the same folder?)",
      path.c_str(), static_cast<long long>(timeout.count()));
  return ncclSystemError;
}

}  // namespace zpp
