// Bad arguments: every codec API returns ncclInvalidArgument with exactly one WARN line that
// says what was wrong, and writes nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "log/log.h"
#include "reference.h"

namespace zpp::codec {
namespace {

using ::testing::HasSubstr;
using testing::HostTensor;
using testing::PieceBuffer;

class ArgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log::SetSinkForTesting([this](std::string_view line) { lines_.emplace_back(line); });
    log::Settings settings;
    settings.level = log::Level::kInfo;  // the INFO trail may come too; one WARN only
    log::Configure(settings);
  }
  void TearDown() override {
    log::SetSinkForTesting(nullptr);
    log::Configure(log::Settings{});
  }
  // The call's result is ncclInvalidArgument and exactly one WARN holds `what`.
  void ExpectRejected(Result result, const std::string& what) {
    EXPECT_EQ(result, ncclInvalidArgument) << what;
    int warnings = 0;
    for (const std::string& line : lines_) {
      if (line.find(" ZPP WARN ") == std::string::npos) continue;
      ++warnings;
      EXPECT_THAT(line, HasSubstr(what));
    }
    EXPECT_EQ(warnings, 1) << what;
    lines_.clear();
  }
  std::vector<std::string> lines_;
};

TEST_F(ArgsTest, QuantizeRejectsBadFormatsTensorsAndPieces) {
  HostTensor input(ncclFloat32, 100);
  PieceBuffer piece(1024);
  const auto quantize = [&](const Format& format) {
    return Quantize(input.View(), format, {}, piece.Span());
  };
  ExpectRejected(quantize({5, 256, false}), "bits 5 is not 8, 4, 3 or 2");
  ExpectRejected(quantize({8, 48, false}), "block 48 is not a power of two from 32 to 4096");
  ExpectRejected(quantize({8, 16, false}), "block 16");
  ExpectRejected(quantize({4, 8192, false}), "block 8192");
  ExpectRejected(Quantize({input.data(), ncclInt32, 100}, {}, {}, piece.Span()),
                 "dtype 2 is not fp32, fp16 or bf16");
  ExpectRejected(Quantize({nullptr, ncclFloat32, 100}, {}, {}, piece.Span()),
                 "input is null with count 100");
  ExpectRejected(Quantize({static_cast<const std::byte*>(input.data()) + 2, ncclFloat32, 10}, {},
                          {}, piece.Span()),
                 "is not aligned to its 4-byte elements");
  ExpectRejected(Quantize(input.View(), {}, {}, piece.Span().first(100)),
                 "piece has 100 bytes, the format needs 128");
  ExpectRejected(Quantize(input.View(), {}, {}, piece.Span().subspan(8)), "is not 16-byte aligned");
  // Nothing was written by any of them.
  for (const std::byte byte : piece.Span()) ASSERT_EQ(byte, std::byte{0xA5});
}

TEST_F(ArgsTest, DequantizeRejectsPlacementsAndShortPieces) {
  const Format format{8, 32, false};
  PieceBuffer piece(PieceBytes(100, ncclFloat16, format));
  HostTensor output(ncclFloat16, 150);
  const PlacedPiece overrun[] = {{piece.ConstSpan(), 0}, {piece.ConstSpan(), 51}};
  ExpectRejected(Dequantize(overrun, 100, format, output.MutableView()),
                 "piece 1 placed at element 51 with 100 elements overruns the output of 150");
  const PlacedPiece short_piece[] = {{piece.ConstSpan().first(16), 0}};
  ExpectRejected(Dequantize(short_piece, 100, format, output.MutableView()),
                 "pieces[0] has 16 bytes");
  const PlacedPiece fine[] = {{piece.ConstSpan(), 0}};
  ExpectRejected(Dequantize(fine, 100, format, {output.data(), ncclFloat64, 150}),
                 "dtype 8 is not fp32, fp16 or bf16");
}

TEST_F(ArgsTest, ReductionsRejectNoPiecesBadFactorsAndSizes) {
  const Format format{4, 64, false};
  PieceBuffer piece(PieceBytes(100, ncclFloat32, format));
  const std::span<const std::byte> one[] = {piece.ConstSpan()};
  HostTensor output(ncclFloat32, 100);
  ExpectRejected(DequantizeReduce({}, 100, format, 1.0f, output.MutableView()),
                 "no pieces to reduce");
  ExpectRejected(DequantizeReduce(one, 100, format, NAN, output.MutableView()),
                 "scale_after_sum nan is not finite");
  ExpectRejected(DequantizeReduce(one, 99, format, 1.0f, output.MutableView()),
                 "output has 100 elements, the pieces 99");
  PieceBuffer out(PieceBytes(100, ncclFloat32, format));
  ExpectRejected(
      DequantizeReduceRequantize(one, 100, format, 1.0f, {8, 100, false}, {}, out.Span()),
      "block 100");
  ExpectRejected(DequantizeReduceRequantize(one, 100, format, 1.0f, {8, 64, false}, {}, out.Span()),
                 "out_piece has 80 bytes, the format needs 128");
}

TEST_F(ArgsTest, FingerprintRejectsNull) {
  const std::byte byte{1};
  ExpectRejected(Fingerprint({&byte, 1}, nullptr), "fingerprint is null");
}

}  // namespace
}  // namespace zpp::codec
