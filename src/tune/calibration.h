// ZPP_TUNE=auto's measurements, at communicator set-up only (they wait for the device, which the
// collective path never does): each rank times the intra-node and inter-node all-gathers at two
// sizes through the backend's own collectives, every rank at once (so that a node's ranks share
// its link as in training), and the codec operations on its device; the ranks then agree on the
// slowest figure of each, so that every rank builds the same decision table (contract 3).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "costmodel/cost_model.h"
#include "plan/plan.h"
#include "topology/byte_all_gather.h"
#include "tune/decision_table.h"

namespace zpp::tune {

// Times `calls` back-to-back calls of one level's all-gather of `bytes` per rank: *seconds for
// all of them, as this rank's stream saw it.
using BatchTimer = std::function<Result(size_t bytes, int calls, double* seconds)>;

// Calls per timed batch. One call timed alone on a rank's own stream is short on the rank that
// reached it last (its peers' data already there): on a GPU shared by time-sliced ranks that
// read 9.7 us for a 9 ms call. Back to back, only a batch's first call can be short, so a batch
// reads at least 3/4 of the true time.
inline constexpr int kCallsPerBatch = 4;

// Every rank's word on the large size just timed: `content` false asks for a larger one; *grow is
// true when any rank asked. Collective over the world, so that every rank times the same sizes.
using GrowAgreement = std::function<Result(bool content, bool* grow)>;

// The bandwidth probe's sizes (bytes per rank). It starts at kLargeBytes and grows fourfold,
// up to `max_bytes` (what the buffers hold, the same on every rank), until a call of it takes
// kLargeOverSmall times the small call: then the bytes' own time is three times the fixed part,
// and jitter of the fixed part's size moves the bandwidth by a third at most. At 256 KiB alone,
// the H100 testbed's 4.4 ms calls read an intra-node link at half the inter-node one's speed
// over the same loopback sockets (2026-11-27), and ZPP_TUNE=auto lost to zero++ from 4 MiB.
inline constexpr size_t kSmallBytes = 8 << 10;
inline constexpr size_t kLargeBytes = 256 << 10;
inline constexpr double kLargeOverSmall = 4.0;
struct ProbeSizes {
  size_t max_bytes = kLargeBytes;
  GrowAgreement agree;  // null: this rank decides alone (a test, or a world of one)
};

// A level's bandwidth and latency from batches timed at two sizes (the fastest of a few batches
// per size, after a warm-up call): `sent_per_byte`, bytes that cross the level's link per byte of
// one rank's piece; `steps`, its latency steps. *large_bytes (may be null): the probe's size.
Result FitLevel(const BatchTimer& time_batch, double sent_per_byte, int steps,
                const ProbeSizes& sizes, costmodel::LinkLevel* level,
                size_t* large_bytes = nullptr);

// The largest probe a world of `world` ranks allocates: 16 MiB a rank, and at most 256 MiB for
// the gathered buffer, in kLargeBytes times a power of 4.
size_t MaxProbeBytes(int world);

// This rank's figures into model->intra, ->inter and ->kernels (nodes and ranks per node from
// `shape`). A level the shape does not have keeps the model's. Collective over the world: every
// rank calls it, whatever it finds; *measured says whether this rank's figures are whole.
Result MeasureFigures(Backend& backend, Stream& stream, topology::ByteAllGather& exchange,
                      const plan::Shape& shape, costmodel::ClusterModel* model, bool* measured);

// Every rank's figures, exchanged; *agreed holds the slowest of each (the lowest bandwidth and
// throughput, the highest latency), *all_measured whether every rank measured.
Result AgreeOnFigures(topology::ByteAllGather& exchange, const costmodel::ClusterModel& mine,
                      bool measured, costmodel::ClusterModel* agreed, bool* all_measured);

// ZPP_TUNE=auto at set-up: measure, agree, build the table, log it (subsystem TUNE). *out stays
// null when some rank could not calibrate: then the static rule decides, on every rank alike.
Result SetUpTuning(Backend& backend, Stream& stream, topology::ByteAllGather& exchange,
                   const plan::Shape& shape, const plan::Settings& settings,
                   std::shared_ptr<const Tuning>* out);

// The agreed figures for the log.
std::string DescribeFigures(const costmodel::ClusterModel& model);

}  // namespace zpp::tune
