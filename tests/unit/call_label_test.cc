// The labels a CPU communicator gives its calls: the transport refuses to match calls whose
// signatures differ, so every difference the ranks must agree on must change the signature's
// 12 bits the tag carries, and nothing else may (issue 29, item 7).
#include "cpu_comm/call_label.h"

#include <gtest/gtest.h>

#include <set>

namespace zpp::cpu {
namespace {

constexpr uint32_t kTagBits = 0xfff;  // what the UCP tag holds of a signature

TEST(CallLabelTest, TheCollectiveAloneChangesTheSignatureInItsLowBits) {
  // Equal bytes on the wire: the collective must still tell them apart, always (not by a hash).
  const auto gather = AllGatherLabel(7, {nullptr, nullptr, 1024, ncclFloat32});
  const auto scatter = ReduceScatterLabel(7, {nullptr, nullptr, 1024, ncclFloat32});
  const auto bytes = AllGatherBytesLabel(7, 4096);
  const auto broadcast = BroadcastLabel(7, 4096, 0);
  std::set<uint32_t> kinds;
  for (const auto* label : {&gather, &scatter, &bytes, &broadcast}) {
    kinds.insert(label->signature & 7);
    EXPECT_NE(label->signature & 7, 0u) << "0 is the set-up's";
    EXPECT_EQ(label->number, 7u);
  }
  EXPECT_EQ(kinds.size(), 4u);
}

TEST(CallLabelTest, CountDtypeReductionAndRootChangeTheTaggedSignature) {
  const engine::AllGatherArgs gather{nullptr, nullptr, 1024, ncclFloat32};
  const uint32_t base = AllGatherLabel(1, gather).signature & kTagBits;
  EXPECT_NE(AllGatherLabel(1, {nullptr, nullptr, 2048, ncclFloat32}).signature & kTagBits, base);
  EXPECT_NE(AllGatherLabel(1, {nullptr, nullptr, 1024, ncclBfloat16}).signature & kTagBits, base);
  engine::ReduceScatterArgs sum{nullptr, nullptr, 1024, ncclFloat32};
  engine::ReduceScatterArgs avg = sum;
  avg.reduction = plan::Reduction::kAvg;
  EXPECT_NE(ReduceScatterLabel(1, sum).signature & kTagBits,
            ReduceScatterLabel(1, avg).signature & kTagBits);
  EXPECT_NE(BroadcastLabel(1, 64, 0).signature & kTagBits,
            BroadcastLabel(1, 64, 1).signature & kTagBits);
  EXPECT_NE(AllGatherBytesLabel(1, 64).signature & kTagBits,
            AllGatherBytesLabel(1, 65).signature & kTagBits);
}

TEST(CallLabelTest, WhatRanksMayDifferInLeavesTheSignatureAlone) {
  // Buffers, the call number (the tag has its own field) and a pre-multiplied sum's scalar, which
  // NCCL lets each rank choose.
  int a = 0, b = 0;
  engine::ReduceScatterArgs one{&a, &a, 1024, ncclFloat32, plan::Reduction::kPreMulSum, 0.5f};
  engine::ReduceScatterArgs two{&b, &b, 1024, ncclFloat32, plan::Reduction::kPreMulSum, 0.25f};
  EXPECT_EQ(ReduceScatterLabel(1, one).signature, ReduceScatterLabel(9, two).signature);
}

TEST(CallLabelTest, TheDescriptionNamesTheCallForAPerson) {
  EXPECT_EQ(AllGatherLabel(3, {nullptr, nullptr, 1024, ncclFloat32}).description,
            "all_gather of 1024 x fp32 per rank");
  EXPECT_EQ(ReduceScatterLabel(3, {nullptr, nullptr, 8, ncclBfloat16}).description,
            "reduce_scatter (sum) of 8 x bf16 per rank");
  EXPECT_EQ(BroadcastLabel(3, 64, 2).description, "broadcast of 64 bytes from rank 2");
}

}  // namespace
}  // namespace zpp::cpu
