#!/usr/bin/env python3
"""zpp's convergence harness: the same GPT, text, seeds and data order trained with unmodified
FSDP2 in every zpp mode, on CPU processes as simulated nodes, plus the same script over gloo.

    bench/convergence/run.py --python VENV/bin/python [--steps 100] [--out build/convergence]

Each mode is one `torchrun` of bench/fsdp/train_fsdp2.py through tools/zpp-run (its flags set
the ZPP_* variables, and its optimizer hook advances the step epoch), with the torch backend
`zpp` (build/python/zpp_torch) and ZPP_LOCAL_SIZE ranks per simulated node. The reference is the
same script over gloo. Writes, under --out: loss_<mode>.csv per mode, losses.png (the curves side
by side), summary.json, table.md (and, with --readme, that table into the README between its
convergence-table markers). One progress line per mode.

--device cuda runs the same on one GPU over NCCL with libzpp.so preloaded (every rank on GPU 0
with its own NCCL_HOSTID, as tools/gpu-check.sh does), against plain NCCL instead of gloo; the
plugin counts off-node bytes for zpp's own plans only (NCCL's pass-through traffic is not seen).
Written for the first session with a GPU; not run yet.

--check makes it a test: it fails unless plain through zpp equals gloo within 1e-5 relative at
every step (up to 50), every zpp mode's stats show the engine took all-gathers (qwZ or hpZ
modes) and reduce-scatters (qgZ modes), and the step epoch advanced once per optimizer step.
"""
import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.realpath(os.path.join(HERE, "..", ".."))
TRAIN = os.path.join(ROOT, "bench", "fsdp", "train_fsdp2.py")
ZPP_RUN = os.path.join(ROOT, "tools", "zpp-run")

# Mode name -> zpp-run flags and extra variables. "plain" has every technique off.
INT4 = {"ZPP_BLOCK": "32", "ZPP_QWZ_ROTATE": "1"}
MODES = {
    "plain": ([], {}),
    "qwz8": (["--qwz=8"], {}),
    "qwz4": (["--qwz=4"], INT4),
    "hpz": (["--hpz"], {}),
    "qgz8/4": (["--qgz"], {"ZPP_QGZ_BITS_INTRA": "8", "ZPP_QGZ_BITS_INTER": "4"}),
    "zero++": (["--preset", "zero++"], {}),
    "int4": (["--qwz=4", "--hpz", "--qgz"],
             dict(INT4, ZPP_QGZ_BITS_INTRA="4", ZPP_QGZ_BITS_INTER="4")),
}
# The reference run: the same script without zpp, over gloo on the CPU, NCCL on a GPU.
REFERENCE = {"cpu": "gloo", "cuda": "nccl"}
FIRST_STEPS = 50  # gloo_max_rel_diff covers these
# Inter-node bytes per step are averaged from this step on (0-based): hpZ reuse starts in the
# third step (the agreement is read one epoch after it is made).
STEADY_FROM = 2
ZPP_VARIABLES = ("ZPP_QWZ", "ZPP_QWZ_BITS", "ZPP_HPZ", "ZPP_QGZ", "ZPP_QGZ_BITS_INTRA",
                 "ZPP_QGZ_BITS_INTER", "ZPP_BLOCK", "ZPP_QWZ_ROTATE", "ZPP_STATS")


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="the python of the torch environment (default: this one)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=None, help="default: BUILD/convergence")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma list of {', '.join(MODES)}")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--local-size", type=int, default=2, help="ranks per simulated node")
    parser.add_argument("--device", choices=sorted(REFERENCE), default="cpu")
    parser.add_argument("--no-gloo", "--no-reference", dest="no_reference", action="store_true",
                        help="skip the reference run (gloo on the CPU, NCCL on a GPU)")
    parser.add_argument("--readme", help="write the table into this README's markers")
    parser.add_argument("--check", action="store_true", help="fail unless the checks hold")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per run")
    parser.add_argument("train_args", nargs="*", help="after --: more train_fsdp2.py flags")
    args = parser.parse_args(argv)
    args.out = args.out or os.path.join(args.build, "convergence")
    args.modes = [m for m in args.modes.split(",") if m]
    for mode in args.modes:
        if mode not in MODES:
            parser.error(f"unknown mode {mode!r} (modes: {', '.join(MODES)})")
    return args


