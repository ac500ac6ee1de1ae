"""The torch.distributed backend `zpp` (CPU tensors) over libzpp_cpu.so.

Every collective zpp runs itself is checked in the calling thread (a bad argument raises right
there) and then runs on the communicator's one worker thread, in the order the calls were made,
as NCCL runs a communicator's calls in stream order: the ranks call in the same order, so they
meet in the same order, and the caller gets a Work that completes when its collective has (a
failure is raised by wait(), naming the collective). Like gloo's, this lets DDP's bucket
all-reduces overlap the rest of the backward pass (ctypes releases the GIL). Every communicator
is drained before an optimizer step, so no collective of one step runs in the next step epoch.
torch 2.15 calls a Python backend's all_gather_single and reduce_scatter_single (FSDP2), and
older torch _allgather_base and _reduce_scatter_base: both names are here.

What zpp does not run (gather, scatter, reduce, all-to-all, point-to-point, reduce-scatters of
integers or with min/max/product) goes to an inner gloo process group over the same ranks, as
the LD_PRELOAD plugin passes every other NCCL call to NCCL: a script that ran on gloo runs
whole on `zpp` (checkpointing, split_group, batch_isend_irecv). The choice depends only on the
call's kind, dtype and op, the same on every rank.
"""
import atexit
import collections
import ctypes
import functools
import queue
import threading
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend
from torch._C._distributed_c10d import PrefixStore, ProcessGroupGloo, ReduceOp, Work
from torch.futures import Future

from . import _c_constants as C
from . import epoch
from ._library import LIB, ZppError, check
from ._stats import Stats, reason_names

BACKEND_NAME = "zpp"

# torch dtype -> ncclDataType_t. Others are gathered as bytes (exact) and cannot be reduced.
_NCCL_DTYPES = {
    torch.int8: C.ncclInt8, torch.uint8: C.ncclUint8, torch.int32: C.ncclInt32,
    torch.uint32: C.ncclUint32, torch.int64: C.ncclInt64, torch.uint64: C.ncclUint64,
    torch.float16: C.ncclFloat16, torch.float32: C.ncclFloat32, torch.float64: C.ncclFloat64,
    torch.bfloat16: C.ncclBfloat16,
}
# What zpp's reduce-scatter reduces (the engine sums in fp32).
_REDUCE_SCATTER_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

_comms = []  # every backend made: kept to the end of the process, and closed at exit


@atexit.register
def _close_all():
    """At exit, before the interpreter's finalization, while the workers can still run: each
    stops after what was submitted to it, then its communicator is destroyed. (Left to
    finalization, a worker thread is stopped where it stands.)"""
    for backend in list(_comms):
        backend._close()


# hpZ pairs a backward pass's all-gather with its step's forward fill (zppTrainingPass_t).
_LIBZPP = epoch.libzpp()
_LIBZPP.zppSetTrainingPass.argtypes = [ctypes.c_int]
_LIBZPP.zppSetTrainingPass.restype = ctypes.c_int


def _training_pass():
    """Backward while autograd's engine runs a backward on this thread (FSDP2's and DeepSpeed's
    backward gathers come from its hooks), else forward."""
    return (C.zppPassBackward if torch._C._current_graph_task_id() != -1
            else C.zppPassForward)


@functools.cache
def _reason_names():
    return reason_names(epoch.libzpp())


class _FutureWork(Work):
    """A Work that completes with its Future, and whose wait() raises the collective's failure
    (c10d's work from a future returns True from wait() whatever the future holds)."""

    def __init__(self):
        super().__init__()
        self._future = Future()
        self._error = None  # the collective's own exception (ZppError), for wait() to raise

    def fail(self, error):
        self._error = error
        # get_future()'s users (DDP's reducer) see it as torch sees any failure: a RuntimeError.
        self._future.set_exception(RuntimeError(f"{type(error).__name__}: {error}"))

    def wait(self, timeout=None):
        try:
            self._future.wait()
        except Exception:
            if self._error is not None:
                raise self._error from None  # as a synchronous call would have raised it
            raise
        return True

    def is_completed(self):
        return self._future.done()

    def get_future(self):
        return self._future


