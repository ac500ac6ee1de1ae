"""libzpp_cpu.so through ctypes: loading, signatures, and results turned into Python errors."""
import ctypes
import os

_LIBRARY_DIR = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "lib"))

# ncclResult_t
_RESULTS = {
    0: "ncclSuccess", 1: "ncclUnhandledCudaError", 2: "ncclSystemError",
    3: "ncclInternalError", 4: "ncclInvalidArgument", 5: "ncclInvalidUsage",
    6: "ncclRemoteError", 7: "ncclInProgress",
}
_REMOTE_ERROR = 6

# zppPassThroughReason_t, in order (include/zpp/zpp.h)
PASS_THROUGH_REASONS = (
    "disabled", "dtype", "redop", "small", "one-rank", "topology", "config-mismatch",
    "nonblocking", "internal", "capture", "unavailable", "invalid-comm", "invalid-args",
)


class ZppError(RuntimeError):
    """A zpp collective failed; `result` is the ncclResult_t name."""

    def __init__(self, what, result):
        self.result = _RESULTS.get(result, f"result {result}")
        hint = ""
        if result == _REMOTE_ERROR:
            hint = (" (a peer is gone or sent nothing for ZPP_TIMEOUT seconds; this "
                    "communicator is broken, every later call fails at once)")
        super().__init__(f"zpp: {what} failed: {self.result}{hint}")


class Stats(ctypes.Structure):
    """zppStats_t (include/zpp/zpp.h)."""
    _fields_ = [
        ("calls", ctypes.c_uint64 * 4),
        ("input_bytes", ctypes.c_uint64 * 4),
        ("passthrough", ctypes.c_uint64 * 13),
        ("sent_bytes", ctypes.c_uint64 * 3),
        ("hpz_hits", ctypes.c_uint64),
        ("hpz_misses", ctypes.c_uint64),
        ("hpz_verify_failures", ctypes.c_uint64),
        ("step_epoch", ctypes.c_uint64),
    ]

    def as_dict(self):
        paths = ("pass-through", "qwz", "hpz", "qgz")
        return {
            "calls": dict(zip(paths, self.calls)),
            "input_bytes": dict(zip(paths, self.input_bytes)),
            "pass_through": {name: count for name, count in zip(PASS_THROUGH_REASONS,
                                                                self.passthrough) if count},
            "sent_bytes": {"intra_node": self.sent_bytes[0], "inter_node": self.sent_bytes[1],
                           "inter_rack": self.sent_bytes[2]},
            "hpz_hits": self.hpz_hits,
            "hpz_misses": self.hpz_misses,
            "hpz_verify_failures": self.hpz_verify_failures,
            "step_epoch": self.step_epoch,
        }


def library_path(name):
    return os.path.join(_LIBRARY_DIR, name)


def _load():
    path = library_path("libzpp_cpu.so")
    if not os.path.isfile(path):
        raise ImportError(f"zpp_torch: {path} does not exist (build zpp with `make`)")
    lib = ctypes.CDLL(path)
    c = ctypes
    comm = c.c_void_p
    signatures = {
        "zppCpuCommOpen": [c.c_int, c.c_int, c.POINTER(comm)],
        "zppCpuCommAddress": [comm, c.POINTER(c.c_void_p), c.POINTER(c.c_size_t)],
        "zppCpuCommConnect": [comm, c.c_char_p, c.POINTER(c.c_size_t)],
        "zppCpuCommDestroy": [comm],
        "zppCpuCommTopology": [comm] + [c.POINTER(c.c_int)] * 4,
        "zppCpuAllGather": [c.c_void_p, c.c_void_p, c.c_size_t, c.c_int, comm],
        "zppCpuReduceScatter": [c.c_void_p, c.c_void_p, c.c_size_t, c.c_int, c.c_int, c.c_float,
                                comm],
        "zppCpuAllGatherBytes": [c.c_void_p, c.c_void_p, c.c_size_t, comm],
        "zppCpuBroadcastBytes": [c.c_void_p, c.c_size_t, c.c_int, comm],
        "zppCpuCommGetStats": [comm, c.POINTER(Stats)],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = c.c_int
    return lib


LIB = _load()


def check(result, what):
    if result != 0:
        raise ZppError(what, result)
