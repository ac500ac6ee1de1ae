// The fingerprint: a change of any bit, an exchange of two words or one more trailing zero byte
// changes it; it does not depend on the buffer's address; and the sum of per-word terms in any
// order and split (what the kernel's atomics do) equals the serial loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "codec/codec.h"
#include "kernels/math/fingerprint_math.h"

namespace zpp::codec {
namespace {

std::vector<std::byte> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::vector<std::byte> bytes(n);
  for (std::byte& byte : bytes) byte = static_cast<std::byte>(generator());
  return bytes;
}

uint64_t Of(std::span<const std::byte> bytes) {
  uint64_t fingerprint = 0;
  EXPECT_EQ(Fingerprint(bytes, &fingerprint), ncclSuccess);
  return fingerprint;
}

TEST(FingerprintTest, EveryBitFlipChangesIt) {
  std::vector<std::byte> bytes = RandomBytes(77, 1);
  const uint64_t original = Of(bytes);
  std::set<uint64_t> seen = {original};
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    bytes[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    EXPECT_TRUE(seen.insert(Of(bytes)).second) << "bit " << bit;
    bytes[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
  }
  EXPECT_EQ(Of(bytes), original);
}

TEST(FingerprintTest, SwappedWordsAndTrailingZerosChangeIt) {
  std::vector<std::byte> bytes = RandomBytes(64, 2);
  const uint64_t original = Of(bytes);
  std::vector<std::byte> swapped = bytes;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 24);
  EXPECT_NE(Of(swapped), original);
  std::vector<std::byte> longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_NE(Of(longer), original);
  EXPECT_NE(Of({}), Of(std::vector<std::byte>(8, std::byte{0})));
}

TEST(FingerprintTest, IndependentOfAddress) {
  const std::vector<std::byte> bytes = RandomBytes(1001, 3);
  std::vector<std::byte> shifted(bytes.size() + 3);
  std::copy(bytes.begin(), bytes.end(), shifted.begin() + 3);
  EXPECT_EQ(Of({shifted.data() + 3, bytes.size()}), Of(bytes));
}

TEST(FingerprintTest, AnyOrderOfTermsGivesTheSerialValue) {
  const std::vector<std::byte> bytes = RandomBytes(4099, 4);
  const size_t words = (bytes.size() + 7) / 8;
  std::vector<uint64_t> terms;
  for (size_t i = 0; i < words; ++i) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + 8 * i, std::min<size_t>(8, bytes.size() - 8 * i));
    terms.push_back(FingerprintWord(i, word));
  }
  terms.push_back(FingerprintLength(bytes.size()));
  std::mt19937_64 generator(5);
  for (int trial = 0; trial < 10; ++trial) {
    std::shuffle(terms.begin(), terms.end(), generator);
    uint64_t sum = 0;
    // Setting bit 0 at any point of the sum (the kernel's atomic OR) gives the same value: every
    // term is even.
    const size_t or_at = generator() % (terms.size() + 1);
    for (size_t i = 0; i < terms.size(); ++i) {
      if (i == or_at) sum |= kFingerprintVaries;
      EXPECT_EQ(terms[i] & kFingerprintVaries, 0u);
      sum += terms[i];
    }
    if (or_at == terms.size()) sum |= kFingerprintVaries;
    EXPECT_EQ(sum, Of(bytes));
  }
}

// Bit 0 says whether the buffer varies: a constant tensor of any element size (its first 8-byte
// word repeated, the last word's valid bytes included) does not; one byte off anywhere does.
TEST(FingerprintTest, SaysWhetherTheBufferVaries) {
  const auto varies = [](std::span<const std::byte> bytes) {
    return FingerprintMayReuse(Of(bytes));
  };
  for (const size_t element : {1, 2, 4, 8}) {
    for (const size_t count : {1, 3, 64, 1001}) {
      std::vector<std::byte> bytes(element * count);
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::byte(0x3f + i % element);
      EXPECT_FALSE(varies(bytes)) << element << " x " << count;
      if (bytes.size() <= 8) continue;  // at most one word: nothing to differ from
      for (const size_t at : {size_t{0}, size_t{9}, bytes.size() - 1}) {
        bytes[at] ^= std::byte{1};
        EXPECT_TRUE(varies(bytes)) << element << " x " << count << " at " << at;
        bytes[at] ^= std::byte{1};
      }
    }
  }
  EXPECT_FALSE(varies({}));
  EXPECT_FALSE(varies(std::vector<std::byte>(4096, std::byte{0})));
  EXPECT_TRUE(varies(RandomBytes(4099, 6)));
}

}  // namespace
}  // namespace zpp::codec
