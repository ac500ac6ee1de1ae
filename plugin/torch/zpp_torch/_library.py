"""libzpp_cpu.so through ctypes: loading, signatures, and results turned into Python errors."""
import ctypes
import os

from . import _c_constants as C
from ._stats import Stats

_LIBRARY_DIR = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "lib"))

# ncclResult_t's names by value.
_RESULTS = {getattr(C, name): name for name in (
    "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
    "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress")}

class ZppError(RuntimeError):
    """A zpp collective failed; `result` is the ncclResult_t name."""

    def __init__(self, what, result, detail=""):
        self.result = _RESULTS.get(result, f"result {result}")
        self.detail = detail
        if detail:
            hint = f": {detail} This communicator is broken: every later call fails at once."
        elif result == C.ncclRemoteError:
            hint = (" (a peer is gone or sent nothing for ZPP_TIMEOUT seconds; this "
                    "communicator is broken, every later call fails at once)")
        else:
            hint = ""
        super().__init__(f"zpp: {what} failed: {self.result}{hint}")


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
        "zppCpuCommOpenWithTimeout": [c.c_int, c.c_int, c.c_int64, c.POINTER(comm)],
        "zppCpuCommAddress": [comm, c.POINTER(c.c_void_p), c.POINTER(c.c_size_t)],
        "zppCpuCommConnect": [comm, c.c_char_p, c.POINTER(c.c_size_t)],
        "zppCpuCommDestroy": [comm],
        "zppCpuCommGetLastError": [comm],
        "zppCpuCommTopology": [comm] + [c.POINTER(c.c_int)] * 4,
        "zppCpuAllGather": [c.c_void_p, c.c_void_p, c.c_size_t, c.c_int, comm],
        "zppCpuReduceScatter": [c.c_void_p, c.c_void_p, c.c_size_t, c.c_int, c.c_int, c.c_float,
                                comm],
        "zppCpuAllReduce": [c.c_void_p, c.c_void_p, c.c_size_t, c.c_int, c.c_int, c.c_float, comm],
        "zppCpuAllGatherBytes": [c.c_void_p, c.c_void_p, c.c_size_t, comm],
        "zppCpuBroadcastBytes": [c.c_void_p, c.c_size_t, c.c_int, comm],
        "zppCpuCommGetStats": [comm, c.POINTER(Stats)],
        "zppCpuCommHpzChecks": [comm, c.POINTER(c.c_int), c.POINTER(c.c_uint64),
                                c.POINTER(c.c_uint64)],
        "zppCpuStepEnded": [],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = c.c_int
    lib.zppCpuCommGetLastError.restype = c.c_char_p
    return lib


LIB = _load()


def check(result, what, comm=None):
    """Raises ZppError for a failed call; with `comm`, its error names what the ranks found."""
    if result != C.ncclSuccess:
        detail = LIB.zppCpuCommGetLastError(comm) if comm is not None else None
        raise ZppError(what, result, detail.decode(errors="replace") if detail else "")
