#!/usr/bin/env python3
"""Each CUDA kernel instantiation's registers, stack frame and spills, per architecture, held to
kernels/resource_budget.txt (issue 45: kernels at the memory roofline need bytes in flight, and
registers or spills past the budget cost occupancy or local-memory traffic). No GPU needed:
ptxas reports them when the kernels compile, here with the build's own flags, device code only.

    tools/kernel_resources.py --check BUILD     exit 1 on a kernel over its budget, a kernel
                                                missing from the file or a stale line;
                                                77 when BUILD has no CUDA kernels
    tools/kernel_resources.py --write BUILD     rewrite the budget from what ptxas reports now
    tools/kernel_resources.py --self-test BUILD a budget one register short must be reported
                                                (--check makes the same test first)

A budget line: `sm_XX REGISTERS STACK_BYTES SPILL_BYTES KERNEL` (spill stores plus loads). Using
less passes and says so; using more is a decision written into the file (--write), never a silent
drift.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
BUDGET = os.path.join(ROOT, "kernels", "resource_budget.txt")
SKIP = 77
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
    """{(arch, kernel): (registers, stack, spill bytes)} that ptxas reports for `source`."""
    with tempfile.TemporaryDirectory() as scratch:
        out = subprocess.run(nvcc + ["-cubin", f"-arch={arch}", "--resource-usage", "-x", "cu",
                                     source, "-o", os.path.join(scratch, "k.cubin")],
                             capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"kernel_resources: nvcc failed on {source}:\n{out.stderr[-2000:]}")
    found, kernel, frame = {}, None, None
    for line in (out.stdout + out.stderr).splitlines():
        if (match := ENTRY.search(line)):
            kernel, frame = (match.group(2), _short(match.group(1))), None
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


def read_budget(path):
    budget = {}
    for number, line in enumerate(open(path), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        arch, registers, stack, spills, kernel = line.rstrip("\n").split(" ", 4)
        budget[(arch, kernel)] = (int(registers), int(stack), int(spills), number)
    return budget


def problems(found, budget):
    lines = []
    for key in sorted(found):
        registers, stack, spills = found[key]
        arch, kernel = key
        if key not in budget:
            lines.append(f"{arch} {kernel}: not in kernels/resource_budget.txt ({registers} "
                         f"registers, {stack} bytes stack, {spills} spilled; add it: --write)")
            continue
        most = budget[key][:3]
        if (registers, stack, spills) != tuple(min(a, b) for a, b in
                                               zip((registers, stack, spills), most)):
            lines.append(f"{arch} {kernel}: {registers} registers, {stack} bytes stack, {spills} "
                         f"bytes spilled, over its budget of {most[0]}, {most[1]} and {most[2]} "
                         f"(resource_budget.txt:{budget[key][3]})")
    for key, (_, _, _, number) in sorted(budget.items(), key=lambda item: item[1][3]):
        if key not in found:
            lines.append(f"resource_budget.txt:{number}: {key[0]} {key[1]} is no longer compiled")
    return lines


def planted_shortfall_reported(found, budget):
    """The check's own check, on the figures just measured: a budget one register short."""
    key = min(budget)
    registers, stack, spills, number = budget[key]
    planted = dict(budget)
    planted[key] = (registers - 1, stack, spills, number)
    if any(f"over its budget of {registers - 1}," in line for line in problems(found, planted)):
        print("self-test: a budget one register short was reported")
        return True
    print(f"self-test: a budget one register short for {key} was not reported")
    return False


def write(found, path):
    with open(path, "w") as out:
        out.write("# Per architecture and kernel instantiation: the most registers, stack bytes "
                  "and spill bytes\n# (stores plus loads) it may use (tools/kernel_resources.py; "
                  "written by --write from\n# ptxas's report).\n")
        for (arch, kernel), figures in sorted(found.items()):
            out.write(f"{arch} {' '.join(str(figure) for figure in figures)} {kernel}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    way = parser.add_mutually_exclusive_group(required=True)
    way.add_argument("--check", action="store_true")
    way.add_argument("--write", action="store_true")
    way.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    found = measure(args.build)
    if not found:
        print(f"kernel_resources: {args.build} compiles no CUDA kernels: skipped")
        return SKIP
    if args.write:
        write(found, BUDGET)
        print(f"kernel_resources: {len(found)} kernel instantiations written to {BUDGET}")
        return 0
    budget = read_budget(BUDGET)
    if not planted_shortfall_reported(found, budget):
        return 1
    if args.self_test:
        return 0
    lines = problems(found, budget)
    for line in lines:
        print(line)
    under = sum(1 for key, value in found.items()
                if key in budget and value != tuple(budget[key][:3]) and not any(
                    line.startswith(f"{key[0]} {key[1]}:") for line in lines))
    print(f"kernel_resources: {len(found)} kernel instantiations, {len(lines)} problem(s)" +
          (f"; {under} now under their budget (lower it: --write)" if under else ""))
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
