#!/usr/bin/env python3
"""Two builds of zpp side by side on the shaped-link testbed: one framework, rate and mode,
interleaved A B, B A, A B, ... for --rounds rounds, each run by its own tree's bench/netbench/run.py
(so each build runs its own scripts). Per run, run.py's median step time (steps 5 to the end);
per round, B - A; over the rounds, the mean difference, its standard error and a verdict: "no
slower" when B - A is at most two standard errors above zero.

    bench/netbench/ab.py --python VENV/bin/python --tree-a OLD_TREE --tree-b NEW_TREE
        [--framework fsdp2] [--rate 50] [--mode zero++] [--steps 20] [--rounds 5]
        --out DIR

Each tree is a checkout with its build in TREE/build. Writes DIR/ab.json and prints a markdown
table. Needs root (tools/netbed), like make netbench.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), ".."))
import quantities  # noqa: E402 (bench/quantities.py: the mean and its standard error)


def commit_of(tree):
    return subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], text=True,
                          capture_output=True, check=False).stdout.strip()


def one_run(args, tree, out):
    os.makedirs(out, exist_ok=True)
    command = [sys.executable, os.path.join(tree, "bench", "netbench", "run.py"),
               "--python", args.python, "--build", os.path.join(tree, "build"), "--out", out,
               "--results", out, "--frameworks", args.framework, "--rates", str(args.rate),
               "--modes", args.mode, "--no-baseline", "--steps", str(args.steps)]
    with open(os.path.join(out, "log.txt"), "w") as log:
        subprocess.run(command, cwd=tree, stdout=log, stderr=subprocess.STDOUT, check=True,
                       timeout=args.timeout)
    with open(os.path.join(out, "netbench_cpu.json")) as summary:
        (run,) = json.load(summary)["runs"]
    return run["median_step_s"]


def compare(rounds):
    mean, error = quantities.mean_and_standard_error(r["b"] - r["a"] for r in rounds)
    return {"mean_b_minus_a_s": mean, "standard_error_s": error,
            "mean_a_s": statistics.mean(r["a"] for r in rounds),
            "mean_b_s": statistics.mean(r["b"] for r in rounds),
            "verdict": "no slower" if mean <= 2 * error else "slower"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", required=True, help="the pinned torch's python")
    parser.add_argument("--tree-a", required=True, help="the reference checkout (A)")
    parser.add_argument("--tree-b", required=True, help="the checkout under test (B)")
    parser.add_argument("--framework", default="fsdp2")
    parser.add_argument("--rate", type=int, default=50, help="Mbit/s")
    parser.add_argument("--mode", default="zero++")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=int, default=900, help="seconds per run")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error("--rounds must be at least 2: one round has no standard error")
    trees = {"a": os.path.realpath(args.tree_a), "b": os.path.realpath(args.tree_b)}
    rounds = []
    for index in range(args.rounds):
        order = "ab" if index % 2 == 0 else "ba"
        times = {side: one_run(args, trees[side], os.path.join(args.out, f"{side}-{index + 1}"))
                 for side in order}
        rounds.append({"round": index + 1, "order": order, **times})
        print(f"round {index + 1} ({order}): A {times['a']:.4f} s, B {times['b']:.4f} s",
              flush=True)
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join(sys.argv), "framework": args.framework, "rate_mbit": args.rate,
              "mode": args.mode, "steps": args.steps,
              "a": {"tree": trees["a"], "commit": commit_of(trees["a"])},
              "b": {"tree": trees["b"], "commit": commit_of(trees["b"])},
              "rounds": rounds, **compare(rounds)}
    with open(os.path.join(args.out, "ab.json"), "w") as out:
        json.dump(result, out, indent=1)
    print("| round | A | B | B - A |\n|---|---:|---:|---:|")
    for r in rounds:
        print(f"| {r['round']} | {r['a']:.3f} s | {r['b']:.3f} s | {r['b'] - r['a']:+.3f} s |")
    print(f"| mean | {result['mean_a_s']:.3f} s | {result['mean_b_s']:.3f} s | "
          f"{result['mean_b_minus_a_s']:+.4f} s (standard error {result['standard_error_s']:.4f} s):"
          f" {result['verdict']} |")


if __name__ == "__main__":
    main()
