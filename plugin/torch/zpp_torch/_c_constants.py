"""The C enumerations this package hands to libzpp_cpu.so, under their C names (nccl.h,
include/zpp/zpp.h, include/zpp/zpp_cpu.h). No import: tools/check_python_constants.py loads this
file alone and compiles every name and value here against the headers."""

# ncclDataType_t
ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64 = 0, 1, 2, 3, 4, 5
ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16 = 6, 7, 8, 9

# ncclResult_t
ncclSuccess, ncclUnhandledCudaError, ncclSystemError, ncclInternalError = 0, 1, 2, 3
ncclInvalidArgument, ncclInvalidUsage, ncclRemoteError, ncclInProgress = 4, 5, 6, 7

# zppCpuRedOp_t
zppCpuSum, zppCpuAvg, zppCpuPreMulSum = 0, 1, 2

# zppTrainingPass_t
zppPassUnknown, zppPassForward, zppPassBackward = 0, 1, 2
