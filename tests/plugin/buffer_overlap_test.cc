// Which input/output pairs the cuda_nccl communicator stages before running a plan: those that
// overlap other than in NCCL's in-place layouts.
#include "cuda_nccl/buffer_overlap.h"

#include <gtest/gtest.h>

#include <vector>

namespace zpp {
namespace {

TEST(BufferOverlapTest, SeparateBuffersAndInPlaceLayoutsAreNotStaged) {
  std::vector<std::byte> a(4096), b(4096);
  EXPECT_FALSE(OverlapsNotInPlace(a.data(), 256, b.data(), 1024, 512));
  // In place, rank 2 of 4: an all-gather sends from its piece of the output, a reduce-scatter
  // receives into its chunk of the input (the small buffer at the rank's place in the large).
  EXPECT_FALSE(OverlapsNotInPlace(a.data() + 512, 256, a.data(), 1024, 512));
  // Adjacent, not overlapping.
  EXPECT_FALSE(OverlapsNotInPlace(a.data() + 1024, 256, a.data(), 1024, 512));
}

TEST(BufferOverlapTest, OtherOverlapsAreStaged) {
  std::vector<std::byte> a(4096);
  // The input at another rank's place, or straddling pieces, or the same start off rank 0.
  EXPECT_TRUE(OverlapsNotInPlace(a.data() + 256, 256, a.data(), 1024, 512));
  EXPECT_TRUE(OverlapsNotInPlace(a.data() + 600, 256, a.data(), 1024, 512));
  EXPECT_TRUE(OverlapsNotInPlace(a.data(), 256, a.data(), 1024, 512));
  EXPECT_TRUE(OverlapsNotInPlace(a.data() + 1000, 256, a.data(), 1024, 512));
  // The large buffer starting inside the small one is never NCCL's layout.
  EXPECT_TRUE(OverlapsNotInPlace(a.data(), 1024, a.data() + 512, 4096 - 512, 512));
}

}  // namespace
}  // namespace zpp
