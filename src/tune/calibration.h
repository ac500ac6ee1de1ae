// ZPP_TUNE=auto's measurements, at communicator set-up only (they wait for the device, which the
// collective path never does): each rank times the intra-node and inter-node all-gathers at two
// sizes through the backend's own collectives, every rank at once (so that a node's ranks share
// its link as in training), and the codec operations on its device; the ranks then agree on the
// slowest figure of each, so that every rank builds the same decision table (contract 3).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"
#include "costmodel/cost_model.h"
#include "plan/plan.h"
#include "topology/byte_all_gather.h"
#include "tune/decision_table.h"

namespace zpp::tune {

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
