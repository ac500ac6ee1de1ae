#!/usr/bin/env python3
"""zpp on shaped links: the convergence harness's FSDP2 and DeepSpeed ZeRO-3 scripts (same GPT,
text and seeds) on simulated nodes joined by links of a known rate (tools/netbed), every mode
timed by the script itself, side by side in one run.

    bench/netbench/run.py --python VENV/bin/python [--frameworks fsdp2,deepspeed]
        [--rates 50,200,1000,10000] [--modes gloo,plain,zero++,int4,auto] [--steps 20]
        [--out build/netbench] [--results bench/results] [--wire-check]

Frameworks ddp and hsdp (torch DDP, and FSDP2 over a (nodes x ranks-per-node) mesh) run the
same script with the replicated modes of the convergence harness: plain, ar8, ar4+ef (zpp's
compressed all-reduce) and, for DDP, torch's own comm hooks over gloo (bf16-hook, powersgd),
whose inter-node bytes are the byte counter's ring model (bench/deepspeed/counted_backend.py),
not zpp's count, and so stay out of --wire-check. Their results go to
netbench_replicated_cpu.{json,md,png}, beside FSDP2's and DeepSpeed's netbench_cpu.*.

Each run is `tools/netbed run --nodes 2` with one torchrun per node (--nnodes 2, rendezvous on
node 0), 2 ranks per node, the ranks grouped by zpp's own topology discovery (each node has its
own host name; no ZPP_LOCAL_SIZE). gloo is the same script over gloo on the same links; the zpp
modes are convergence's (bench/convergence/run.py) and `auto`: int4's settings with
ZPP_TUNE=auto, the tuner choosing per call among NCCL, the techniques' subsets and 8 bits where
int4 has 4 (zero++'s bits): never lossier than int4, the lossiest fixed mode here. Per
framework, one 1-node run (all ranks on one node: no byte crosses a shaped link) gives the step
time with no communication between nodes.

Per run: the median step time over steps 5 to the end (each step's time from the script's
CSV), the final loss, zpp's counted inter-node bytes per step over the same steps, the bytes
that crossed the links (tc's counters, headers off) per step of the whole run, and the plans
zpp ran. Next to each, the floor: the inter-node bytes one node sends per step over the link
rate. Writes RESULTS/netbench_cpu.{json,md,png} (with --results) and OUT/summary.json.

--wire-check makes it the `net` test: it fails unless, for every run, the bytes that left the
nodes' links (tc, headers off) equal zpp's counted inter-node bytes within 2%; it exits 77 when
netbed cannot run here (not root).
"""
import argparse
import csv
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.realpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "convergence"))
import run as convergence  # noqa: E402 (bench/convergence/run.py: modes, scripts, zpp-run)

NETBED = os.path.join(ROOT, "tools", "netbed")
MODES = dict(convergence.MODES)
# The tuner logs its agreed figures and decision table (subsystem TUNE): kept in the summary.
MODES["auto"] = (convergence.MODES["int4"][0],
                 dict(convergence.MODES["int4"][1], ZPP_TUNE="auto", ZPP_DEBUG="INFO",
                      ZPP_DEBUG_SUBSYS="TUNE"))
ALL_MODES = ["gloo", "plain", "zero++", "int4", "auto"]
# DDP and HSDP: the compressed all-reduce's modes and torch's DDP comm hooks (DDP only).
REPLICATED = ("ddp", "hsdp")
REPLICATED_MODES = dict(convergence.REPLICATED_MODES)
# The all-reduce's tuner: `ar4+ef`'s settings with ZPP_TUNE=auto, choosing per call among plain,
# 8 bits and 4 bits with feedback (never lossier than ar4+ef).
REPLICATED_MODES["auto"] = (convergence.REPLICATED_MODES["ar4+ef"][0],
                            dict(convergence.REPLICATED_MODES["ar4+ef"][1], ZPP_TUNE="auto",
                                 ZPP_DEBUG="INFO", ZPP_DEBUG_SUBSYS="TUNE"))
