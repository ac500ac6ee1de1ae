#include "step/model_shapes.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "log/log.h"

namespace zpp::step {
namespace {

struct GptShape {
  const char* name;
  uint64_t hidden;
  int blocks;
};

constexpr GptShape kGptShapes[] = {{"125M", 768, 12}, {"1.3B", 2048, 24}, {"7B", 4096, 32}};
constexpr uint64_t kVocabulary = 50257;
constexpr uint64_t kContext = 2048;

Model GptModel(const GptShape& shape) {
  const uint64_t h = shape.hidden;
  Model model;
  model.name = shape.name;
  // Token and position embeddings, the final layer norm (weight and bias), the tied head.
  model.units.push_back({"embeddings", kVocabulary * h + kContext * h + 2 * h});
  const uint64_t block = (4 * h * h + 4 * h) + (8 * h * h + 5 * h) + 4 * h;
  for (int b = 0; b < shape.blocks; ++b) {
    model.units.push_back({"block" + std::to_string(b), block});
  }
  return model;
}

}  // namespace

uint64_t Model::Elements() const {
  uint64_t total = 0;
  for (const ModelUnit& unit : units) total += unit.elements;
  return total;
}

std::vector<std::string> BuiltinModelNames() {
  std::vector<std::string> names;
  for (const GptShape& shape : kGptShapes) names.emplace_back(shape.name);
  return names;
}

Result BuiltinModel(std::string_view name, Model* out) {
  for (const GptShape& shape : kGptShapes) {
    if (name == shape.name) {
      *out = GptModel(shape);
      return ncclSuccess;
    }
  }
  return ncclInvalidArgument;
}

Result LoadModelFile(const std::string& path, Model* out) {
  std::ifstream file(path);
  ZPP_CHECK_ARG(file.good(),
                "step model '%s': neither a built-in model (125M, 1.3B, 7B) nor a "
                "readable file (check --step-model)",
                path.c_str());
  Model model;
  model.name = path;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    std::string name;
    if (!(fields >> name)) continue;  // blank or comment
    long long elements = 0;
    std::string extra;
    const bool parsed = static_cast<bool>(fields >> elements) && !(fields >> extra);
    ZPP_CHECK_ARG(parsed && elements > 0, "%s:%d: expected 'name elements' with elements > 0",
                  path.c_str(), number);
    model.units.push_back({name, static_cast<uint64_t>(elements)});
  }
  ZPP_CHECK_ARG(!model.units.empty(),
                "%s: no units (a step model file holds 'name elements' lines)", path.c_str());
  *out = std::move(model);
  return ncclSuccess;
}

Result ResolveModel(const std::string& name_or_path, Model* out) {
  if (BuiltinModel(name_or_path, out) == ncclSuccess) return ncclSuccess;
  return LoadModelFile(name_or_path, out);
}

ScaledModel ScaleForSim(const Model& model, int world, uint64_t max_elements, int block) {
  ScaledModel scaled;
  const double total = static_cast<double>(model.Elements());
  scaled.factor = std::max(1.0, total / static_cast<double>(std::max<uint64_t>(max_elements, 1)));
  const uint64_t ranks = static_cast<uint64_t>(std::max(world, 1));
  const uint64_t whole = static_cast<uint64_t>(std::max(block, 1));
  uint64_t replayed = 0;
  for (const ModelUnit& unit : model.units) {
    const double shard = static_cast<double>(unit.elements) / scaled.factor / ranks;
    const uint64_t blocks = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(shard / whole)));
    scaled.shard_counts.push_back(blocks * whole);
    replayed += blocks * whole * ranks;
  }
  scaled.factor = total / static_cast<double>(replayed);
  return scaled;
}

}  // namespace zpp::step
