// libzpp_cpu.so's C API (include/zpp/zpp_cpu.h): thin wrappers over cpu::CpuComm that catch
// everything. The step epoch is read from libzpp.so (a DT_NEEDED of this library), so that one
// process has one epoch whichever hook advances it.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "cpu_comm/cpu_comm.h"
#include "plugin/c_boundary.h"
#include "plugin/progress_line.h"
#include "plugin/torch/cpu_comm_registry.h"
#include "zpp/zpp.h"
#include "zpp/zpp_cpu.h"

struct zppCpuComm {
  std::shared_ptr<zpp::cpu::CpuComm> comm;
  zpp::transport::Address address;
  std::string last_error;  // what zppCpuCommGetLastError gave out last
};

namespace {

uint64_t LibzppEpoch() {
  uint64_t epoch = 0;
  if (zppGetStepEpoch(&epoch) != ncclSuccess) return 0;
  return epoch;
}

zpp::Result CheckComm(zppCpuComm_t comm, const char* function) {
  ZPP_CHECK_ARG(comm != nullptr && comm->comm != nullptr,
                "%s: comm is NULL; the call returns ncclInvalidArgument", function);
  return ncclSuccess;
}

zpp::Result CheckFloatDtype(ncclDataType_t dtype, const char* function) {
  ZPP_CHECK_ARG(dtype == ncclFloat32 || dtype == ncclFloat16 || dtype == ncclBfloat16,
                "%s: dtype %d is not fp32, fp16 or bf16; the call returns ncclInvalidArgument",
                function, static_cast<int>(dtype));
  return ncclSuccess;
}

// The engine's reduction of a zppCpuRedOp_t.
zpp::Result ReductionOf(zppCpuRedOp_t op, const char* function, zpp::plan::Reduction* reduction) {
  switch (op) {
    case zppCpuSum:
      *reduction = zpp::plan::Reduction::kSum;
      return ncclSuccess;
    case zppCpuAvg:
      *reduction = zpp::plan::Reduction::kAvg;
      return ncclSuccess;
    case zppCpuPreMulSum:
      *reduction = zpp::plan::Reduction::kPreMulSum;
      return ncclSuccess;
  }
  ZPP_WARN(
      "%s: unknown reduction %d; the call returns ncclInvalidArgument (use zppCpuSum, zppCpuAvg or "
      "zppCpuPreMulSum)",
      function, static_cast<int>(op));
  return ncclInvalidArgument;
}

}  // namespace

extern "C" {

ZPP_API ncclResult_t zppCpuCommOpen(int rank, int nranks, zppCpuComm_t* comm) {
  return zppCpuCommOpenWithTimeout(rank, nranks, 0, comm);
}

ZPP_API ncclResult_t zppCpuCommOpenWithTimeout(int rank, int nranks, int64_t timeout_ms,
                                               zppCpuComm_t* comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK_ARG(comm != nullptr,
                  "zppCpuCommOpen: comm is NULL; the call returns ncclInvalidArgument");
    ZPP_CHECK_ARG(nranks >= 1 && rank >= 0 && rank < nranks,
                  "zppCpuCommOpen: rank %d of %d is not a rank (0 <= rank < nranks); the call "
                  "returns ncclInvalidArgument",
                  rank, nranks);
    auto made = std::make_unique<zppCpuComm>();
    std::unique_ptr<zpp::cpu::CpuComm> opened;
    ZPP_CHECK(zpp::cpu::CpuComm::Open(rank, nranks, LibzppEpoch, &opened, &made->address,
                                      std::chrono::milliseconds(timeout_ms)));
    made->comm = std::move(opened);
    *comm = made.release();
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppCpuCommAddress(zppCpuComm_t comm, const void** address, size_t* bytes) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK(CheckComm(comm, __func__));
    ZPP_CHECK_ARG(
        address != nullptr && bytes != nullptr,
        "zppCpuCommAddress: address or bytes is NULL; the call returns ncclInvalidArgument");
    *address = comm->address.data();
    *bytes = comm->address.size();
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppCpuCommConnect(zppCpuComm_t comm, const void* addresses,
                                       const size_t* bytes) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK(CheckComm(comm, __func__));
    ZPP_CHECK_ARG(
        addresses != nullptr && bytes != nullptr,
        "zppCpuCommConnect: addresses or bytes is NULL; the call returns ncclInvalidArgument");
    std::vector<zpp::transport::Address> all(comm->comm->size());
    const auto* next = static_cast<const std::byte*>(addresses);
    for (auto& address : all) {
      const size_t length = *bytes++;
      ZPP_CHECK_ARG(
          length > 0 && length <= zpp::transport::kMaxAddressBytes,
          "zppCpuCommConnect: an address of %zu bytes (1 to %u allowed); the call returns "
          "ncclInvalidArgument (pass every rank's zppCpuCommAddress bytes unchanged)",
          length, static_cast<unsigned>(zpp::transport::kMaxAddressBytes));
      address.assign(next, next + length);
      next += length;
    }
    ZPP_CHECK(comm->comm->Connect(all));
    zpp::cpu::RegisterForStatsTable(comm->comm);
    return ncclSuccess;
  });
}