ALL_REPLICATED_MODES = ["gloo"] + list(REPLICATED_MODES) + list(convergence.HOOKS)
# What auto's 8-bit choice runs under ar4+ef's settings (it keeps the feedback the user asked for:
# never lossier): only by name (--modes), to tell the bits' cost from the feedback's.
REPLICATED_MODES["ar8+ef"] = (["--qar=8"], dict(convergence.REPLICATED_MODES["ar4+ef"][1]))
RATES = [50, 200, 1000, 10000]
FIRST_TIMED_STEP = 5  # steps before it warm up (hpZ reuse starts at the third or fourth)
WIRE_TOLERANCE = 0.02
PORT = 29500
SKIP = 77


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="the python of the torch environment (default: this one)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=None, help="default: BUILD/netbench")
    parser.add_argument("--results", help="write netbench_cpu.{json,md,png} here")
    parser.add_argument("--readme", help="write the table into this markdown file's "
                        "netbench-table markers (make netbench: docs/benchmarks.md)")
    parser.add_argument("--frameworks", default=",".join(convergence.FRAMEWORKS))
    parser.add_argument("--rates", default=",".join(map(str, RATES)), help="Mbit/s, comma list")
    parser.add_argument("--delay-ms", type=float, default=0.5)
    parser.add_argument("--congestion-control", metavar="NAME",
                        help="TCP's in the testbed (tools/netbed; default: the machine's)")
    parser.add_argument("--modes", default=None,
                        help=f"default: {','.join(ALL_MODES)} (fsdp2, deepspeed), "
                        f"{','.join(ALL_REPLICATED_MODES)} (ddp, hsdp; powersgd: ddp only)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--ranks-per-node", type=int, default=2)
    parser.add_argument("--no-baseline", action="store_true", help="skip the 1-node runs")
    parser.add_argument("--wire-check", action="store_true",
                        help="fail unless the links' bytes equal zpp's counted bytes within 2%%")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per run")
    args = parser.parse_args(argv)
    args.out = args.out or os.path.join(args.build, "netbench")
    args.frameworks = [f for f in args.frameworks.split(",") if f]
    for framework in args.frameworks:
        if framework not in convergence.ALL_FRAMEWORKS:
            parser.error(f"unknown framework {framework!r} "
                         f"({', '.join(convergence.ALL_FRAMEWORKS)})")
    args.rates = [float(r) for r in args.rates.split(",") if r]
    if args.modes is None:
        args.modes = list(dict.fromkeys(
            m for f in args.frameworks
            for m in (ALL_REPLICATED_MODES if f in REPLICATED else ALL_MODES)))
    else:
        args.modes = [m for m in args.modes.split(",") if m]
    known = ["gloo"] + list(MODES) + list(REPLICATED_MODES) + list(convergence.HOOKS)
    for mode in args.modes:
        if mode not in known:
            parser.error(f"unknown mode {mode!r} ({', '.join(dict.fromkeys(known))})")
    if args.steps <= FIRST_TIMED_STEP + 2:
        parser.error(f"--steps must be more than {FIRST_TIMED_STEP + 2}")
    return args


def runs_mode(framework, mode):
    """Whether a framework has this mode: the replicated ones theirs, the others theirs."""
    if mode == "gloo":
        return True
    if framework in REPLICATED:
        return mode in REPLICATED_MODES or (mode in convergence.HOOKS and framework == "ddp")
    return mode in MODES


def counted_by_zpp(mode):
    """zpp counted this run's inter-node bytes (the hooks' are the byte counter's model)."""
    return mode != "gloo" and mode not in convergence.HOOKS


def results_stem(frameworks):
    return "netbench_replicated_cpu" if set(frameworks) <= set(REPLICATED) else "netbench_cpu"