def slug(mode):
    return mode.replace("/", "-").replace("+", "p")


def run_one(args, mode):
    """Trains once; returns (loss rows, per-rank stats or None, wall seconds)."""
    directory = os.path.join(args.out, "runs", slug(mode))
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    csv_path = os.path.join(directory, "loss.csv")
    torchrun = [args.python, "-m", "torch.distributed.run", "--nproc-per-node", str(args.ranks),
                "--standalone", TRAIN, "--device", args.device, "--steps", str(args.steps),
                "--csv", csv_path] + args.train_args
    if args.device == "cuda":
        torchrun.append("--one-gpu")
    env = {k: v for k, v in os.environ.items() if k not in ZPP_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(args.build, "python")] + [p for p in env.get("PYTHONPATH", "").split(
            os.pathsep) if p])
    env["OMP_NUM_THREADS"] = "1"
    reference = mode == REFERENCE[args.device]
    if reference:
        command = torchrun + ["--backend", mode]
    else:
        flags, variables = MODES[mode]
        env.update(variables)
        env["ZPP_LOCAL_SIZE"] = str(args.local_size)
        stats_dir = os.path.join(directory, "stats")
        command = [sys.executable, ZPP_RUN, "--lib", os.path.join(args.build, "lib", "libzpp.so")]
        backend = ["--backend", "zpp"] if args.device == "cpu" else []
        command += flags + ["--"] + torchrun + backend + ["--stats-dir", stats_dir]
    start = time.monotonic()
    with open(os.path.join(directory, "log.txt"), "w") as log:
        finished = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=args.timeout, check=False)
    wall = time.monotonic() - start
    if finished.returncode != 0:
        raise SystemExit(f"convergence: mode {mode} failed (exit {finished.returncode}); see "
                         f"{directory}/log.txt")
    with open(csv_path) as source:
        rows = [(int(r["step"]), float(r["loss"]), float(r["seconds"]))
                for r in csv.DictReader(source)]
    stats = None
    if not reference:
        stats = []
        for rank in range(args.ranks):
            with open(os.path.join(directory, "stats", f"stats{rank}.json")) as source:
                stats.append(json.load(source)["steps"])
    return rows, stats, wall


