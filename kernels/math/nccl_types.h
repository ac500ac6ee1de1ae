// Facts about NCCL's types that zpp needs without linking NCCL, on the host and the device.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "kernels/math/hd.h"

namespace zpp {

// Bytes of one element of `dtype`; 0 for a value that is not an ncclDataType_t.
ZPP_HD constexpr size_t NcclTypeBytes(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

}  // namespace zpp
