/* zpp on CPU processes without NCCL: the C API of libzpp_cpu.so, which the torch.distributed
 * backend `zpp` (plugin/torch/zpp_torch) drives. One communicator per process group: its ranks
 * are processes on one or more machines, bound over UCX, running the same engine (planner, plans,
 * codecs, fence, hpZ cache), the same ZPP_* settings and the same stats as the LD_PRELOAD plugin,
 * on the sim backend (host memory). The step epoch is libzpp.so's (zppStepEpochAdvance), so
 * zpp-run's optimizer hook drives hpZ reuse here too.
 *
 * Set-up, on every rank: zppCpuCommOpen, publish zppCpuCommAddress's bytes to the others (the
 * torch backend uses torch's c10d store), then zppCpuCommConnect with every rank's address.
 * Every collective is synchronous (done when it returns) and must be called by every rank in
 * the same order. Every function returns an ncclResult_t and never throws; a peer that is gone
 * or silent for ZPP_TIMEOUT seconds gives ncclRemoteError, and every later call fails at once. */
#ifndef ZPP_ZPP_CPU_H_
#define ZPP_ZPP_CPU_H_

#include <stddef.h>

#include "zpp/zpp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zppCpuComm* zppCpuComm_t;

/* The reductions a reduce-scatter takes (NCCL's sum, avg and ncclRedOpCreatePreMulSum). */
typedef enum {
  zppCpuSum = 0,
  zppCpuAvg = 1,
  zppCpuPreMulSum = 2 /* each input multiplied by `premul`, then summed */
} zppCpuRedOp_t;

/* Step 1: rank `rank` of `nranks` opens its transport. */
ZPP_API ncclResult_t zppCpuCommOpen(int rank, int nranks, zppCpuComm_t* comm);
/* The same, with `timeout_ms` bounding every wait of the communicator when it is positive and
 * shorter than ZPP_TIMEOUT (torch's init_process_group(timeout=)). */
ZPP_API ncclResult_t zppCpuCommOpenWithTimeout(int rank, int nranks, int64_t timeout_ms,
                                               zppCpuComm_t* comm);
/* This rank's transport address: *address stays valid until the communicator is destroyed. */
ZPP_API ncclResult_t zppCpuCommAddress(zppCpuComm_t comm, const void** address, size_t* bytes);
/* Step 2, collective: every rank's address in rank order, concatenated; bytes[r] is rank r's
 * length. Then the topology exchange (ZPP_LOCAL_SIZE, ZPP_NODE_ID, hosts, racks) and the
 * configuration agreement, as the plugin does on an NCCL communicator. */
ZPP_API ncclResult_t zppCpuCommConnect(zppCpuComm_t comm, const void* addresses,
                                       const size_t* bytes);
/* Why the communicator's calls fail ("" while they work), as ncclGetLastError: which rank found
 * what (mismatched calls, a peer gone, a timeout) and the call each rank was in. Valid until the
 * next call of this function on `comm`; NULL for a NULL comm. */
ZPP_API const char* zppCpuCommGetLastError(zppCpuComm_t comm);
/* Frees the communicator; NULL is allowed. */
ZPP_API ncclResult_t zppCpuCommDestroy(zppCpuComm_t comm);

/* The grouping set-up found: nodes, ranks on this rank's node, whether hierarchical plans (hpZ,
 * qgZ) may run, and whether every rank agreed on its settings (else plain collectives only). */
ZPP_API ncclResult_t zppCpuCommTopology(zppCpuComm_t comm, int* nodes, int* local_size,
                                        int* hierarchical, int* config_agreed);

/* Through zpp's engine, with NCCL's semantics and layout. */
ZPP_API ncclResult_t zppCpuAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                     ncclDataType_t datatype, zppCpuComm_t comm);
ZPP_API ncclResult_t zppCpuReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                         ncclDataType_t datatype, zppCpuRedOp_t op, float premul,
                                         zppCpuComm_t comm);
/* fp32, fp16 or bf16; in place when sendbuff == recvbuff. Compressed with ZPP_QAR=1, else the
 * exact all-reduce (fp32 accumulation); every rank ends with the same bytes either way. */
ZPP_API ncclResult_t zppCpuAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                     ncclDataType_t datatype, zppCpuRedOp_t op, float premul,
                                     zppCpuComm_t comm);

/* Exact byte movement over all ranks, outside the engine and its stats: the pieces the torch
 * backend's other collectives (all-reduce, broadcast, barrier) are made of. */
ZPP_API ncclResult_t zppCpuAllGatherBytes(const void* sendbuff, void* recvbuff, size_t bytes,
                                          zppCpuComm_t comm);
ZPP_API ncclResult_t zppCpuBroadcastBytes(void* buff, size_t bytes, int root, zppCpuComm_t comm);

/* The engine's counters on this communicator (zppStats_t, as zppGetCommStats). sent_bytes are
 * the bytes this rank sent over each link class in the engine's calls, pass-throughs included,
 * counted exactly by the simulated cluster. */
ZPP_API ncclResult_t zppCpuCommGetStats(zppCpuComm_t comm, zppStats_t* stats);

/* hpZ's checks on this communicator, as zppHpzChecks: whether it runs hpZ, cumulative failed
 * checks and the hits' choice sum, for the step guard (read after its calls have completed). */
ZPP_API ncclResult_t zppCpuCommHpzChecks(zppCpuComm_t comm, int* enabled, uint64_t* failures,
                                         uint64_t* choices);

/* The end of an optimizer step (the torch backend's post-step hook, after the step epoch
 * advanced): with ZPP_PROGRESS=N, every N step epochs the process that is rank 0 of its largest
 * communicator prints one line of its counters on stderr. Once per epoch however often called. */
ZPP_API ncclResult_t zppCpuStepEnded(void);

#ifdef __cplusplus
}
#endif

#endif /* ZPP_ZPP_CPU_H_ */
