/* zpp: ZeRO++ collectives at the NCCL layer. The public C API of libzpp.so.
 *
 * Every function returns an ncclResult_t and never throws; a bad argument gives
 * ncclInvalidArgument and one WARN line. Thread-safe. */
#ifndef ZPP_ZPP_H_
#define ZPP_ZPP_H_

#include <nccl.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZPP_MAJOR 0
#define ZPP_MINOR 1
#define ZPP_PATCH 0
#define ZPP_VERSION(X, Y, Z) ((X)*10000 + (Y)*100 + (Z))
#define ZPP_VERSION_CODE ZPP_VERSION(ZPP_MAJOR, ZPP_MINOR, ZPP_PATCH)

#if defined(__GNUC__)
#define ZPP_API __attribute__((visibility("default")))
#else
#define ZPP_API
#endif

/* The version of the loaded libzpp.so, as ZPP_VERSION_CODE. */
ZPP_API ncclResult_t zppGetVersion(int* version);

/* What zpp did with a call. */
typedef enum {
  zppPathPassThrough = 0, /* forwarded to NCCL unchanged */
  zppPathQwz = 1,         /* quantized weight all-gather */
  zppPathHpz = 2,         /* hierarchical all-gather (hits and misses) */
  zppPathQgz = 3,         /* quantized reduce-scatter */
  zppPathQar = 4,         /* compressed hierarchical all-reduce (ZPP_QAR) */
  zppNumPaths = 5
} zppPath_t;

/* Why a call was passed through to NCCL. */
typedef enum {
  zppReasonDisabled = 0,       /* no technique is enabled for this operation */
  zppReasonDtype = 1,          /* not fp32, fp16 or bf16 */
  zppReasonRedOp = 2,          /* not sum, avg or a pre-multiplied sum */
  zppReasonSmall = 3,          /* under ZPP_MIN_BYTES */
  zppReasonOneRank = 4,        /* communicator of one rank */
  zppReasonTopology = 5,       /* uneven or interleaved nodes, or one rank per node: no
                                * hierarchical plan for a technique that needs one */
  zppReasonConfigMismatch = 6, /* ranks disagree on their zpp settings */
  zppReasonNonblocking = 7,    /* nonblocking communicator */
  zppReasonInternal = 8,       /* zpp could not prepare the call; NCCL ran it */
  zppReasonCapture = 9,        /* the stream is capturing a CUDA graph */
  zppReasonUnavailable = 10,   /* zpp is not set up on this communicator (no GPU backend, or
                                  set-up failed; the log says which) */
  zppReasonInvalidComm = 11,   /* a communicator zpp did not see created */
  zppReasonInvalidArgs = 12,   /* NULL buffers, unknown dtype or op: NCCL reports its error */
  zppReasonPool = 13,          /* its staging does not fit the memory reserved at set-up
                                  (ZPP_POOL_MB), on every rank alike */
  zppReasonTuned = 14,         /* ZPP_TUNE=auto: NCCL is faster for this size on these links */
  zppReasonOneNode = 15,       /* a communicator inside one node (HSDP's shard groups, one
                                * machine): nothing crosses a node, nothing to save there
                                * (ZPP_LOSSY_ONE_NODE runs qwZ and qgZ anyway) */
  zppNumReasons = 16
} zppPassThroughReason_t;

/* The link a byte crossed. */
typedef enum {
  zppLinkIntraNode = 0,
  zppLinkInterNode = 1, /* between nodes of one rack */
  zppLinkInterRack = 2,
  zppNumLinks = 3
} zppLink_t;