ZPP_API const char* zppCpuCommGetLastError(zppCpuComm_t comm) {
  if (comm == nullptr || comm->comm == nullptr) return nullptr;
  try {
    comm->last_error = comm->comm->Failure();
  } catch (...) {
    comm->last_error = "zpp: the failure could not be read (out of memory)";
  }
  return comm->last_error.c_str();
}

ZPP_API ncclResult_t zppCpuCommDestroy(zppCpuComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    if (comm == nullptr) return ncclSuccess;
    // The stats table keeps the counters; the transport goes with the last owner.
    if (comm->comm != nullptr) zpp::cpu::KeepStatsOf(*comm->comm);
    delete comm;
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppCpuCommTopology(zppCpuComm_t comm, int* nodes, int* local_size,
                                        int* hierarchical, int* config_agreed) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK(CheckComm(comm, __func__));
    ZPP_CHECK_ARG(
        nodes != nullptr && local_size != nullptr && hierarchical != nullptr &&
            config_agreed != nullptr,
        "zppCpuCommTopology: an output pointer is NULL; the call returns ncclInvalidArgument");
    const zpp::topology::Topology& topology = comm->comm->topology();
    *nodes = topology.num_nodes();
    *local_size = topology.num_ranks() > 0 ? topology.local_size(comm->comm->rank()) : 0;
    *hierarchical = topology.hierarchical_allowed() ? 1 : 0;
    *config_agreed = comm->comm->config_difference().empty() ? 1 : 0;
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppCpuAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                     ncclDataType_t datatype, zppCpuComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK(CheckComm(comm, __func__));
    ZPP_CHECK_ARG(
        sendcount == 0 || (sendbuff != nullptr && recvbuff != nullptr),
        "zppCpuAllGather: NULL buffer with a count; the call returns ncclInvalidArgument");
    // The pass the calling thread set in libzpp.so (zppSetTrainingPass): the torch backend's
    // worker sets it per call, as the issuing thread saw it.
    int pass = zppPassUnknown;
    if (zppGetTrainingPass(&pass) != ncclSuccess) pass = zppPassUnknown;
    return comm->comm->AllGather(
        {sendbuff, recvbuff, sendcount, datatype, static_cast<zpp::TrainingPass>(pass)});
  });
}

