#include "point_to_point.h"

#include <atomic>

#include "sim/sim_backend.h"

namespace zpp::test {

PointToPointRun RunPointToPoint(sim::SimWorld& world) {
  const int n = world.world_size();
  PointToPointRun run;
  run.received.resize(n);
  std::atomic<int> failures{0};
  world.ResetCounters();
  world.RunRanks([&](sim::SimBackend& backend) {
    // Sends and receives on separate streams, as NCCL's grouped send/recv: a ring where every
    // rank received first on one stream would wait forever.
    std::unique_ptr<Stream> sends, receives;
    if (backend.CreateStream(&sends) != ncclSuccess ||
        backend.CreateStream(&receives) != ncclSuccess) {
      ++failures;
      return;
    }
    std::vector<std::vector<uint8_t>> outgoing, incoming;
    for (GroupKind kind : {GroupKind::kWorld, GroupKind::kIntraNode, GroupKind::kInterNode}) {
      const int size = backend.GroupSize(kind);
      const int me = backend.GroupRank(kind);
      if (size == 1) continue;
      for (size_t bytes : {size_t{1}, size_t{4000}, size_t{300000}}) {
        std::vector<uint8_t> message(bytes);
        for (size_t i = 0; i < bytes; ++i) {
          message[i] = static_cast<uint8_t>(backend.rank() * 31 + static_cast<int>(kind) * 7 + i);
        }
        outgoing.push_back(std::move(message));
        incoming.emplace_back(bytes, 0xEE);
        Result result =
            backend.Recv(incoming.back().data(), bytes, (me + size - 1) % size, kind, *receives);
        if (result == ncclSuccess) {
          result = backend.Send(outgoing.back().data(), bytes, (me + 1) % size, kind, *sends);
        }
        if (result != ncclSuccess) ++failures;
      }
    }
    backend.Synchronize(*sends);
    backend.Synchronize(*receives);
    if (backend.AsyncError() != ncclSuccess) ++failures;
    for (const std::vector<uint8_t>& message : incoming) {
      run.received[backend.rank()].insert(run.received[backend.rank()].end(), message.begin(),
                                          message.end());
    }
  });
  run.failures = failures.load();
  for (int r = 0; r < n; ++r) {
    std::array<uint64_t, zppNumLinks> sent{};
    for (int link = 0; link < zppNumLinks; ++link) {
      sent[link] = world.SentBytes(r, static_cast<zppLink_t>(link));
    }
    run.sent_bytes.push_back(sent);
  }
  return run;
}

}  // namespace zpp::test