/* A snapshot of the process-wide counters; every field counts since the library was loaded. */
typedef struct {
  uint64_t calls[zppNumPaths];
  uint64_t input_bytes[zppNumPaths];
  uint64_t passthrough[zppNumReasons];
  uint64_t sent_bytes[zppNumLinks];
  uint64_t hpz_hits;
  uint64_t hpz_misses;
  uint64_t hpz_verify_failures;
  uint64_t step_epoch;
  /* Device work zpp's plans enqueued, per path: kernels and copies (codec, fingerprint, copy),
   * and collectives on zpp's communicators. Per call it does not grow with the number of ranks,
   * nodes or racks: the codec is batched, one kernel per plan stage. */
  uint64_t kernel_launches[zppNumPaths];
  uint64_t collective_launches[zppNumPaths];
  /* The most bytes of hpZ secondary partitions kept at once (ZPP_HPZ_MAX_MB bounds it): per
   * communicator, or in the process view the largest any one communicator kept. */
  uint64_t hpz_kept_bytes_peak;
  /* ZPP_TUNE=auto, per path, over the calls the tuner planned: the cost model's time and the
   * time the call took (the CPU backend's wall time; 0 on GPUs, where zpp never waits for the
   * device on the collective path), in microseconds. */
  uint64_t predicted_us[zppNumPaths];
  uint64_t measured_us[zppNumPaths];
  /* Times a collective call waited on the host for the device: hpZ reads the
   * previous epoch's record once per step epoch per communicator (an event that completed long
   * before, in a training step). Nothing else on the collective path waits, and a call made
   * while its stream captures a CUDA graph passes through, so a graph never holds one. */
  uint64_t host_waits;
  /* What plain NCCL's ring would have sent off this rank's node for the same calls (the
   * planner's model, zpp's plans and pass-throughs alike): sent_bytes' inter-node and inter-rack
   * bytes against it are what zpp saved. */
  uint64_t plain_off_node_bytes;
  /* ZPP_QGZ_EF and ZPP_QAR_EF: reduce-scatters and all-reduces whose inter-node stage kept its
   * residual for the next step, and those that ran without one (past ZPP_EF_MAX_MB, or the pool
   * had no room). */
  uint64_t qgz_ef_calls;
  uint64_t qgz_ef_without;
  /* ZPP_QWZ_DELTA: weight all-gathers whose inter-node stage sent a delta against the kept
   * reference, and those that sent in full (no reference yet or kept, a changed pattern, the
   * refresh, or after a verification failure). */
  uint64_t qwz_delta_calls;
  uint64_t qwz_delta_full;
  /* Bytes zpp's own control traffic sent over each link, outside the calls it was given and so
   * outside sent_bytes: the ranks' agreements at set-up and at step epochs, and ZPP_TUNE=auto's
   * link calibration (its all-gathers, up to 16 MiB a rank). Counted by the CPU backend, exactly,
   * from the topology's discovery on; 0 on GPUs. */
  uint64_t control_sent_bytes[zppNumLinks];
  /* Optimizer steps the step guard skipped on every rank because an hpZ check failed in them
   * (zppHpzStepSkipped): process-wide. */
  uint64_t hpz_skipped_steps;
} zppStats_t;

ZPP_API ncclResult_t zppGetStats(zppStats_t* stats);

/* The same counters for one communicator only (step_epoch is the process's). A communicator
 * zpp did not see created, or one already destroyed, gives ncclInvalidArgument. */
ZPP_API ncclResult_t zppGetCommStats(ncclComm_t comm, zppStats_t* stats);

/* The name of a pass-through reason, a zppPassThroughReason_t ("small", "dtype", ...). */
ZPP_API ncclResult_t zppGetPassThroughReasonName(int reason, const char** name);

/* Ends a training step: the weights may change now, so hpZ may not reuse a secondary partition
 * filled before this call. zpp-run calls it from an optimizer post-step hook. Returns the new
 * epoch in *epoch when epoch is not NULL. */
ZPP_API ncclResult_t zppStepEpochAdvance(uint64_t* epoch);

/* The current step epoch (0 until the first advance). */
ZPP_API ncclResult_t zppGetStepEpoch(uint64_t* epoch);

/* Which pass of a training step the calling thread's all-gathers belong to. hpZ pairs a
 * backward gather with a kept forward fill of the same (count, dtype) in the same step, and
 * reuses nothing in an unknown pass. */
typedef enum {
  zppPassUnknown = 0, /* no hint: a full hierarchical gather, never kept nor reused */
  zppPassForward = 1,
  zppPassBackward = 2
} zppTrainingPass_t;

/* Sets the calling thread's pass for its following all-gathers (zppPassUnknown clears it).
 * Without a hint, a thread PyTorch's autograd engine runs a GPU backward on counts as
 * backward and any other as forward; the zpp torch backend sets it per call. */
ZPP_API ncclResult_t zppSetTrainingPass(int pass);
/* The calling thread's pass as the all-gathers see it (the hint, else the guess above). */
ZPP_API ncclResult_t zppGetTrainingPass(int* pass);

/* hpZ's checks so far over every live communicator of this library: *failures, hits whose
 * shard matched no kept fill (their partitions were sent as NaN); *choices, the sum of the hits'
 * choices. Cumulative; the device writes them into host memory, so read them after the step's
 * device work has completed. *enabled: some communicator runs hpZ (which follows the settings
 * every rank agreed on, never one rank's alone). */
ZPP_API ncclResult_t zppHpzChecks(int* enabled, uint64_t* failures, uint64_t* choices);

/* The step guard skipped optimizer step `step` (the epoch it ran in) on every rank because
 * `failures` hpZ checks failed in it, or the ranks' choices differed: counted in
 * hpz_skipped_steps, with a WARN. */
ZPP_API ncclResult_t zppHpzStepSkipped(uint64_t step, uint64_t failures);

#ifdef __cplusplus
}
#endif

#endif /* ZPP_ZPP_H_ */