ZPP_API ncclResult_t zppCpuReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                         ncclDataType_t datatype, zppCpuRedOp_t op, float premul,
                                         zppCpuComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK(CheckComm(comm, __func__));
    ZPP_CHECK_ARG(
        recvcount == 0 || (sendbuff != nullptr && recvbuff != nullptr),
        "zppCpuReduceScatter: NULL buffer with a count; the call returns ncclInvalidArgument");
    ZPP_CHECK(CheckFloatDtype(datatype, __func__));
    zpp::engine::ReduceScatterArgs args{sendbuff, recvbuff, recvcount, datatype};
    ZPP_CHECK(ReductionOf(op, __func__, &args.reduction));
    args.premul = premul;
    return comm->comm->ReduceScatter(args);
  });
}

ZPP_API ncclResult_t zppCpuAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                     ncclDataType_t datatype, zppCpuRedOp_t op, float premul,
                                     zppCpuComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK(CheckComm(comm, __func__));
    ZPP_CHECK_ARG(
        count == 0 || (sendbuff != nullptr && recvbuff != nullptr),
        "zppCpuAllReduce: NULL buffer with a count; the call returns ncclInvalidArgument");
    ZPP_CHECK(CheckFloatDtype(datatype, __func__));
    zpp::engine::AllReduceArgs args{sendbuff, recvbuff, count, datatype};
    ZPP_CHECK(ReductionOf(op, __func__, &args.reduction));
    args.premul = premul;
    return comm->comm->AllReduce(args);
  });
}

ZPP_API ncclResult_t zppCpuAllGatherBytes(const void* sendbuff, void* recvbuff, size_t bytes,
                                          zppCpuComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK(CheckComm(comm, __func__));
    ZPP_CHECK_ARG(
        bytes == 0 || (sendbuff != nullptr && recvbuff != nullptr),
        "zppCpuAllGatherBytes: NULL buffer with a size; the call returns ncclInvalidArgument");
    return comm->comm->AllGatherBytes(sendbuff, recvbuff, bytes);
  });
}

ZPP_API ncclResult_t zppCpuBroadcastBytes(void* buff, size_t bytes, int root, zppCpuComm_t comm) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK(CheckComm(comm, __func__));
    ZPP_CHECK_ARG(
        bytes == 0 || buff != nullptr,
        "zppCpuBroadcastBytes: NULL buffer with a size; the call returns ncclInvalidArgument");
    return comm->comm->Broadcast(buff, bytes, root);
  });
}

ZPP_API ncclResult_t zppCpuCommGetStats(zppCpuComm_t comm, zppStats_t* stats) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK(CheckComm(comm, __func__));
    ZPP_CHECK_ARG(stats != nullptr,
                  "zppCpuCommGetStats: stats is NULL; the call returns ncclInvalidArgument");
    comm->comm->Snapshot(stats);
    stats->step_epoch = LibzppEpoch();
    zppStats_t process{};
    if (zppGetStats(&process) == ncclSuccess) stats->hpz_skipped_steps = process.hpz_skipped_steps;
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppCpuCommHpzChecks(zppCpuComm_t comm, int* enabled, uint64_t* failures,
                                         uint64_t* choices) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK(CheckComm(comm, __func__));
    ZPP_CHECK_ARG(enabled != nullptr && failures != nullptr && choices != nullptr,
                  "zppCpuCommHpzChecks: NULL output; the call returns ncclInvalidArgument");
    *enabled = comm->comm->ReadHpzChecks(failures, choices) ? 1 : 0;
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppCpuStepEnded(void) {
  return zpp::CatchAll(__func__, [&] {
    static std::atomic<uint64_t> last_reported{0};
    const uint64_t epoch = LibzppEpoch();
    if (!zpp::plugin::ProgressDue(epoch, static_cast<uint64_t>(zpp::GetConfig().progress)) ||
        last_reported.exchange(epoch) == epoch) {
      return ncclSuccess;
    }
    const auto rows = zpp::cpu::CpuCommRows();
    if (zpp::plugin::SpeaksForJob(rows)) {
      std::fprintf(stderr, "%s\n", zpp::plugin::FormatProgressLine(epoch, rows).c_str());
    }
    return ncclSuccess;
  });
}

}  // extern "C"