def node_command(args, framework, mode, nodes, ranks_per_node, directory):
    """The command netbed runs on every node, and its environment."""
    torchrun = [args.python, "-m", "torch.distributed.run", "--nnodes", str(nodes),
                "--node-rank", "{node}", "--nproc-per-node", str(ranks_per_node),
                "--master-addr", "{master}", "--master-port", str(PORT),
                convergence.TRAIN[framework], "--device", "cpu", "--steps", str(args.steps),
                "--csv", os.path.join(directory, "loss.csv")] + convergence.PARALLEL.get(
                    framework, [])
    if framework == "hsdp":
        # The mesh of the 2-node runs in the 1-node run too: the same shards, no link between.
        torchrun += ["--local-size", str(args.ranks_per_node)]
    env = {k: v for k, v in os.environ.items()
           if k not in convergence.ZPP_VARIABLES and k not in ("ZPP_TUNE", "ZPP_LOCAL_SIZE")}
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(args.build, "python")] +
        [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["OMP_NUM_THREADS"] = "1"
    if framework == "deepspeed":
        env["DS_ACCELERATOR"] = "cpu"
    if mode == "gloo":
        return torchrun + ["--backend", "gloo"], env
    if mode in convergence.HOOKS:
        # The byte counter places global rank r on node r // ZPP_LOCAL_SIZE, as torchrun's
        # --node-rank numbering does here.
        env["ZPP_LOCAL_SIZE"] = str(ranks_per_node)
        return torchrun + ["--backend", "gloo", "--count-bytes"] + convergence.HOOKS[mode] + [
            "--stats-dir", os.path.join(directory, "stats")], env
    flags, variables = (REPLICATED_MODES if framework in REPLICATED else MODES)[mode]
    env.update(variables)
    command = [sys.executable, convergence.ZPP_RUN, "--lib",
               os.path.join(args.build, "lib", "libzpp.so")] + flags + ["--"]
    return command + torchrun + ["--backend", "zpp", "--stats-dir",
                                 os.path.join(directory, "stats")], env


def run_one(args, framework, mode, rate, nodes, ranks_per_node):
    name = f"{nodes}x{ranks_per_node}" + (f"-{rate:g}mbit" if rate else "")
    directory = os.path.join(args.out, "runs", framework, name, convergence.slug(mode))
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    command, env = node_command(args, framework, mode, nodes, ranks_per_node, directory)
    counters = os.path.join(directory, "links.json")
    bed = [sys.executable, NETBED, "run", "--nodes", str(nodes), "--rate-mbit", f"{rate:g}",
           "--delay-ms", f"{args.delay_ms:g}" if rate else "0", "--timeout",
           str(args.timeout), "--counters", counters, "--log-dir", directory] + (
               ["--congestion-control", args.congestion_control]
               if args.congestion_control else []) + ["--"]
    started = time.monotonic()
    done = subprocess.run(bed + command, env=env, check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    wall = time.monotonic() - started
    rows = []
    if os.path.exists(os.path.join(directory, "loss.csv")):
        with open(os.path.join(directory, "loss.csv")) as source:
            rows = [(int(r["step"]), float(r["loss"]), float(r["seconds"]))
                    for r in csv.DictReader(source)]
    stats_whole = mode == "gloo" or all(
        os.path.exists(os.path.join(directory, "stats", f"stats{r}.json"))
        for r in range(nodes * ranks_per_node))
    if done.returncode != 0 and not (len(rows) == args.steps and stats_whole):
        raise SystemExit(f"netbench: {framework} {mode} at {name} failed (exit "
                         f"{done.returncode}): {done.stdout.strip()[-500:]}; logs in {directory}")
    if done.returncode != 0:
        # Every step ran and every rank wrote its results; a process failed at exit (gloo's
        # teardown has been seen to abort: "terminate called without an active exception").
        print(f"netbench: {framework} {mode} at {name}: every step ran, but a process failed at "
              f"exit ({done.returncode}); kept, see {directory}", flush=True)
    with open(counters) as source:
        links = json.load(source)
    entry = summarize(args, framework, mode, rate, nodes, ranks_per_node, directory, rows, links,
                      wall)
    entry["exit_code"] = done.returncode
    return entry


def step_stats(directory, ranks, first, last):
    """Summed over ranks: inter-node bytes per step over steps [first, last], the whole run's
    inter-node bytes, and the calls per path and pass-throughs by reason at the end."""
    per_rank = []
    for rank in range(ranks):
        with open(os.path.join(directory, "stats", f"stats{rank}.json")) as source:
            per_rank.append(json.load(source)["steps"])

    def inter(snapshot, key="sent_bytes"):
        sent = snapshot.get(key, {})
        return sent.get("inter_node", 0) + sent.get("inter_rack", 0)

    steady = sum(inter(s[last]) - inter(s[first - 1]) for s in per_rank) / (last - first + 1)
    # On the wire too: zpp's own agreements and ZPP_TUNE=auto's calibration, outside the calls.
    total = sum(inter(s[-1]) + inter(s[-1], "control_sent_bytes") for s in per_rank)
    summed = {}
    for key in ("calls", "pass_through"):
        summed[key] = {}
        for steps in per_rank:
            for name, count in steps[-1].get(key, {}).items():
                summed[key][name] = summed[key].get(name, 0) + count
    return steady, total, summed


def summarize(args, framework, mode, rate, nodes, ranks_per_node, directory, rows, links, wall):
    times = [b[2] - a[2] for a, b in zip(rows, rows[1:])]  # times[i]: step i + 1
    timed = times[FIRST_TIMED_STEP - 1:]
    entry = {
        "framework": framework, "mode": mode, "rate_mbit": rate, "nodes": nodes,
        "ranks_per_node": ranks_per_node, "delay_ms": links["delay_applied_ms"],
        "congestion_control": links["congestion_control"],
        "queue_drops": sum(link[way]["drops"] for link in links["links"] for way in ("up", "down")),
        "median_step_s": statistics.median(timed), "steps": len(rows),
        "final_loss": convergence.final_loss(rows), "wall_s": round(wall, 1),
        "wire_bytes_per_step": links["payload_bytes"]["up"] / len(rows),
        "wire_bytes_total": links["payload_bytes"]["up"],
        "inter_node_bytes_per_step": None, "counted_bytes_total": None, "plans": None,
    }
    if mode == "auto":
        entry["tuner"] = tuner_lines(directory)
        entry["tuner_trials"], entry["tuner_recalibrations"] = trials_lines(directory)
    if mode != "gloo":  # (hooks: the byte counter's stats)
        steady, total, summed = step_stats(directory, nodes * ranks_per_node, FIRST_TIMED_STEP,
                                           len(rows) - 1)
        entry.update({"inter_node_bytes_per_step": steady, "counted_bytes_total": total,
                      "plans": summed})
        # DDP's construction broadcasts rank 0's state to every other rank: outside every step's
        # collectives and outside zpp's stats (the CPU backend's exact broadcast), on the wire.
        entry["uncounted_bytes"] = init_sync_bytes(directory) * (nodes - 1) * ranks_per_node
        entry["wire_over_counted"] = (
            links["payload_bytes"]["up"] / (total + entry["uncounted_bytes"])
            if total and counted_by_zpp(mode) else None)
    if rate:
        # The floor: what one node sends per step through its link at the rate.
        per_step = entry["inter_node_bytes_per_step"] or entry["wire_bytes_per_step"]
        entry["floor_comm_s"] = per_step / nodes * 8 / (rate * 1e6)
    return entry


def init_sync_bytes(directory):
    """The bytes DDP's construction broadcast from rank 0 (its script's log line), or 0."""
    with open(os.path.join(directory, "node0.log"), errors="replace") as log:
        for line in log:
            if line.startswith("ddp init sync: "):
                return int(line.split()[3])
    return 0


def tuner_lines(directory):
    """Rank 0's TUNE lines (its first communicator's): the agreed figures, the model's table, what
    the trials measured and the committed table."""
    found = {}
    with open(os.path.join(directory, "node0.log"), errors="replace") as log:
        for line in log:
            for key, marker in (("figures", "ZPP INFO calibrated"), ("table", "ZPP INFO decision"),
                                ("trials", "ZPP INFO trials measured"),
                                ("committed", "ZPP INFO committed")):
                if marker in line and key not in found:
                    found[key] = line.split("ZPP INFO ", 1)[1].strip()
    return found


def trials_lines(directory):
    """Every communicator's trials line on node 0 and its recalibrations, each once (a
    communicator's ranks log the same agreed line): (the trials lines, how many recalibrations).
    HSDP's all-reduces run on its replica groups, not on rank 0's first communicator
    (tuner_lines)."""
    found = {"ZPP INFO trials measured": [], "ZPP INFO measured calls took": []}
    with open(os.path.join(directory, "node0.log"), errors="replace") as log:
        for line in log:
            for marker, lines in found.items():
                text = line.split("ZPP INFO ", 1)[-1].strip()
                if marker in line and text not in lines:
                    lines.append(text)
    return found["ZPP INFO trials measured"], len(found["ZPP INFO measured calls took"])


def describe(entry):
    plans = entry.get("plans") or {}
    calls = ", ".join(f"{k} {v}" for k, v in sorted(plans.get("calls", {}).items()) if v)
    through = ", ".join(f"{k} {v}" for k, v in sorted(plans.get("pass_through", {}).items()) if v)
    return "; ".join(x for x in (calls and f"zpp: {calls}", through and f"NCCL: {through}") if x)


def mib(value):
    return "" if value is None else f"{value / 2**20:.2f}"


def table(summary):
    lines = [
        "| framework | rate | mode | median step | vs plain | comm (step - 1-node) | floor | "
        "inter-node MiB / step (counted) | wire MiB / step | final loss | plans (calls, all ranks) "
        "|",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for entry in summary["runs"]:
        framework, rate = entry["framework"], entry["rate_mbit"]
        base = summary["baseline"].get(framework)
        plain = next((e for e in summary["runs"] if e["framework"] == framework and
                      e["rate_mbit"] == rate and e["mode"] == "plain"), None)
        ratio = f"{entry['median_step_s'] / plain['median_step_s']:.2f}" if plain else ""
        comm = f"{entry['median_step_s'] - base:.3f} s" if base is not None else ""
        floor = f"{entry['floor_comm_s']:.3f} s" if entry.get("floor_comm_s") is not None else ""
        rate_text = f"{rate:g} Mbit/s" if rate else "1 node"
        lines.append(
            f"| {framework} | {rate_text} | {entry['mode']} | {entry['median_step_s']:.3f} s | "
            f"{ratio} | {comm} | {floor} | {mib(entry['inter_node_bytes_per_step'])} | "
            f"{mib(entry['wire_bytes_per_step'])} | {entry['final_loss']:.4f} | "
            f"{describe(entry)} |")
    return "\n".join(lines) + "\n"


def ratios(summary):
    """Per framework and rate: zero++'s step and communication time against plain's."""
    out = []
    for framework in summary["frameworks"]:
        base = summary["baseline"].get(framework)
        for rate in summary["rates"]:
            runs = {e["mode"]: e for e in summary["runs"]
                    if e["framework"] == framework and e["rate_mbit"] == rate}
            if "plain" not in runs:
                continue
            plain = runs["plain"]
            row = {"framework": framework, "rate_mbit": rate}
            for mode, entry in runs.items():
                row[f"{mode}_step_vs_plain"] = entry["median_step_s"] / plain["median_step_s"]
            zero = runs.get("zero++")
            if zero and base is not None and plain["inter_node_bytes_per_step"]:
                byte_ratio = zero["inter_node_bytes_per_step"] / plain["inter_node_bytes_per_step"]
                plain_comm = plain["median_step_s"] - base
                row["zero++_byte_ratio"] = byte_ratio
                row["zero++_comm_ratio"] = ((zero["median_step_s"] - base) / plain_comm
                                            if plain_comm > 0 else None)
            # The fixed zpp modes auto chooses among: not gloo, nor torch's hooks (a code change).
            fixed = [e["median_step_s"] for m, e in runs.items()
                     if m not in ("auto", "gloo") and m not in convergence.HOOKS]
            if "auto" in runs and fixed:
                row["auto_vs_fastest_fixed"] = runs["auto"]["median_step_s"] / min(fixed)
            out.append(row)
    return out


def plot(path, summary):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("netbench: matplotlib missing, no plot (tools/install-deps.sh installs it)")
        return
    frameworks = summary["frameworks"]
    figure, axes = plt.subplots(1, len(frameworks), figsize=(6.5 * len(frameworks), 4.6),
                                squeeze=False)
    for axis, framework in zip(axes[0], frameworks):
        modes = [m for m in summary["modes"]]
        for mode in modes:
            points = sorted((e["rate_mbit"], e["median_step_s"]) for e in summary["runs"]
                            if e["framework"] == framework and e["mode"] == mode)
            if points:
                axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=mode)
        base = summary["baseline"].get(framework)
        if base is not None:
            axis.axhline(base, color="black", linewidth=0.8, linestyle="--",
                         label="1 node (no link)")
        axis.set(xscale="log", xlabel="link rate per node (Mbit/s)",
                 ylabel="median step time (s)",
                 title=f"{framework}: 2 nodes x 2 CPU ranks, shaped links")
        axis.grid(alpha=0.3, which="both")
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def wire_failures(summary):
    failures = []
    for entry in summary["runs"]:
        ratio = entry.get("wire_over_counted")
        if ratio is None:
            continue
        if abs(ratio - 1) > WIRE_TOLERANCE:
            failures.append(f"{entry['framework']} {entry['mode']} at {entry['rate_mbit']:g} "
                            f"Mbit/s: the links carried {entry['wire_bytes_total']} payload "
                            f"bytes, zpp counted {entry['counted_bytes_total']} (and "
                            f"{entry['uncounted_bytes']} outside its stats) "
                            f"({ratio:.4f}x, at most {WIRE_TOLERANCE:.0%} apart)")
    return failures


def commit():
    done = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def main(argv):
    args = parse(argv)
    probe = subprocess.run([sys.executable, NETBED, "probe"], capture_output=True, text=True,
                           check=False)
    if probe.returncode != 0:
        print(probe.stdout.strip() or probe.stderr.strip())
        return SKIP if probe.returncode == SKIP else 1
    print(probe.stdout.strip(), flush=True)
    os.makedirs(args.out, exist_ok=True)
    started = time.monotonic()
    summary = {"machine": f"{platform.node()}: {os.cpu_count()} cores, {platform.machine()}, "
               "no GPU (CPU ranks)", "commit": commit(),
               "date": datetime.date.today().isoformat(), "frameworks": args.frameworks,
               "rates": args.rates, "modes": args.modes, "steps": args.steps,
               "timed_steps": f"{FIRST_TIMED_STEP}-{args.steps - 1}",
               "delay_ms_asked": args.delay_ms, "baseline": {}, "runs": []}
    plan = [(f, "plain", 0) for f in args.frameworks] if not args.no_baseline else []
    plan += [(f, m, r) for f in args.frameworks for r in args.rates for m in args.modes
             if runs_mode(f, m)]
    for index, (framework, mode, rate) in enumerate(plan, 1):
        if rate == 0:
            entry = run_one(args, framework, mode, 0, 1, args.nodes * args.ranks_per_node)
            summary["baseline"][framework] = entry["median_step_s"]
            summary.setdefault("baseline_runs", []).append(entry)
        else:
            entry = run_one(args, framework, mode, rate, args.nodes, args.ranks_per_node)
            summary["runs"].append(entry)
        where = f"{rate:g} Mbit/s" if rate else "1 node"
        ratio = entry.get("wire_over_counted")
        print(f"[{index}/{len(plan)}] {framework} {mode} {where}: median step "
              f"{entry['median_step_s']:.3f} s, loss {entry['final_loss']:.4f}"
              + (f", wire/counted {ratio:.4f}" if ratio else "") + f", {entry['wall_s']:.0f} s",
              flush=True)
    summary["wall_seconds"] = round(time.monotonic() - started)
    summary["ratios"] = ratios(summary)
    text = table(summary)
    with open(os.path.join(args.out, "summary.json"), "w") as out:
        json.dump(summary, out, indent=1)
    if args.results:
        os.makedirs(args.results, exist_ok=True)
        stem = os.path.join(args.results, results_stem(args.frameworks))
        with open(stem + ".json", "w") as out:
            json.dump(summary, out, indent=1)
        with open(stem + ".md", "w") as out:
            out.write(f"# zpp on shaped links (tools/netbed), CPU ranks\n\n- {summary['machine']}; "
                      f"commit {summary['commit']}; {summary['date']}\n- {args.nodes} nodes x "
                      f"{args.ranks_per_node} ranks, {args.steps} steps, median over steps "
                      f"{summary['timed_steps']}; wall {summary['wall_seconds']} s\n\n{text}")
        plot(stem + ".png", summary)
    if args.readme:
        convergence.update_readme(args.readme, text, "netbench-table", "make netbench")
    print(text, end="")
    for row in summary["ratios"]:
        print("netbench: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                       for k, v in row.items() if v is not None))
    print(f"netbench: {summary['wall_seconds']} s in all; {args.out}/summary.json")
    if args.wire_check:
        failures = wire_failures(summary)
        for failure in failures:
            print(f"netbench wire check FAILED: {failure}")
        if failures:
            return 1
        print("netbench wire check passed: the links carried zpp's counted bytes within 2%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
