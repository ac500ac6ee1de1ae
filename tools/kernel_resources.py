#!/usr/bin/env python3
"""Each CUDA kernel instantiation's registers, stack frame and spills, per architecture, held to
kernels/resource_budget.txt (issue 45: kernels at the memory roofline need bytes in flight, and
registers or spills past the budget cost occupancy or local-memory traffic). No GPU needed:
ptxas reports them when the kernels compile, here with the build's own flags, device code only.

    tools/kernel_resources.py --check|--write|--self-test BUILD   (tools/budget_file.py)

A budget line: `REGISTERS STACK_BYTES SPILL_BYTES sm_XX KERNEL` (spill stores plus loads).
"""
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

import budget_file

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
BUDGET = os.path.join(ROOT, "kernels", "resource_budget.txt")
ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(sm_\d+)'")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")


def kernel_compiles(build):
    """[(source, [nvcc arguments without output or code generation], [sm_XX])] of kernels/*.cu."""
    path = os.path.join(build, "compile_commands.json")
    if not os.path.exists(path):
        return []
    found = []
    for entry in json.load(open(path)):
        source = entry["file"]
        if not (source.endswith(".cu") and os.sep + "kernels" + os.sep in source):
            continue
        words = shlex.split(entry["command"])
        archs = sorted(set(re.findall(r"code=\[?compute_\d+,?sm_(\d+)", entry["command"]) +
                           re.findall(r"code=sm_(\d+)", entry["command"])))
        keep, skip_next = [], False
        for word in words[1:]:
            if skip_next:
                skip_next = False
            elif word in ("-o", "-c", "-x"):
                skip_next = word != "-c"
            elif word.startswith("--generate-code") or word == source:
                continue
            elif word.startswith("-Xcompiler") or word == "-forward-unknown-to-host-compiler":
                continue  # device code only: no host compiler runs
            else:
                keep.append(word)
        found.append((source, [words[0]] + keep, ["sm_" + arch for arch in archs]))
    return found


def _short(mangled):
    """The kernel's demangled name and template arguments, without the parameters or the
    per-file anonymous namespace."""
    name = subprocess.run(["c++filt", mangled], capture_output=True, text=True).stdout.strip()
    name = name.replace("(anonymous namespace)::", "")
    depth = 0
    for index, char in enumerate(name):
        depth += char == "<"
        depth -= char == ">"
        if char == "(" and depth == 0 and index > 0 and name[index - 1] != " ":
            return name[:index].removeprefix("void ")
    return name.removeprefix("void ")


def report(source, nvcc, arch):
    """{"sm_XX kernel": (registers, stack, spill bytes)} that ptxas reports for `source`."""
    with tempfile.TemporaryDirectory() as scratch:
        out = subprocess.run(nvcc + ["-cubin", f"-arch={arch}", "--resource-usage", "-x", "cu",
                                     source, "-o", os.path.join(scratch, "k.cubin")],
                             capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"kernel_resources: nvcc failed on {source}:\n{out.stderr[-2000:]}")
    found, kernel, frame = {}, None, None
    for line in (out.stdout + out.stderr).splitlines():
        if (match := ENTRY.search(line)):
            kernel, frame = f"{match.group(2)} {_short(match.group(1))}", None
        elif (match := FRAME.search(line)) and kernel:
            frame = (int(match.group(1)), int(match.group(2)) + int(match.group(3)))
        elif (match := USED.search(line)) and kernel:
            stack, spills = frame or (0, 0)
            found[kernel] = (int(match.group(1)), stack, spills)
            kernel = None
    return found


def measure(build):
    compiles = kernel_compiles(build)
    jobs = [(source, nvcc, arch) for source, nvcc, archs in compiles for arch in archs]
    found = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for part in pool.map(lambda job: report(*job), jobs):
            found.update(part)
    return found


def main():
    return budget_file.main(
        __doc__.split("\n\n")[0], measure, BUDGET, ("registers", "bytes stack", "bytes spilled"),
        ["Per architecture and kernel instantiation: the most registers, stack bytes and spill",
         "bytes (stores plus loads) it may use (tools/kernel_resources.py; written by --write",
         "from ptxas's report)."])


if __name__ == "__main__":
    sys.exit(main())