class _InOrderWorker:
    """Runs a communicator's collectives one at a time, in the order they were submitted, on one
    thread of its own; each submission's Future completes when it has run."""

    def __init__(self, name):
        self._queue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, run, result):
        work = _FutureWork()
        self._queue.put((run, result, work))
        return work

    def drain(self):
        """Waits until everything submitted so far has run (its failures stay with its Work)."""
        done = threading.Event()
        self._queue.put((done.set, None, None))
        done.wait()

    def close(self):
        self._queue.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self):
        while (item := self._queue.get()) is not None:
            run, result, work = item
            try:
                run()
            except BaseException as error:  # noqa: BLE001 (handed to the caller's wait())
                if work is not None:
                    work.fail(error)
                continue
            if work is not None:
                work.get_future().set_result(result)


def _op_name(op):
    return str(getattr(op, "op", op)).replace("RedOpType.", "ReduceOp.")


def _premul_factor(op):
    factor = op.factor
    if isinstance(factor, torch.Tensor):
        factor = factor.item()  # a CPU scalar: read now, as NCCL reads a device scalar
    return float(factor)


def _engine_reduces(dtype, kind):
    """Whether zpp's engine reduces this: sums, averages and pre-multiplied sums of floats."""
    return dtype in _REDUCE_SCATTER_DTYPES and kind in (
        ReduceOp.RedOpType.SUM, ReduceOp.RedOpType.AVG, ReduceOp.RedOpType.PREMUL_SUM)


def _zpp_op(op, kind):
    """zpp's reduction code and pre-multiplier for a SUM, AVG or PREMUL_SUM."""
    if kind == ReduceOp.RedOpType.SUM:
        return C.zppCpuSum, 1.0
    if kind == ReduceOp.RedOpType.AVG:
        return C.zppCpuAvg, 1.0
    return C.zppCpuPreMulSum, _premul_factor(op)


def _contiguous_target(output):
    """Where a collective writes: `output` itself, or a contiguous buffer copied into it after."""
    if output.is_contiguous():
        return output
    return torch.empty_like(output, memory_format=torch.contiguous_format)


def _delegated(name, gloo_name=None):
    """A collective the inner gloo group runs, counted by name."""

    def call(self, *args):
        self._delegated_calls[name] += 1
        return getattr(self._gloo, gloo_name or name)(*args)

    call.__name__ = name
    return call


def _check_cpu(what, *tensors):
    for tensor in tensors:
        if tensor.device.type != "cpu":
            raise ValueError(f"zpp backend: {what} got a tensor on {tensor.device}; "
                             "zpp's torch backend takes CPU tensors (on GPUs, preload libzpp.so "
                             "under NCCL)")


