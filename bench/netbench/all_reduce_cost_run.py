#!/usr/bin/env python3
"""all_reduce_cost.py side by side: gloo and one or more zpp builds, interleaved round by round,
on one machine (4 ranks as 2 simulated nodes of 2) or across tools/netbed's shaped links (2
nodes x 2 ranks, --rate-mbit). Writes DIR/all_reduce_cost.json (every run) and prints, per
build, the median over rounds of each figure.

    bench/netbench/all_reduce_cost_run.py --python VENV/bin/python --build new=build \\
        [--build old=OLD/build] [--rate-mbit 1000] [--rounds 3] [--mib 25] \\
        [--groups replica] --out DIR
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(HERE, "all_reduce_cost.py")


def command(args, backend, build):
    if args.rate_mbit:
        place = ["--nnodes", "2", "--node-rank", "{node}", "--nproc-per-node", "2",
                 "--master-addr", "{master}", "--master-port", "29511"]
    else:
        place = ["--nproc-per-node", "4", "--standalone"]
    job = [args.python, "-m", "torch.distributed.run"] + place + [
        SCRIPT, "--backend", backend, "--mib", str(args.mib), "--iters", str(args.iters),
        "--groups", args.groups]
    if build is not None:
        job = [sys.executable, os.path.join(ROOT, "tools", "zpp-run"), "--cpu", "--lib",
               os.path.join(build, "lib", "libzpp.so"), "--", "env",
               f"PYTHONPATH={os.path.join(build, 'python')}"] + job
    if args.rate_mbit:
        job = [os.path.join(ROOT, "tools", "netbed"), "run", "--nodes", "2", "--rate-mbit",
               str(args.rate_mbit), "--timeout", "300", "--"] + job
    return job


def one_run(args, backend, build):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if not args.rate_mbit:
        env["ZPP_LOCAL_SIZE"] = "2"
    done = subprocess.run(command(args, backend, build), env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("{") and '"median_wall_ms"' in line:
            return json.loads(line)
    raise SystemExit(f"all_reduce_cost_run: {backend} {build}: no result (exit "
                     f"{done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True)
    parser.add_argument("--build", action="append", required=True, metavar="LABEL=DIR")
    parser.add_argument("--rate-mbit", type=int, default=0, help="0: one machine, no netbed")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mib", type=float, default=25.0)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--groups", choices=("world", "replica"), default="world",
                        help="replica: HSDP's all-reduce across nodes (all_reduce_cost.py)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    entries = [("gloo", "gloo", None)] + [
        (label, "zpp", os.path.realpath(path))
        for label, path in (item.split("=", 1) for item in args.build)]
    runs = []
    for round_index in range(args.rounds):
        for label, backend, build in entries:
            result = one_run(args, backend, build)
            runs.append(dict(result, label=label, round=round_index, build=build))
            print(f"round {round_index}: {label}: {result['median_wall_ms']:.1f} ms a call, "
                  f"{result['cpu_ms_per_call_all_ranks']:.1f} ms of CPU", flush=True)
    os.makedirs(args.out, exist_ok=True)
    summary = {"rate_mbit": args.rate_mbit, "mib": args.mib, "iters": args.iters,
               "groups": args.groups,
               "rounds": args.rounds, "command": " ".join(sys.argv), "runs": runs}
    with open(os.path.join(args.out, "all_reduce_cost.json"), "w") as out:
        json.dump(summary, out, indent=2)
    for label, _, _ in entries:
        mine = [r for r in runs if r["label"] == label]
        print(f"{label}: median over {len(mine)} rounds: "
              f"{statistics.median(r['median_wall_ms'] for r in mine):.1f} ms a call, "
              f"{statistics.median(r['cpu_ms_per_call_all_ranks'] for r in mine):.1f} ms of CPU")


if __name__ == "__main__":
    main()
