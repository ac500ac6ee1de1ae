// The layer lists step mode replays: one entry per FSDP unit (one all-gather and one
// reduce-scatter per step each), built in for GPT-style models or read from a file, and their
// scaling down to a size the simulated cluster replays in seconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "log/check.h"

namespace zpp::step {

// One FSDP unit: the parameters one all-gather brings in (a transformer block, the embeddings).
struct ModelUnit {
  std::string name;
  uint64_t elements = 0;  // parameters of the whole unit (all ranks' shards together)
};

struct Model {
  std::string name;
  std::vector<ModelUnit> units;
  uint64_t Elements() const;
};

// "125M", "1.3B", "7B": GPT-3's shapes (hidden 768 / 2048 / 4096, 12 / 24 / 32 blocks,
// vocabulary 50257, context 2048; the 7B is GPT-3's 6.7B). Units: the embeddings (token and
// position, with the final layer norm and the tied head), then one per transformer block
// (attention 4h^2 + 4h, MLP 8h^2 + 5h, two layer norms 4h).
std::vector<std::string> BuiltinModelNames();
Result BuiltinModel(std::string_view name, Model* out);

// A file of "name elements" lines (# starts a comment; elements a positive integer), one FSDP
// unit per line in forward order.
Result LoadModelFile(const std::string& path, Model* out);

// A built-in name, else a file.
Result ResolveModel(const std::string& name_or_path, Model* out);

// The model as the simulated cluster replays it. Every unit is divided by the same factor, so
// that the whole model has at most `max_elements`, and each rank's shard is rounded up to whole
// quantization blocks (at least one). The inter-node volume relative to plain ZeRO-3 depends
// on the units only through the per-block scales and the 16-byte padding of each piece, which
// whole blocks keep as they are at full size; the number of units is kept.
struct ScaledModel {
  std::vector<size_t> shard_counts;  // elements per rank, per unit, forward order
  double factor = 1;                 // full-size elements / replayed elements
};
ScaledModel ScaleForSim(const Model& model, int world, uint64_t max_elements, int block);

}  // namespace zpp::step