class ZppBackend(_C10dBackend):
    """One communicator of the zpp engine per process group."""

    _live = weakref.WeakSet()  # every communicator of the process, for process_stats()

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        ZppBackend._live.add(self)
        self._rank = rank
        self._size = size
        self._timeout = timeout
        self._comm = ctypes.c_void_p()
        # torch's init_process_group(timeout=) bounds zpp's waits too, when shorter than
        # ZPP_TIMEOUT: a silent peer then fails the collective when the user said it should.
        timeout_ms = int(timeout.total_seconds() * 1000) if timeout is not None else 0
        # torch names a group made again after destroy_process_group() as the one it replaces
        # (a subgroup of another size may take that name), and torchrun's agent keeps one store
        # for the whole job: the keys of the name's earlier set-ups are still there. Each set-up
        # takes the next generation of its name and size, counted before anything can fail;
        # every rank joins one before any rank can start the next (a set-up needs every rank's
        # address).
        prefix = f"zpp/{size}/"
        generation = (store.add(prefix + "joined", 1) - 1) // size
        check(LIB.zppCpuCommOpenWithTimeout(rank, size, timeout_ms, ctypes.byref(self._comm)),
              "communicator set-up")
        try:
            self._connect(store, timeout, f"{prefix}{generation}/address/")
            # Everything else goes to gloo over the same ranks, bootstrapped through its own
            # prefix of the group's store.
            self._gloo = ProcessGroupGloo(PrefixStore(f"zpp-gloo/{size}/{generation}/", store),
                                          rank, size, timeout)
        except BaseException:
            LIB.zppCpuCommDestroy(self._comm)
            self._comm = None
            raise
        # Collectives zpp's engine does not take (exact here), by name: what the stats cannot show.
        self._exact_calls = collections.Counter()
        self._delegated_calls = collections.Counter()
        self._worker = _InOrderWorker(f"zpp-comm-r{rank}")
        _comms.append(self)
        epoch.install_step_hook(drain=ZppBackend.drain_all, hpz_checks=ZppBackend.hpz_checks)

    def _connect(self, store, timeout, key):
        # Bootstrap through the c10d store torch hands us (a prefix store per group): every rank
        # publishes its UCP worker address under `key`, then reads everyone's.
        address, length = ctypes.c_void_p(), ctypes.c_size_t()
        check(LIB.zppCpuCommAddress(self._comm, ctypes.byref(address), ctypes.byref(length)),
              "communicator set-up")
        store.set(f"{key}{self._rank}", ctypes.string_at(address, length.value))
        store.wait([f"{key}{r}" for r in range(self._size)], timeout)
        addresses = [store.get(f"{key}{r}") for r in range(self._size)]
        lengths = (ctypes.c_size_t * self._size)(*[len(a) for a in addresses])
        check(LIB.zppCpuCommConnect(self._comm, b"".join(addresses), lengths),
              "communicator set-up")

    def __del__(self):
        self._close()

    def _close(self):
        worker = getattr(self, "_worker", None)
        if worker is not None:
            worker.close()  # after what was submitted: the communicator outlives its calls
            self._worker = None
        comm = getattr(self, "_comm", None)
        if comm is not None:
            LIB.zppCpuCommDestroy(comm)
            self._comm = None

    def _submit(self, run, result):
        """A Work that completes when `run` has run on this communicator's worker."""
        return self._worker.submit(run, result)

    def drain(self):
        self._worker.drain()

    @staticmethod
    def drain_all():
        """Waits for every communicator's submitted collectives (before an optimizer step)."""
        for backend in list(ZppBackend._live):
            if getattr(backend, "_worker", None) is not None:
                backend.drain()

    @staticmethod
    def hpz_checks():
        """hpZ's (enabled, failures): whether some communicator runs hpZ, and its cumulative
        failed checks over every communicator, once their submitted collectives have run
        (zppCpuCommHpzChecks): for hpZ's step guard."""
        ZppBackend.drain_all()
        enabled, failures = False, 0
        for backend in list(ZppBackend._live):
            if getattr(backend, "_comm", None) is None:
                continue
            runs = ctypes.c_int(0)
            comm_failures, comm_choices = ctypes.c_uint64(0), ctypes.c_uint64(0)
            check(LIB.zppCpuCommHpzChecks(backend._comm, ctypes.byref(runs),
                                          ctypes.byref(comm_failures), ctypes.byref(comm_choices)),
                  "hpZ checks")
            enabled |= bool(runs.value)
            failures += comm_failures.value
        return enabled, failures

    # ---- what the backend is ----------------------------------------------------------------

    def getBackendName(self):  # noqa: N802 (torch's name)
        return BACKEND_NAME

    # torch 2.15's Python-backend trampoline reads these through Python attribute lookup, which
    # without an override here recurses into itself (RecursionError in split_group,
    # batch_isend_irecv): every one is answered here.
    @property
    def options(self):
        return _C10dBackend.Options(BACKEND_NAME, self._timeout)

    @property
    def supports_splitting(self):
        return True

    @property
    def supports_coalescing(self):  # batch_isend_irecv then issues its operations one by one
        return False

    @property
    def supports_time_estimate(self):
        return False

    @property
    def supports_shrinking(self):
        return False

    @property
    def supports_reconfigure(self):
        return False

    @property
    def supports_window(self):
        return False

    def split(self, store, ranks, opts):
        """split_group: a new zpp communicator (and inner gloo group) on `ranks`, ranks of this
        group; its members bootstrap through the store torch prefixed for the new group."""
        if self._rank not in ranks:
            return None
        return ZppBackend(store, list(ranks).index(self._rank), len(ranks), self._timeout)

    def stats(self):
        """This communicator's engine counters (zppStats_t as a dict), and under `exact_ops` the
        calls of the collectives the engine does not take (all_reduce, broadcast, barrier); under
        `delegated_ops` those the inner gloo group ran (their bytes are not in the counters)."""
        raw = Stats()
        check(LIB.zppCpuCommGetStats(self._comm, ctypes.byref(raw)), "stats")
        return dict(raw.as_dict(_reason_names()), exact_ops=dict(self._exact_calls),
                    delegated_ops=dict(self._delegated_calls))

    def topology(self):
        values = [ctypes.c_int() for _ in range(4)]
        check(LIB.zppCpuCommTopology(self._comm, *[ctypes.byref(v) for v in values]), "topology")
        nodes, local_size, hierarchical, agreed = (v.value for v in values)
        return {"nodes": nodes, "local_size": local_size, "hierarchical": bool(hierarchical),
                "config_agreed": bool(agreed)}

    # ---- through the engine -----------------------------------------------------------------

    def _all_gather_flat(self, output, input_, what):
        _check_cpu(what, output, input_)
        if output.dtype != input_.dtype:
            raise TypeError(f"zpp backend: {what}: output {output.dtype} and input "
                            f"{input_.dtype} differ")
        if output.numel() != input_.numel() * self._size:
            raise ValueError(f"zpp backend: {what}: output has {output.numel()} elements, "
                             f"expected {self._size} x {input_.numel()}")
        source, target = input_.contiguous(), _contiguous_target(output)
        dtype = _NCCL_DTYPES.get(source.dtype)
        count = source.numel()
        if dtype is None:  # gathered as bytes: exact for any dtype
            dtype, count = C.ncclUint8, source.numel() * source.element_size()
        training_pass = _training_pass()  # as the issuing thread sees it; the worker runs it

        def run():
            if count:
                _LIBZPP.zppSetTrainingPass(training_pass)
                check(LIB.zppCpuAllGather(source.data_ptr(), target.data_ptr(), count, dtype,
                                          self._comm), what, self._comm)
            if target is not output:
                output.copy_(target)

        return run

    def all_gather_single(self, output, input_, opts=None):
        return self._submit(self._all_gather_flat(output, input_, "all_gather_single"), [output])

    _allgather_base = all_gather_single

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        runs = [self._all_gather_flat(output, input_, "allgather_into_tensor_coalesced")
                for output, input_ in zip(outputs, inputs, strict=True)]
        return self._submit(lambda: [run() for run in runs], outputs)

    all_gather_single_coalesced = allgather_into_tensor_coalesced

    def allgather(self, output_lists, inputs, opts=None):
        if len(inputs) != 1 or len(output_lists) != 1:
            raise ValueError("zpp backend: allgather takes one input tensor per process")
        input_, outputs = inputs[0], output_lists[0]
        if len(outputs) != self._size:
            raise ValueError(f"zpp backend: allgather: {len(outputs)} outputs for "
                             f"{self._size} ranks")
        for output in outputs:
            if output.shape != input_.shape or output.dtype != input_.dtype:
                raise ValueError("zpp backend: allgather: every output must have the input's "
                                 "shape and dtype")
        flat = torch.empty((self._size,) + tuple(input_.shape), dtype=input_.dtype)
        gather = self._all_gather_flat(flat, input_, "allgather")

        def run():
            gather()
            for output, piece in zip(outputs, flat):
                output.copy_(piece)

        return self._submit(run, output_lists)

    def _reduce_scatter_flat(self, output, input_, opts, what):
        """What completes this reduce-scatter on the worker: the engine's call, or for a form zpp
        does not reduce, the wait for the inner gloo group's."""
        _check_cpu(what, output, input_)
        if output.dtype != input_.dtype:
            raise TypeError(f"zpp backend: {what} of {input_.dtype} into {output.dtype} is not "
                            "supported (output and input of one dtype)")
        if input_.numel() != output.numel() * self._size:
            raise ValueError(f"zpp backend: {what}: input has {input_.numel()} elements, "
                             f"expected {self._size} x {output.numel()}")
        op = opts.reduceOp
        kind = op.op if hasattr(op, "op") else op
        if not _engine_reduces(input_.dtype, kind):
            # Integers, min/max/product: exact on gloo, issued now, from the caller's thread, so
            # that the inner group sees its calls in the program's order on every rank; the
            # worker only waits for it.
            self._delegated_calls["reduce_scatter"] += 1
            return self._gloo._reduce_scatter_base(output, input_, opts).wait
        zpp_op, premul = _zpp_op(op, kind)
        source, target = input_.contiguous(), _contiguous_target(output)

        def run():
            if output.numel():
                check(LIB.zppCpuReduceScatter(source.data_ptr(), target.data_ptr(),
                                              output.numel(), _NCCL_DTYPES[source.dtype], zpp_op,
                                              premul, self._comm), what, self._comm)
            if target is not output:
                output.copy_(target)

        return run

    def reduce_scatter_single(self, output, input_, opts):
        return self._submit(
            self._reduce_scatter_flat(output, input_, opts, "reduce_scatter_single"), [output])

    _reduce_scatter_base = reduce_scatter_single

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts):
        runs = [self._reduce_scatter_flat(output, input_, opts, "reduce_scatter_tensor_coalesced")
                for output, input_ in zip(outputs, inputs, strict=True)]
        return self._submit(lambda: [run() for run in runs], outputs)

    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    def reduce_scatter(self, outputs, input_lists, opts):
        if len(outputs) != 1 or len(input_lists) != 1:
            raise ValueError("zpp backend: reduce_scatter takes one output tensor per process")
        if len(input_lists[0]) != self._size:
            raise ValueError(f"zpp backend: reduce_scatter: {len(input_lists[0])} inputs for "
                             f"{self._size} ranks")
        flat = torch.cat([t.reshape(-1) for t in input_lists[0]])
        return self._submit(self._reduce_scatter_flat(outputs[0], flat, opts, "reduce_scatter"),
                            outputs)

    # ---- exact ------------------------------------------------------------------------------

    def _gather_all(self, tensor, what):
        """Every rank's copy of `tensor`, stacked in rank order (exact bytes)."""
        source = tensor.contiguous()
        gathered = torch.empty((self._size,) + tuple(source.shape), dtype=source.dtype)
        nbytes = source.numel() * source.element_size()
        if nbytes:
            check(LIB.zppCpuAllGatherBytes(source.data_ptr(), gathered.data_ptr(), nbytes,
                                           self._comm), what, self._comm)
        return gathered

    @staticmethod
    def _check_reducible(dtype, op, what):
        """Raises in the caller's thread for an op the exact path cannot apply to `dtype`."""
        name = _op_name(op)
        floating = dtype.is_floating_point or dtype.is_complex
        integral = not floating and dtype != torch.bool
        kind = op.op if hasattr(op, "op") else op
        types = ReduceOp.RedOpType
        supported = {
            types.SUM: dtype != torch.bool,
            types.AVG: floating,
            types.PREMUL_SUM: floating,
            types.PRODUCT: dtype != torch.bool,
            types.MIN: not dtype.is_complex,
            types.MAX: not dtype.is_complex,
            types.BAND: integral or dtype == torch.bool,
            types.BOR: integral or dtype == torch.bool,
            types.BXOR: integral or dtype == torch.bool,
        }
        if not supported.get(kind, False):
            raise TypeError(f"zpp backend: {what} with {name} on {dtype} is not supported")

    def _reduce(self, pieces, op, what):
        """Reduces the rank-ordered pieces the same way on every rank."""
        dtype = pieces.dtype
        self._check_reducible(dtype, op, what)
        kind = op.op if hasattr(op, "op") else op
        types = ReduceOp.RedOpType
        rows = list(pieces)
        if kind == types.PREMUL_SUM:
            factor = _premul_factor(op)
            rows = [row * factor for row in rows]
        combine = {
            types.SUM: torch.add, types.AVG: torch.add, types.PREMUL_SUM: torch.add,
            types.PRODUCT: torch.mul, types.MIN: torch.minimum, types.MAX: torch.maximum,
            types.BAND: torch.bitwise_and, types.BOR: torch.bitwise_or,
            types.BXOR: torch.bitwise_xor,
        }[kind]
        result = functools.reduce(combine, rows)
        if kind == types.AVG:
            result = result / self._size
        return result.to(dtype)

    def allreduce(self, tensors, opts=None):
        """Sums (avg, pre-multiplied) of fp32, fp16 and bf16 go through the engine, in place:
        compressed with ZPP_QAR=1, else exact, the same bytes on every rank either way, counted in
        the engine's stats. Other ops and dtypes are exact here, counted under exact_ops."""
        op = opts.reduceOp if opts is not None else ReduceOp.SUM
        kind = op.op if hasattr(op, "op") else op
        runs = []
        for tensor in tensors:
            _check_cpu("allreduce", tensor)
            if _engine_reduces(tensor.dtype, kind):
                runs.append(functools.partial(self._engine_all_reduce, tensor, op, kind))
                continue
            self._exact_calls["all_reduce"] += 1  # a refused one too
            self._check_reducible(tensor.dtype, op, "allreduce")
            runs.append(functools.partial(self._exact_all_reduce, tensor, op))
        return self._submit(lambda: [run() for run in runs], tensors)

    def _exact_all_reduce(self, tensor, op):
        tensor.copy_(self._reduce(self._gather_all(tensor, "allreduce"), op, "allreduce"))

    def _engine_all_reduce(self, tensor, op, kind):
        zpp_op, premul = _zpp_op(op, kind)
        target = _contiguous_target(tensor)
        if target is not tensor:
            target.copy_(tensor)
        if target.numel():
            check(LIB.zppCpuAllReduce(target.data_ptr(), target.data_ptr(), target.numel(),
                                      _NCCL_DTYPES[target.dtype], zpp_op, premul, self._comm),
                  "allreduce", self._comm)
        if target is not tensor:
            tensor.copy_(target)

    def allreduce_coalesced(self, tensors, opts=None):
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts):
        self._exact_calls["broadcast"] += 1
        for tensor in tensors:
            _check_cpu("broadcast", tensor)
        root = opts.rootRank

        def run():
            for tensor in tensors:
                buffer = tensor.contiguous()
                nbytes = buffer.numel() * buffer.element_size()
                if nbytes:
                    check(LIB.zppCpuBroadcastBytes(buffer.data_ptr(), nbytes, root, self._comm),
                          "broadcast", self._comm)
                if buffer is not tensor:
                    tensor.copy_(buffer)

        return self._submit(run, tensors)

    def barrier(self, opts=None):
        self._exact_calls["barrier"] += 1
        # Waited for here, as gloo's barrier is by every caller: the ranks leave together.
        work = self._submit(
            lambda: self._gather_all(torch.zeros(1, dtype=torch.uint8), "barrier"), [])
        work.wait()
        return work

    # ---- on the inner gloo group ------------------------------------------------------------
    # Same arguments as torch hands them over; gloo raises its own errors for what it cannot do.

    reduce = _delegated("reduce")
    gather = _delegated("gather")
    scatter = _delegated("scatter")
    alltoall = _delegated("alltoall")
    all_to_all_single = _delegated("all_to_all_single", "alltoall_base")
    alltoall_base = _delegated("alltoall_base")
    allgather_coalesced = _delegated("allgather_coalesced")
    allreduce_sparse = _delegated("allreduce_sparse")
    send = _delegated("send")
    recv = _delegated("recv")
    recv_anysource = _delegated("recv_anysource")

    def monitored_barrier(self, opts, wait_all_ranks=False):
        self._delegated_calls["monitored_barrier"] += 1
        self._gloo.monitored_barrier(opts.timeout, wait_all_ranks)


def _create(dist_options, backend_options):
    return ZppBackend(dist_options.store, dist_options.group_rank, dist_options.group_size,
                      dist_options.timeout)


def register():
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND_NAME, _create, extended_api=True, devices=["cpu"])


def _summed(into, more):
    for key, value in more.items():
        if isinstance(value, dict):
            _summed(into.setdefault(key, {}), value)
        elif key == "step_epoch":
            into[key] = max(into.get(key, 0), value)
        else:
            into[key] = into.get(key, 0) + value
    return into


def process_stats():
    """The counters of every zpp communicator of this process, summed (the step epoch is the
    process's): what a rank moved over all its groups, as HSDP's 2-D mesh or DeepSpeed's
    sub-groups spread it."""
    total = {}
    for backend in list(ZppBackend._live):
        _summed(total, backend.stats())
    return total


def stats(group=None):
    """The zpp engine's counters on `group`'s zpp backend (the default group when None)."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    backend = pg._get_backend(torch.device("cpu"))
    if not isinstance(backend, ZppBackend):
        raise ValueError("zpp_torch.stats: the group has no zpp backend")
    return backend.stats()
