#include "engine/backend_byte_all_gather.h"

namespace zpp {

Result BackendByteAllGather::AllGather(std::span<const std::byte> mine, std::span<std::byte> all) {
  ZPP_CHECK_ARG(all.size() == mine.size() * static_cast<size_t>(size()),
                "topology exchange: %zu bytes for %d ranks of %zu" ZPP_BUG_REPORT, all.size(),
                size(), mine.size());
  std::unique_ptr<DeviceMemory> send, recv;
  std::unique_ptr<Event> done;
  ZPP_CHECK(backend_.Allocate(mine.size(), &send));
  ZPP_CHECK(backend_.Allocate(all.size(), &recv));
  ZPP_CHECK(backend_.CreateEvent(&done));
  ZPP_CHECK(backend_.CopyFromHost(send->data(), mine.data(), mine.size(), stream_));
  ZPP_CHECK(
      backend_.AllGather(send->data(), recv->data(), mine.size(), GroupKind::kWorld, stream_));
  ZPP_CHECK(backend_.RecordEvent(*done, stream_));
  return backend_.ReadAfter(*done, all.data(), recv->data(), all.size());
}

}  // namespace zpp
