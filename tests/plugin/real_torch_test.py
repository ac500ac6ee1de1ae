"""libzpp.so preloaded into the pinned pip PyTorch, which loads its NCCL wheel RTLD_LOCAL: the
hooks must reach that NCCL (group start/end succeed) and zpp must name the same version torch
reports. Usage: real_torch_test.py LIBZPP, with ZPP_TORCH_PYTHON set to the torch environment's
python (`make test` sets it); exits 77 (skipped) without it."""
import os
import re
import subprocess
import sys

PROGRAM = r"""
import ctypes, torch
hooks = ctypes.CDLL(None)  # the global scope: libzpp.so's hooks come first
start = hooks.ncclGroupStart()
end = hooks.ncclGroupEnd()
major, minor, patch = torch.cuda.nccl.version()
print(f"group {start} {end} torch-nccl {major * 10000 + minor * 100 + patch}", flush=True)
"""


def main():
    library = sys.argv[1]
    python = os.environ.get("ZPP_TORCH_PYTHON", "")
    if not python:
        print("skipped: ZPP_TORCH_PYTHON is not set (make test sets it from tools/install-torch.sh)")
        return 77
    env = dict(os.environ, LD_PRELOAD=library, ZPP_DEBUG="INFO", ZPP_DEBUG_SUBSYS="PLUGIN")
    env.pop("ZPP_NCCL_LIBRARY", None)
    run = subprocess.run([python, "-c", PROGRAM], env=env, capture_output=True, text=True,
                         timeout=240)
    output = run.stdout + run.stderr
    print(output)
    assert run.returncode == 0, f"python exited {run.returncode}"
    result = re.search(r"group (-?\d+) (-?\d+) torch-nccl (\d+)", output)
    assert result, "the program printed no result"
    assert (result.group(1), result.group(2)) == ("0", "0"), "the hooks did not reach NCCL"
    found = re.search(r"real NCCL (\d+) from (\S+)", output)
    assert found, "zpp logged no 'real NCCL' line"
    assert found.group(1) == result.group(3), \
        f"zpp took NCCL {found.group(1)}, torch reports {result.group(3)}"
    assert "nvidia/nccl" in found.group(2), f"zpp took {found.group(2)}, not torch's wheel"
    assert "WARN" not in output, "a WARN was logged"
    print(f"ok: zpp forwards to {found.group(2)} (NCCL {found.group(1)}), torch's own")
    return 0


if __name__ == "__main__":
    sys.exit(main())
