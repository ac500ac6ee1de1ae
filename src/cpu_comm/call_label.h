// What each call of a CPU communicator is, for the transport to keep different calls apart
// (transport::CallLabel): every member must be in the same call with the same collective, count,
// dtype, reduction and root. The signature holds the collective exactly and the rest hashed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/collective_args.h"
#include "transport/transport.h"

namespace zpp::cpu {

transport::CallLabel AllGatherLabel(uint64_t number, const engine::AllGatherArgs& args);
transport::CallLabel ReduceScatterLabel(uint64_t number, const engine::ReduceScatterArgs& args);
transport::CallLabel AllReduceLabel(uint64_t number, const engine::AllReduceArgs& args);
// The exact byte collectives torch's all_reduce, barrier and broadcast are made of.
transport::CallLabel AllGatherBytesLabel(uint64_t number, size_t bytes);
transport::CallLabel BroadcastLabel(uint64_t number, size_t bytes, int root);

}  // namespace zpp::cpu
