// Small drivers the CPU codec tests share: quantize a HostTensor and decode it back.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "codec/codec.h"
#include "reference.h"

namespace zpp::codec::testing {

struct RoundTrip {
  PieceBuffer piece;
  std::vector<double> output;  // the decoded tensor's exact values
};

// Quantizes `input` and dequantizes it into a tensor of `output_dtype`.
inline RoundTrip QuantizeAndBack(const HostTensor& input, const Format& format,
                                 const Rounding& rounding, ncclDataType_t output_dtype) {
  RoundTrip result{PieceBuffer(PieceBytes(input.count(), input.dtype(), format)), {}};
  EXPECT_EQ(Quantize(input.View(), format, rounding, result.piece.Span()), ncclSuccess);
  HostTensor output(output_dtype, input.count());
  output.Poison();
  const PlacedPiece placed{result.piece.ConstSpan(), 0};
  EXPECT_EQ(Dequantize({&placed, 1}, input.count(), format, output.MutableView()), ncclSuccess);
  result.output = output.Values();
  return result;
}

inline HostTensor TensorOf(ncclDataType_t dtype, std::span<const double> values,
                           size_t offset = 0) {
  HostTensor tensor(dtype, values.size(), offset);
  tensor.Fill(values);
  return tensor;
}

}  // namespace zpp::codec::testing
