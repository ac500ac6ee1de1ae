#include "engine/backend_byte_all_gather.h"

namespace zpp {

Result BackendByteAllGather::Make(size_t bytes, Buffers* buffers) {
  ZPP_CHECK(backend_.Allocate(bytes, &buffers->send));
  ZPP_CHECK(backend_.Allocate(bytes * static_cast<size_t>(size()), &buffers->recv));
  return backend_.CreateEvent(&buffers->done);
}

Result BackendByteAllGather::Reserve(size_t bytes) {
  ZPP_CHECK(Make(bytes, &reserved_));
  reserved_bytes_ = bytes;
  return ncclSuccess;
}

Result BackendByteAllGather::AllGather(std::span<const std::byte> mine, std::span<std::byte> all) {
  ZPP_CHECK_ARG(all.size() == mine.size() * static_cast<size_t>(size()),
                "topology exchange: %zu bytes for %d ranks of %zu" ZPP_BUG_REPORT, all.size(),
                size(), mine.size());
  Buffers own;
  Buffers* buffers = &reserved_;
  if (mine.size() > reserved_bytes_) {
    ZPP_CHECK(Make(mine.size(), &own));
    buffers = &own;
  }
  ZPP_CHECK(backend_.CopyFromHost(buffers->send->data(), mine.data(), mine.size(), stream_));
  ZPP_CHECK(backend_.AllGather(buffers->send->data(), buffers->recv->data(), mine.size(),
                               GroupKind::kWorld, stream_));
  ZPP_CHECK(backend_.RecordEvent(*buffers->done, stream_));
  return backend_.ReadAfter(*buffers->done, all.data(), buffers->recv->data(), all.size());
}

}  // namespace zpp
