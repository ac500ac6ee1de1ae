"""The one function zpp-run --cpu wraps; it records the backend string each group was made with."""
made = []


def _new_process_group_helper(size, rank, ranks, backend, store, group_name, **kwargs):
    made.append(str(backend))
    return object(), store


def init_process_group(backend=None):
    # Called through the module global, as torch's own init_process_group does.
    return _new_process_group_helper(2, 0, [], backend or "undefined", None, "0")


def new_group(ranks, backend=None):
    return _new_process_group_helper(len(ranks), 0, ranks, backend or "gloo", None, "1")
