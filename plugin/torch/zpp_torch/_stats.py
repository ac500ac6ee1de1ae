"""zppStats_t (include/zpp/zpp.h) through ctypes. No other import: the GPU training script loads
this file alone to read a preloaded libzpp.so's stats."""
import ctypes

class Stats(ctypes.Structure):
    """zppStats_t (include/zpp/zpp.h)."""
    _fields_ = [
        ("calls", ctypes.c_uint64 * 5),
        ("input_bytes", ctypes.c_uint64 * 5),
        ("passthrough", ctypes.c_uint64 * 16),
        ("sent_bytes", ctypes.c_uint64 * 3),
        ("hpz_hits", ctypes.c_uint64),
        ("hpz_misses", ctypes.c_uint64),
        ("hpz_verify_failures", ctypes.c_uint64),
        ("step_epoch", ctypes.c_uint64),
        ("kernel_launches", ctypes.c_uint64 * 5),
        ("collective_launches", ctypes.c_uint64 * 5),
        ("hpz_kept_bytes_peak", ctypes.c_uint64),
        ("predicted_us", ctypes.c_uint64 * 5),
        ("measured_us", ctypes.c_uint64 * 5),
        ("host_waits", ctypes.c_uint64),
        ("plain_off_node_bytes", ctypes.c_uint64),
        ("qgz_ef_calls", ctypes.c_uint64),
        ("qgz_ef_without", ctypes.c_uint64),
        ("qwz_delta_calls", ctypes.c_uint64),
        ("qwz_delta_full", ctypes.c_uint64),
        ("control_sent_bytes", ctypes.c_uint64 * 3),
        ("hpz_skipped_steps", ctypes.c_uint64),
    ]

    def as_dict(self, reason_names):
        paths = ("pass-through", "qwz", "hpz", "qgz", "qar")
        return {
            "calls": dict(zip(paths, self.calls)),
            "input_bytes": dict(zip(paths, self.input_bytes)),
            "pass_through": {name: count for name, count in zip(reason_names, self.passthrough)
                             if count},
            "sent_bytes": {"intra_node": self.sent_bytes[0], "inter_node": self.sent_bytes[1],
                           "inter_rack": self.sent_bytes[2]},
            "hpz_hits": self.hpz_hits,
            "hpz_misses": self.hpz_misses,
            "hpz_verify_failures": self.hpz_verify_failures,
            "step_epoch": self.step_epoch,
            "kernel_launches": dict(zip(paths, self.kernel_launches)),
            "collective_launches": dict(zip(paths, self.collective_launches)),
            "hpz_kept_bytes_peak": self.hpz_kept_bytes_peak,
            "predicted_us": dict(zip(paths, self.predicted_us)),
            "measured_us": dict(zip(paths, self.measured_us)),
            "host_waits": self.host_waits,
            "plain_off_node_bytes": self.plain_off_node_bytes,
            "qgz_ef_calls": self.qgz_ef_calls,
            "qgz_ef_without": self.qgz_ef_without,
            "qwz_delta_calls": self.qwz_delta_calls,
            "qwz_delta_full": self.qwz_delta_full,
            "control_sent_bytes": {"intra_node": self.control_sent_bytes[0],
                                   "inter_node": self.control_sent_bytes[1],
                                   "inter_rack": self.control_sent_bytes[2]},
            "hpz_skipped_steps": self.hpz_skipped_steps,
        }


def reason_names(library):
    """zpp's names of the pass-through reasons, from libzpp.so (zppGetPassThroughReasonName)."""
    function = library.zppGetPassThroughReasonName
    function.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    function.restype = ctypes.c_int
    names = []
    for reason in range(len(Stats().passthrough)):
        name = ctypes.c_char_p()
        ok = function(reason, ctypes.byref(name)) == 0
        names.append(name.value.decode() if ok else f"reason{reason}")
    return names
