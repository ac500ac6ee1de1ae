#!/usr/bin/env python3
"""Every mode of the replicated frameworks side by side on the shaped-link testbed, repeated:
for each of --rounds rounds, for each framework and rate, bench/netbench/run.py runs every mode
in turn (so the modes of one round share the machine's state). Run again with the same --out,
it keeps the parts already done. Writes one JSON of every run
(the shape of bench/results/netbench_replicated_*_cpu.json: what, command, date, commit,
machine, runs with their round) and prints, per framework and rate, each mode's median over
the rounds of run.py's median step, beside gloo's and the bf16 hook's.

    bench/netbench/rounds.py --python VENV/bin/python --build BUILD --out DIR \\
        [--frameworks ddp,hsdp] [--rates 50,1000] [--modes gloo,plain,ar8,ar4+ef,auto,bf16-hook]
        [--rounds 3] [--steps 14] [--congestion-control bbr,cubic] --json RESULT.json \\
        --what "..."

Needs root (tools/netbed), like make netbench.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))


def one_round(args, framework, rate, index, congestion_control):
    out = os.path.join(args.out, f"{framework}_{rate:g}_r{index}" +
                       (f"_{congestion_control}" if congestion_control else ""))
    summary = os.path.join(out, "summary.json")
    if not os.path.exists(summary):  # else a finished part of an interrupted campaign
        os.makedirs(out, exist_ok=True)
        command = [sys.executable, os.path.join(HERE, "run.py"), "--python", args.python,
                   "--build", args.build, "--out", out, "--frameworks", framework, "--rates",
                   f"{rate:g}", "--modes", args.modes, "--no-baseline", "--steps", str(args.steps)]
        if congestion_control:
            command += ["--congestion-control", congestion_control]
        with open(os.path.join(out, "log.txt"), "w") as log:
            subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True,
                           timeout=args.timeout)
    with open(summary) as f:
        runs = json.load(f)["runs"]
    return [dict(run, round=index) for run in runs]


def link_case(run):
    """A run's framework, rate and TCP congestion control ("" where not recorded)."""
    return run["framework"], run["rate_mbit"], run.get("congestion_control", "")


def table(runs):
    lines = ["| framework | link | mode | rounds (s) | median | / gloo | / bf16 hook | "
             "queue drops per round |", "|---|---|---|---|---:|---:|---:|---|"]
    for framework, rate, congestion_control in sorted({link_case(r) for r in runs}):
        here = [r for r in runs if link_case(r) == (framework, rate, congestion_control)]
        medians = {}
        for mode in dict.fromkeys(r["mode"] for r in here):
            medians[mode] = statistics.median(r["median_step_s"] for r in here if r["mode"] == mode)
        for mode, median in medians.items():
            steps = ", ".join(f"{r['median_step_s']:.3f}" for r in here if r["mode"] == mode)
            drops = ", ".join(str(r["queue_drops"]) for r in here
                              if r["mode"] == mode and "queue_drops" in r)
            ratios = [f"{median / medians[base]:.3f}" if base in medians else ""
                      for base in ("gloo", "bf16-hook")]
            link = f"{rate:g} Mbit/s" + (f", {congestion_control}" if congestion_control else "")
            lines.append(f"| {framework} | {link} | {mode} | {steps} | {median:.3f} s | "
                         f"{ratios[0]} | {ratios[1]} | {drops} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--json", required=True, help="where the merged runs go")
    parser.add_argument("--what", required=True, help="the JSON's description of the runs")
    parser.add_argument("--frameworks", default="ddp,hsdp")
    parser.add_argument("--rates", default="50,1000")
    parser.add_argument("--modes", default="gloo,plain,ar8,ar4+ef,auto,bf16-hook")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=14)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per run.py call")
    parser.add_argument("--congestion-control", metavar="NAMES", default="",
                        help="TCP's in the testbed, a comma list run in turn within each round "
                        "(default: the machine's)")
    args = parser.parse_args()
    runs = []
    for index in range(args.rounds):
        for framework in args.frameworks.split(","):
            for rate in args.rates.split(","):
                for congestion_control in args.congestion_control.split(","):
                    runs += one_round(args, framework, float(rate), index, congestion_control)
                    print(f"round {index}: {framework} at {rate} Mbit/s "
                          f"{congestion_control} done", flush=True)
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], text=True,
                            capture_output=True, check=False).stdout.strip()
    summary = {"what": args.what, "command": " ".join([os.path.relpath(__file__)] + sys.argv[1:]),
               "date": datetime.date.today().isoformat(), "commit": commit,
               "machine": f"{os.cpu_count()} cores, {os.uname().machine}, no GPU", "runs": runs}
    with open(args.json, "w") as out:
        json.dump(summary, out, indent=1)
    print(table(runs))


if __name__ == "__main__":
    main()