def final_loss(rows):
    tail = max(1, len(rows) // 10)
    return sum(loss for _, loss, _ in rows[-tail:]) / tail


def summarize_stats(stats, steps):
    """Sums over ranks: inter-node bytes per optimizer step from STEADY_FROM on, hpZ record,
    calls per path and pass-throughs by reason over the whole run."""
    def inter(snapshot):
        sent = snapshot["sent_bytes"]
        return sent["inter_node"] + sent["inter_rack"]

    first = min(STEADY_FROM, steps - 1)
    per_step = sum(inter(rank[-1]) - (inter(rank[first - 1]) if first > 0 else 0)
                   for rank in stats) / (steps - first)
    last = [rank[-1] for rank in stats]
    reasons = {}
    for snapshot in last:
        for reason, count in snapshot["pass_through"].items():
            reasons[reason] = reasons.get(reason, 0) + count
    calls = {}
    for snapshot in last:
        for path, count in snapshot["calls"].items():
            calls[path] = calls.get(path, 0) + count
    return {
        "inter_node_bytes_per_step": per_step,
        "hpz_hits": sum(s["hpz_hits"] for s in last),
        "hpz_misses": sum(s["hpz_misses"] for s in last),
        "hpz_verify_failures": sum(s["hpz_verify_failures"] for s in last),
        "calls": calls,
        "pass_through": reasons,
        "step_epoch": last[0]["step_epoch"],
    }


def write_csv(path, rows):
    with open(path, "w") as out:
        out.write("step,loss,seconds\n")
        for step, loss, seconds in rows:
            out.write(f"{step},{loss:.8f},{seconds:.3f}\n")


def plot(path, curves, plain, title):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("convergence: matplotlib missing, no plot (tools/install-deps.sh installs it)")
        return None
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (mode, rows) in enumerate(curves.items()):
        steps = [r[0] for r in rows]
        color = colors[index % len(colors)]  # one color per mode in both panels
        left.plot(steps, [r[1] for r in rows], label=mode, linewidth=1, color=color)
        if plain is not None and mode != "plain":
            base = {r[0]: r[1] for r in plain}
            right.plot(steps, [100 * (r[1] - base[r[0]]) / base[r[0]] for r in rows],
                       label=mode, linewidth=1, color=color)
    left.set(xlabel="optimizer step", ylabel="training loss (mean over ranks)",
             title=f"FSDP2 GPT on fortunes text, {title}")
    right.set(xlabel="optimizer step", ylabel="loss against plain (%)",
              title="difference from plain, per step")
    right.axhline(0, color="black", linewidth=0.5)
    for axis in (left, right):
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return path


def format_bytes(value):
    return f"{value / 2**20:.2f} MiB"


def table(summary):
    lines = [
        "| mode | final loss | vs plain | inter-node bytes / step | vs plain | hpZ hits | "
        "verify failures | pass-throughs (reason: calls, all ranks) | wall |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    reference = summary.get("reference")
    if reference:
        lines.append(f"| {reference['mode']} (reference) | {reference['final_loss']:.4f} | "
                     f"{reference['delta_pct']:+.3f}% | | | | | | "
                     f"{reference['wall_seconds']:.0f} s |")
    for entry in summary["modes"]:
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(entry["pass_through"].items()))
        ratio = entry.get("inter_node_vs_plain")
        lines.append(
            f"| {entry['mode']} | {entry['final_loss']:.4f} | {entry['delta_pct']:+.3f}% | "
            f"{format_bytes(entry['inter_node_bytes_per_step'])} | "
            f"{'' if ratio is None else f'{ratio:.3f}'} | {entry['hpz_hits']} | "
            f"{entry['hpz_verify_failures']} | {reasons} | {entry['wall_seconds']:.0f} s |")
    return "\n".join(lines) + "\n"


def update_readme(path, text):
    begin, end = "<!-- convergence-table:begin", "<!-- convergence-table:end -->"
    with open(path) as source:
        readme = source.read()
    pattern = re.compile(re.escape(begin) + r".*?-->\n.*?" + re.escape(end), re.S)
    if not pattern.search(readme):
        raise SystemExit(f"convergence: {path} has no {begin} ... {end} markers")
    block = f"{begin} (make convergence) -->\n{text}{end}"
    with open(path, "w") as out:
        out.write(pattern.sub(lambda _: block, readme))


def checks(summary, curves, reference_rows):
    failures = []
    if reference_rows is not None and "plain" in curves:
        name = summary["reference"]["mode"]
        difference = summary[f"{name}_max_rel_diff"]
        if difference > 1e-5:
            failures.append(f"plain through zpp differs from {name} by {difference:.3g} "
                            "relative (at most 1e-5)")
    for entry in summary["modes"]:
        flags = MODES[entry["mode"]][0]
        calls = entry["calls"]
        wants_gather = any(f.startswith(("--qwz", "--hpz")) for f in flags) or "--preset" in flags
        wants_scatter = "--qgz" in flags or "--preset" in flags
        if wants_gather and calls.get("qwz", 0) + calls.get("hpz", 0) == 0:
            failures.append(f"{entry['mode']}: no all-gather went through zpp's plans")
        if wants_scatter and calls.get("qgz", 0) == 0:
            failures.append(f"{entry['mode']}: no reduce-scatter went through qgZ")
        # zpp-run's optimizer hook, once per step: hpZ may reuse only within a step.
        if entry["step_epoch"] != summary["steps"]:
            failures.append(f"{entry['mode']}: the step epoch is {entry['step_epoch']} after "
                            f"{summary['steps']} optimizer steps")
    return failures


def main(argv):
    args = parse(argv)
    os.makedirs(args.out, exist_ok=True)
    reference_mode = REFERENCE[args.device]
    runs = ([] if args.no_reference else [reference_mode]) + args.modes
    curves, summary = {}, {"framework": "fsdp2", "device": args.device, "ranks": args.ranks,
                           "ranks_per_node": args.local_size, "steps": args.steps, "modes": []}
    reference_rows = None
    started = time.monotonic()
    for index, mode in enumerate(runs, 1):
        rows, stats, wall = run_one(args, mode)
        write_csv(os.path.join(args.out, f"loss_{slug(mode)}.csv"), rows)
        line = (f"[{index}/{len(runs)}] {mode}: {len(rows)} steps, loss {rows[0][1]:.4f} -> "
                f"{final_loss(rows):.4f}, {wall:.0f} s")
        if mode == reference_mode:
            reference_rows = rows
            summary["reference"] = {"mode": mode, "final_loss": final_loss(rows),
                                    "wall_seconds": wall}
        else:
            curves[mode] = rows
            entry = {"mode": mode, "framework": "fsdp2",
                     "backend": "zpp" if args.device == "cpu" else "nccl+libzpp.so",
                     "final_loss": final_loss(rows), "wall_seconds": wall,
                     "seconds_per_step": rows[-1][2] / max(1, len(rows) - 1),
                     "loss_csv": os.path.join(args.out, f"loss_{slug(mode)}.csv")}
            entry.update(summarize_stats(stats, len(rows)))
            summary["modes"].append(entry)
            line += (f", inter-node {format_bytes(entry['inter_node_bytes_per_step'])}/step, "
                     f"hpZ hits {entry['hpz_hits']}")
        print(line, flush=True)

    plain = curves.get("plain")
    base = next((e for e in summary["modes"] if e["mode"] == "plain"), None)
    for entry in summary["modes"]:
        entry["delta_pct"] = (100 * (entry["final_loss"] - base["final_loss"]) /
                              base["final_loss"]) if base else 0.0
        if base and base["inter_node_bytes_per_step"]:
            entry["inter_node_vs_plain"] = (entry["inter_node_bytes_per_step"] /
                                            base["inter_node_bytes_per_step"])
    difference_key = f"{reference_mode}_max_rel_diff"  # gloo_max_rel_diff on the CPU
    summary[difference_key] = None
    if reference_rows is not None and plain is not None:
        first = min(FIRST_STEPS, len(plain), len(reference_rows))
        summary[difference_key] = max(abs(p[1] - g[1]) / abs(g[1])
                                      for p, g in zip(plain[:first], reference_rows[:first]))
        summary["reference_steps_compared"] = first
        summary["reference"]["delta_pct"] = (100 * (summary["reference"]["final_loss"] -
                                                    final_loss(plain)) / final_loss(plain))
    summary["wall_seconds"] = time.monotonic() - started
    where = ("CPU ranks through zpp" if args.device == "cpu" else
             "one GPU, NCCL with libzpp.so")
    summary["plot"] = plot(os.path.join(args.out, "losses.png"), curves, plain, where)
    text = table(summary)
    with open(os.path.join(args.out, "table.md"), "w") as out:
        out.write(text)
    with open(os.path.join(args.out, "summary.json"), "w") as out:
        json.dump(summary, out, indent=2)
    if args.readme:
        update_readme(args.readme, text)
    print(text, end="")
    if summary[difference_key] is not None:
        print(f"plain through zpp against {reference_mode}: max relative difference "
              f"{summary[difference_key]:.3g} over the first "
              f"{summary['reference_steps_compared']} steps; final loss "
              f"{summary['reference']['delta_pct']:+.4f}%")
    print(f"convergence: {summary['wall_seconds']:.0f} s in all; {args.out}/summary.json")
    if args.check:
        failures = checks(summary, curves, reference_rows)
        for failure in failures:
            print(f"convergence check FAILED: {failure}")
        if failures:
            return 1
        print("convergence checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
