// Step mode's inputs: the built-in GPT shapes, model files, their scaling, and mode names.
#include "step/model_shapes.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "step/mode.h"

namespace zpp::step {
namespace {

TEST(ModelShapesTest, BuiltinModelsHaveTheirNamedSize) {
  const struct {
    const char* name;
    double billions;
    size_t blocks;
  } expected[] = {{"125M", 0.125, 12}, {"1.3B", 1.3, 24}, {"7B", 6.7, 32}};
  for (const auto& e : expected) {
    Model model;
    ASSERT_EQ(BuiltinModel(e.name, &model), ncclSuccess) << e.name;
    EXPECT_EQ(model.units.size(), e.blocks + 1) << e.name;  // the embeddings, then the blocks
    EXPECT_NEAR(static_cast<double>(model.Elements()) * 1e-9, e.billions, 0.03 * e.billions)
        << e.name;
  }
  Model model;
  EXPECT_NE(BuiltinModel("13B", &model), ncclSuccess);
}

TEST(ModelShapesTest, ScalingKeepsUnitsWholeBlocksAndTheBudget) {
  Model model;
  ASSERT_EQ(BuiltinModel("7B", &model), ncclSuccess);
  const ScaledModel scaled = ScaleForSim(model, 8, uint64_t{1} << 20, 256);
  ASSERT_EQ(scaled.shard_counts.size(), model.units.size());
  uint64_t replayed = 0;
  for (size_t count : scaled.shard_counts) {
    EXPECT_EQ(count % 256, 0u);
    EXPECT_GE(count, 256u);
    replayed += count * 8;
  }
  // Rounding up to whole blocks adds at most one block per unit and rank.
  EXPECT_LE(replayed, (uint64_t{1} << 20) + model.units.size() * 8 * 256);
  EXPECT_NEAR(scaled.factor, static_cast<double>(model.Elements()) / replayed, 1e-9);
  // The embeddings stay about 5x a block in the scaled model as in the real one (shape kept).
  const double real = static_cast<double>(model.units[0].elements) / model.units[1].elements;
  const double kept = static_cast<double>(scaled.shard_counts[0]) / scaled.shard_counts[1];
  EXPECT_NEAR(kept / real, 1.0, 0.05);
}

TEST(ModelShapesTest, ModelFileIsReadAndBadLinesAreRejected) {
  const std::string path = testing::TempDir() + "zpp_model_units.txt";
  {
    std::ofstream file(path);
    file << "# a tiny model\nembed 4096\n\nblock0 8192  # attention and MLP\nblock1 8192\n";
  }
  Model model;
  ASSERT_EQ(ResolveModel(path, &model), ncclSuccess);
  ASSERT_EQ(model.units.size(), 3u);
  EXPECT_EQ(model.units[1].name, "block0");
  EXPECT_EQ(model.Elements(), 4096u + 8192u + 8192u);
  for (const char* bad : {"embed\n", "embed 0\n", "embed 12 extra\n", "embed -5\n", "# only\n"}) {
    {
      std::ofstream file(path);
      file << bad;
    }
    EXPECT_NE(LoadModelFile(path, &model), ncclSuccess) << bad;
  }
  EXPECT_NE(ResolveModel(path + ".missing", &model), ncclSuccess);
  std::remove(path.c_str());
}

TEST(ModeTest, NamesRoundTrip) {
  for (const std::string& name : StandardStepModes()) {
    plan::Settings settings;
    ASSERT_EQ(ParseMode(name, &settings), ncclSuccess) << name;
    EXPECT_EQ(ModeName(settings), name);
  }
  plan::Settings settings;
  ASSERT_EQ(ParseMode("qwz+hpz+qgz", &settings), ncclSuccess);
  EXPECT_EQ(ModeName(settings), "zero++");  // the defaults are ZeRO++'s choice
  ASSERT_EQ(ParseMode("qgz8/8", &settings), ncclSuccess);
  EXPECT_FALSE(settings.qwz);
  EXPECT_EQ(settings.qgz_bits_inter, 8);
  EXPECT_TRUE(TouchesReduceScatter(settings));
  EXPECT_FALSE(TouchesAllGather(settings));
  // Issue 29, item 9: plain is "plain"; "nccl", its old name, is still read as plain.
  ASSERT_EQ(ParseMode("nccl", &settings), ncclSuccess);
  EXPECT_EQ(ModeName(settings), "plain");
  // The compressed all-reduce: "ef" is its error feedback when qgZ is off.
  ASSERT_EQ(ParseMode("qar4+ef", &settings), ncclSuccess);
  EXPECT_TRUE(settings.qar);
  EXPECT_EQ(settings.qar_bits, 4);
  EXPECT_TRUE(settings.qar_ef);
  EXPECT_FALSE(settings.qgz_ef);
  EXPECT_TRUE(TouchesAllReduce(settings));
  EXPECT_FALSE(TouchesReduceScatter(settings));
  EXPECT_EQ(ModeName(settings), "qar4+ef");
  ASSERT_EQ(ParseMode("qar", &settings), ncclSuccess);
  EXPECT_EQ(settings.qar_bits, 8);
  EXPECT_FALSE(settings.qar_ef);
  EXPECT_EQ(ModeName(settings), "qar8");
  for (const char* bad :
       {"", "qwz2", "qgz8", "qgz8/", "hpz+", "nccl+qwz", "qwz8+foo", "qgz4/16", "qar2", "qar16"}) {
    EXPECT_NE(ParseMode(bad, &settings), ncclSuccess) << bad;
  }
}

}  // namespace
}  // namespace zpp::step
