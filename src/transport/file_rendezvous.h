// Handing a few bytes (an NCCL unique id) from rank 0 to the other processes of a job on one
// machine through a shared folder: rank 0 writes a file and renames it into place, so a reader
// sees all of it or nothing; the others wait for it, bounded.
#pragma once

#include <chrono>
#include <span>
#include <string>

#include "log/check.h"

namespace zpp {

Result PublishFile(const std::string& path, std::span<const std::byte> bytes);

// Fills `bytes` from the file once it holds that many; ncclSystemError after `timeout`.
Result AwaitFile(const std::string& path, std::span<std::byte> bytes,
                 std::chrono::milliseconds timeout);

}  // namespace zpp
