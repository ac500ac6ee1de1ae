#include "codec/validate.h"

#include <cmath>

#include "zpp/format.h"

namespace zpp::codec {

Result CheckFormat(const char* api, ncclDataType_t dtype, const Format& format) {
  ZPP_CHECK_ARG(dtype == ncclFloat32 || dtype == ncclFloat16 || dtype == ncclBfloat16,
                "%s: dtype %d is not fp32, fp16 or bf16" ZPP_BUG_REPORT, api,
                static_cast<int>(dtype));
  ZPP_CHECK_ARG(zppBitsValid(format.bits), "%s: bits %d is not 8, 4, 3 or 2" ZPP_BUG_REPORT, api,
                format.bits);
  ZPP_CHECK_ARG(zppFormatValid(dtype, format.bits, format.block),
                "%s: block %d is not a power of two from %d to %d" ZPP_BUG_REPORT, api,
                format.block, ZPP_BLOCK_MIN, ZPP_BLOCK_MAX);
  return ncclSuccess;
}

Result CheckTensor(const char* api, const char* name, const void* data, ncclDataType_t dtype,
                   size_t count) {
  ZPP_CHECK_ARG(dtype == ncclFloat32 || dtype == ncclFloat16 || dtype == ncclBfloat16,
                "%s: %s dtype %d is not fp32, fp16 or bf16" ZPP_BUG_REPORT, api, name,
                static_cast<int>(dtype));
  ZPP_CHECK_ARG(count <= kMaxCount,
                "%s: %s count %zu is over the limit %llu; the call fails with ncclInvalidArgument "
                "(split it into smaller collectives)",
                api, name, count, static_cast<unsigned long long>(kMaxCount));
  ZPP_CHECK_ARG(data != nullptr || count == 0, "%s: %s is null with count %zu" ZPP_BUG_REPORT, api,
                name, count);
  // The device loads elements as their own type, which needs natural alignment.
  const size_t element_bytes = dtype == ncclFloat32 ? 4 : 2;
  ZPP_CHECK_ARG(reinterpret_cast<uintptr_t>(data) % element_bytes == 0,
                "%s: %s at %p is not aligned to its %zu-byte elements; the call fails with "
                "ncclInvalidArgument (pass buffers aligned to their element size)",
                api, name, data, element_bytes);
  return ncclSuccess;
}

Result CheckPiece(const char* api, const char* name, const void* data, size_t bytes,
                  uint64_t needed) {
  ZPP_CHECK_ARG(data != nullptr || needed == 0, "%s: %s is null" ZPP_BUG_REPORT, api, name);
  ZPP_CHECK_ARG(reinterpret_cast<uintptr_t>(data) % ZPP_PIECE_ALIGN == 0,
                "%s: %s at %p is not %d-byte aligned" ZPP_BUG_REPORT, api, name, data,
                ZPP_PIECE_ALIGN);
  ZPP_CHECK_ARG(bytes >= needed, "%s: %s has %zu bytes, the format needs %llu" ZPP_BUG_REPORT, api,
                name, bytes, static_cast<unsigned long long>(needed));
  return ncclSuccess;
}

Result CheckCount(const char* api, size_t count) {
  ZPP_CHECK_ARG(count <= kMaxCount,
                "%s: count %zu is over the limit %llu; the call fails with ncclInvalidArgument "
                "(split it into smaller collectives)",
                api, count, static_cast<unsigned long long>(kMaxCount));
  return ncclSuccess;
}

Result CheckPlacement(const char* api, size_t index, size_t offset, size_t count, size_t total) {
  ZPP_CHECK_ARG(offset <= total && count <= total - offset,
                "%s: piece %zu placed at element %zu with %zu elements overruns the output of "
                "%zu" ZPP_BUG_REPORT,
                api, index, offset, count, total);
  return ncclSuccess;
}

Result CheckReduction(const char* api, size_t pieces, float scale_after_sum) {
  ZPP_CHECK_ARG(pieces >= 1, "%s: no pieces to reduce" ZPP_BUG_REPORT, api);
  ZPP_CHECK_ARG(std::isfinite(scale_after_sum),
                "%s: scale_after_sum %g is not finite; the call fails with ncclInvalidArgument (is "
                "the factor of ncclRedOpCreatePreMulSum or zppCpuPreMulSum inf or NaN?)",
                api, static_cast<double>(scale_after_sum));
  return ncclSuccess;
}

}  // namespace zpp::codec
