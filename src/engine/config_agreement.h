// At communicator set-up, the ranks compare the zpp settings that change what goes on the wire.
// If any differ, every rank learns it from the same exchange and the communicator falls back to
// plain NCCL (a mismatch must not hang a job), with one WARN naming the variable.
#pragma once

#include <string>

#include "backend/backend.h"

namespace zpp {
struct Config;
}

namespace zpp::engine {

struct ConfigAgreement {
  bool agreed = true;
  std::string first_difference;  // "ZPP_QWZ_BITS (rank 0: 8, rank 3: 4)"
};

// Collective over the world group: every rank must call it, in the same order as its other
// collectives. Blocks the host once (set-up, not the collective path).
Result AgreeOnConfiguration(Backend& backend, Stream& stream, const Config& config,
                            ConfigAgreement* out);

}  // namespace zpp::engine
