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

// A level's bandwidth and latency from batches timed at two sizes (the fastest of a few batches
// per size, after a warm-up call): `sent_per_byte`, bytes that cross the level's link per byte of
// one rank's piece; `steps`, its latency steps.
Result FitLevel(const BatchTimer& time_batch, double sent_per_byte, int steps,
                costmodel::LinkLevel* level);

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
