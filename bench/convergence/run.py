#!/usr/bin/env python3
"""zpp's convergence harness: the same GPT, text, seeds and data order trained with unmodified
FSDP2 and unmodified DeepSpeed ZeRO-3 in every zpp mode, on CPU processes as simulated nodes,
plus the same scripts over gloo, and DeepSpeed's own hpZ beside zpp's.

    bench/convergence/run.py --python VENV/bin/python [--frameworks fsdp2,deepspeed]
                             [--steps 100] [--out build/convergence]

Each mode is one `torchrun` of the framework's script (bench/fsdp/train_fsdp2.py,
bench/deepspeed/train_zero3.py) through tools/zpp-run (its flags set the ZPP_* variables, and
its optimizer hook advances the step epoch: DeepSpeed's ZeRO-3 optimizer steps the torch AdamW it
wraps, so the same hook sees DeepSpeed's step), with the torch backend `zpp`
(build/python/zpp_torch) and ZPP_LOCAL_SIZE ranks per simulated node. The reference is the same
script over gloo. DeepSpeed also runs `ds-hpz`: its own hpZ (zero_hpz_partition_size = ranks per
simulated node) over gloo, with no zpp, its bytes counted by bench/deepspeed/counted_backend.py
with the engine's ring model. Writes, under --out: loss_<framework>_<mode>.csv per run,
losses_<framework>.png (the curves side by side), summary.json, table.md (and, with --readme,
that table into a markdown file between its convergence-table markers: docs/benchmarks.md under
`make convergence`). One progress line per run.

--device cuda runs the same on one GPU over NCCL with libzpp.so preloaded (every rank on GPU 0
with its own NCCL_HOSTID, as tools/gpu-check.sh does), against plain NCCL instead of gloo; the
plugin counts off-node bytes for zpp's own plans only (NCCL's pass-through traffic is not seen).
DeepSpeed's anchor on a GPU is its full ZeRO++ (`ds-zero++`: quantized weights and gradients and
hpZ, over NCCL without zpp); on the CPU it waits for a GPU (DeepSpeed's CPU accelerator has no
quantizer op). Written for the first session with a GPU; not run yet.

--check makes it a test: it fails unless, for each framework, plain through zpp equals gloo
within 1e-5 relative at every step (up to 50), every zpp mode's stats show the engine took
all-gathers (qwZ or hpZ modes) and reduce-scatters (qgZ modes), hpZ modes hit with no
verification failure, zero++ ends within 1% of plain, the step epoch advanced once per optimizer
step, and (when both ran) zpp's hpz moves no more inter-node bytes than ds-hpz at equal loss.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), ".."))
import quantities  # noqa: E402 (bench/quantities.py: each reported quantity, defined once)

DEFAULT_SEED = 1234  # bench/fsdp/gpt_text.py's --seed default
HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.realpath(os.path.join(HERE, "..", ".."))
TRAIN = {"fsdp2": os.path.join(ROOT, "bench", "fsdp", "train_fsdp2.py"),
         "deepspeed": os.path.join(ROOT, "bench", "deepspeed", "train_zero3.py"),
         "ddp": os.path.join(ROOT, "bench", "fsdp", "train_fsdp2.py"),
         "hsdp": os.path.join(ROOT, "bench", "fsdp", "train_fsdp2.py")}
# Replicated data parallelism (issue 28): the same script, another wrapping.
PARALLEL = {"ddp": ["--parallel", "ddp"], "hsdp": ["--parallel", "hsdp"]}
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
    # Issue 26: error feedback for gradients (ZPP_QGZ_EF) and weight deltas (ZPP_QWZ_DELTA).
    "int4+ef": (["--qwz=4", "--hpz", "--qgz"],
                dict(INT4, ZPP_QGZ_BITS_INTRA="4", ZPP_QGZ_BITS_INTER="4", ZPP_QGZ_EF="1")),
    "qgz8/2": (["--qgz"], {"ZPP_QGZ_BITS_INTRA": "8", "ZPP_QGZ_BITS_INTER": "2"}),
    "qgz8/2+ef": (["--qgz"], {"ZPP_QGZ_BITS_INTRA": "8", "ZPP_QGZ_BITS_INTER": "2",
                              "ZPP_QGZ_EF": "1"}),
    "delta4": (["--qwz=8", "--hpz", "--qgz"],
               {"ZPP_QWZ_DELTA": "1", "ZPP_QWZ_DELTA_BITS": "4", "ZPP_QGZ_BITS_INTRA": "8",
                "ZPP_QGZ_BITS_INTER": "4"}),
    "delta4+ef2": (["--qwz=8", "--hpz", "--qgz"],
                   {"ZPP_QWZ_DELTA": "1", "ZPP_QWZ_DELTA_BITS": "4", "ZPP_QGZ_BITS_INTRA": "8",
                    "ZPP_QGZ_BITS_INTER": "2", "ZPP_QGZ_EF": "1"}),
    # delta4+ef2 with every collective through zpp (ZPP_MIN_BYTES=0): at this model's size the
    # default 1 MiB floor leaves the root module's small parameters, about 0.03 of plain's bytes,
    # uncompressed.
    "delta4+ef2+min0": (["--qwz=8", "--hpz", "--qgz"],
                        {"ZPP_QWZ_DELTA": "1", "ZPP_QWZ_DELTA_BITS": "4", "ZPP_QGZ_BITS_INTRA": "8",
                         "ZPP_QGZ_BITS_INTER": "2", "ZPP_QGZ_EF": "1", "ZPP_MIN_BYTES": "0"}),
    # 2-bit weight deltas with 4-bit gradients and their error feedback, every collective through
    # zpp: at or under 0.12 of plain's bytes without 2-bit gradients.
    "delta2+ef4+min0": (["--qwz=8", "--hpz", "--qgz"],
                        {"ZPP_QWZ_DELTA": "1", "ZPP_QWZ_DELTA_BITS": "2", "ZPP_QGZ_BITS_INTRA": "8",
                         "ZPP_QGZ_BITS_INTER": "4", "ZPP_QGZ_EF": "1", "ZPP_MIN_BYTES": "0"}),
    # delta4+ef2+min0 with 64-element blocks: a scale per 64 elements cuts the 2-bit gradients'
    # error (their amax is nearer each element's size) for 0.5 bit per element more.
    "delta4+ef2+min0+b64": (["--qwz=8", "--hpz", "--qgz"],
                            {"ZPP_QWZ_DELTA": "1", "ZPP_QWZ_DELTA_BITS": "4",
                             "ZPP_QGZ_BITS_INTRA": "8", "ZPP_QGZ_BITS_INTER": "2",
                             "ZPP_QGZ_EF": "1", "ZPP_MIN_BYTES": "0", "ZPP_BLOCK": "64"}),
    # 3-bit gradients (qgZ 8/3, int3: -3..3, a third of int2's step) with error feedback and
    # 4-bit weight deltas, every collective through zpp: about 0.115 of plain's bytes, between
    # the 2-bit modes (the loss pulled 0.2% to 0.9% off plain's) and the 4-bit ones (about 0.13).
    "delta4+ef3+min0": (["--qwz=8", "--hpz", "--qgz"],
                        {"ZPP_QWZ_DELTA": "1", "ZPP_QWZ_DELTA_BITS": "4", "ZPP_QGZ_BITS_INTRA": "8",
                         "ZPP_QGZ_BITS_INTER": "3", "ZPP_QGZ_EF": "1", "ZPP_MIN_BYTES": "0"}),
    # The other way to the same bytes: 3-bit weight deltas with 4-bit gradients and their
    # feedback.
    "delta3+ef4+min0": (["--qwz=8", "--hpz", "--qgz"],
                        {"ZPP_QWZ_DELTA": "1", "ZPP_QWZ_DELTA_BITS": "3", "ZPP_QGZ_BITS_INTRA": "8",
                         "ZPP_QGZ_BITS_INTER": "4", "ZPP_QGZ_EF": "1", "ZPP_MIN_BYTES": "0"}),
    # 3-bit gradients with feedback, as delta4+ef3+min0, but 4-bit weights sent whole (no
    # deltas; rotated, at the default block): every delta mode ended below plain's loss while
    # int4+ef (4-bit weights whole, 4-bit gradients) did not, and at blocks of 256 the bytes
    # come to about 0.113 of plain's.
    "int4+ef3+min0": (["--qwz=4", "--hpz", "--qgz"],
                      {"ZPP_QWZ_ROTATE": "1", "ZPP_QGZ_BITS_INTRA": "8", "ZPP_QGZ_BITS_INTER": "3",
                       "ZPP_QGZ_EF": "1", "ZPP_MIN_BYTES": "0"}),
    "delta2+ef2": (["--qwz=8", "--hpz", "--qgz"],
                   {"ZPP_QWZ_DELTA": "1", "ZPP_QWZ_DELTA_BITS": "2", "ZPP_QGZ_BITS_INTRA": "8",
                    "ZPP_QGZ_BITS_INTER": "2", "ZPP_QGZ_EF": "1"}),
}
# Runs at other seeds: plain alone (--plain-seeds: the spread of plain's final loss), or every
# mode (--seeds: paired against plain at the same seed, docs/benchmarks.md "Quantities"). A run
# at seed 1234 + k is named <mode>@seed<k>.
SEED_SUFFIX = "@seed"
# DeepSpeed's own techniques, without zpp (LOCAL: ranks per simulated node): train_zero3.py
# flags per device; on the CPU, over gloo with the bytes counted.
DEEPSPEED_OWN = {
    "ds-hpz": {"cpu": ["--backend", "gloo", "--count-bytes", "--ds-hpz", "LOCAL"],
               "cuda": ["--backend", "nccl", "--ds-hpz", "LOCAL"]},
    "ds-zero++": {"cuda": ["--backend", "nccl", "--ds-zeropp", "LOCAL"]},
}
# DDP's and HSDP's modes: the compressed all-reduce, and the anchors users pick today, torch's
# own DDP comm hooks over gloo with the bytes counted (DDP only: FSDP2 takes no DDP comm hook).
# HSDP's zero++ on the shard group adds nothing at 2 nodes x 2: that group is inside one node.
# Every all-reduce through zpp (ZPP_MIN_BYTES=0): at this model's size the default 1 MiB floor
# leaves HSDP's root-module shard (74112 fp32, 4.5% of the bytes) uncompressed (ar8 0.287 of
# plain's bytes with it, 0.254 without).
REPLICATED_MODES = {
    "plain": ([], {}),
    "ar8": (["--qar=8"], {"ZPP_MIN_BYTES": "0"}),
    "ar4+ef": (["--qar=4"], {"ZPP_QAR_EF": "1", "ZPP_MIN_BYTES": "0"}),
}
HOOKS = {"bf16-hook": ["--comm-hook", "bf16"], "powersgd": ["--comm-hook", "powersgd"]}
WAITS_FOR_GPU = "waits for a GPU: DeepSpeed's CPU accelerator has no quantizer op"
FRAMEWORKS = ("fsdp2", "deepspeed")
ALL_FRAMEWORKS = FRAMEWORKS + ("ddp", "hsdp")
# The reference run: the same script without zpp, over gloo on the CPU, NCCL on a GPU.
REFERENCE = {"cpu": "gloo", "cuda": "nccl"}
ZEROPP_LOSS_PCT = 1.0  # zero++'s final loss against plain's, at most (issue 15)
LOSSLESS_PCT = 0.05  # hpz against ds-hpz: both lossless
FIRST_STEPS = 50  # each reference's max_rel_diff covers these
# Inter-node bytes per step are averaged from this step on (0-based), as in every table since
# 2026-11-23. zpp's hpZ pairs within each step and hits from the first (issue 44); the steps
# before these also carry set-up (the configuration agreement, the first epoch record) and, under
# DeepSpeed, a first step that gathers each large parameter once only.
STEADY_FROM = {"fsdp2": 2, "deepspeed": 3, "ddp": 2, "hsdp": 2}
# zpp's hpZ agreement: a 16-byte record per rank and epoch, all-gathered over the world
# (src/engine/hpz_cache.h). DeepSpeed's hpZ agrees on nothing (the reason its reuse could go
# stale unseen), so against ds-hpz zpp's hpz may move these bytes more and no others.
AGREEMENT_RECORD_BYTES = 16
ZPP_VARIABLES = ("ZPP_QWZ", "ZPP_QWZ_BITS", "ZPP_HPZ", "ZPP_QGZ", "ZPP_QGZ_BITS_INTRA",
                 "ZPP_QGZ_BITS_INTER", "ZPP_BLOCK", "ZPP_QWZ_ROTATE", "ZPP_STATS", "ZPP_TUNE",
                 "ZPP_QGZ_EF", "ZPP_QWZ_DELTA", "ZPP_QWZ_DELTA_BITS", "ZPP_QWZ_DELTA_REFRESH",
                 "ZPP_MIN_BYTES", "ZPP_QAR", "ZPP_QAR_BITS", "ZPP_QAR_EF")


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="the python of the torch environment (default: this one)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=None, help="default: BUILD/convergence")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS),
                        help=f"comma list of {', '.join(ALL_FRAMEWORKS)} (default: "
                        f"{', '.join(FRAMEWORKS)})")
    parser.add_argument("--modes", default="",
                        help=f"comma list of {', '.join(list(MODES) + list(DEEPSPEED_OWN))} "
                        "(ds-* for deepspeed only); for ddp and hsdp: "
                        f"{', '.join(list(REPLICATED_MODES) + list(HOOKS))} (powersgd: ddp only); "
                        "default: every mode of each framework")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=1,
                        help="every zpp mode (and plain) with seeds 1234, 1235, ...: each mode's "
                        "final loss against plain's at the same seed, and the paired verdict "
                        "(summary.json's paired)")
    parser.add_argument("--plain-seeds", type=int, default=1,
                        help="runs of plain with seeds 1234, 1235, ... (the spread of plain's "
                        "final loss: summary.json's plain_seed_losses)")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--local-size", type=int, default=2, help="ranks per simulated node")
    parser.add_argument("--device", choices=sorted(REFERENCE), default="cpu")
    parser.add_argument("--no-gloo", "--no-reference", dest="no_reference", action="store_true",
                        help="skip the reference run (gloo on the CPU, NCCL on a GPU)")
    parser.add_argument("--readme", help="write the table into this markdown file's "
                        "convergence-table markers (make convergence: docs/benchmarks.md)")
    parser.add_argument("--check", action="store_true", help="fail unless the checks hold")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per run")
    parser.add_argument("train_args", nargs="*", help="after --: more flags for the scripts")
    args = parser.parse_args(argv)
    args.out = args.out or os.path.join(args.build, "convergence")
    args.frameworks = [f for f in args.frameworks.split(",") if f]
    for framework in args.frameworks:
        if framework not in ALL_FRAMEWORKS:
            parser.error(f"unknown framework {framework!r} ({', '.join(ALL_FRAMEWORKS)})")
    args.modes = [m for m in args.modes.split(",") if m]
    known = list(MODES) + list(DEEPSPEED_OWN) + list(REPLICATED_MODES) + list(HOOKS)
    for mode in args.modes:
        if mode not in known:
            parser.error(f"unknown mode {mode!r} (modes: {', '.join(known)})")
    return args


def modes_of(args, framework):
    """The modes asked for, or every mode of the framework."""
    if args.modes:
        return args.modes
    if framework == "ddp":
        return list(REPLICATED_MODES) + list(HOOKS)
    if framework == "hsdp":
        return list(REPLICATED_MODES)
    return list(MODES) + list(DEEPSPEED_OWN)


def slug(mode):
    return mode.replace("/", "-").replace("+", "p")


def base_mode(mode):
    """The MODES entry a run is of: zero++@seed<k> is zero++."""
    return mode.split(SEED_SUFFIX)[0]


def seed_of(mode):
    """k of a run at seed 1234 + k (0: the default seed)."""
    return int(mode.split(SEED_SUFFIX)[1]) if SEED_SUFFIX in mode else 0


def with_seeds(args, mode):
    """A mode's runs: itself, then its other seeds."""
    seeds = max(args.seeds, args.plain_seeds) if mode == "plain" else args.seeds
    return [(mode, True)] + [(f"{mode}{SEED_SUFFIX}{k}", True) for k in range(1, seeds)]


def runs_of(args, framework):
    """(mode, runnable) in order: the reference first, then zpp's modes (plain's other seeds right
    after plain), then DeepSpeed's own."""
    runs = [] if args.no_reference else [(REFERENCE[args.device], True)]
    replicated = framework in PARALLEL
    for mode in modes_of(args, framework):
        if replicated:
            if mode in REPLICATED_MODES:
                runs += with_seeds(args, mode)
            elif mode in HOOKS and framework == "ddp" and args.device == "cpu":
                runs += with_seeds(args, mode)  # over gloo with the bytes counted: CPU ranks only
            continue
        if mode in MODES:
            runs += with_seeds(args, mode)
        elif framework == "deepspeed":
            runs.append((mode, args.device in DEEPSPEED_OWN[mode]))
    return runs


# A rank of the gloo reference (zpp not loaded) has aborted at exit after every step was written,
# past the barrier before destroy_process_group: twice in `make test` on 2 busy cores. Kept for
# every run without zpp (the reference, DeepSpeed's own techniques, torch's DDP hooks); a run
# through zpp that aborts fails.
TEARDOWN_ABORT = "terminate called without an active exception"


def read_losses(csv_path):
    """(step, loss, seconds) rows of a run's loss.csv; none if it was never written whole."""
    try:
        with open(csv_path) as source:
            return [(int(r["step"]), float(r["loss"]), float(r["seconds"]))
                    for r in csv.DictReader(source)]
    except (OSError, KeyError, TypeError, ValueError):
        return []


def teardown_abort(log_path, rows, steps):
    """Whether a run wrote every step's loss (each an all-reduce over every rank: all of them
    trained to the end) and then died of the teardown abort alone: torchrun's summary names only
    ranks aborted (-6) and ranks it stopped after them (-15)."""
    with open(log_path, errors="replace") as log:
        text = log.read()
    codes = set(re.findall(r"exitcode\s*:\s*(-?\d+)", text))
    return len(rows) == steps and TEARDOWN_ABORT in text and "-6" in codes and codes <= {
        "-6", "-15"}


def run_one(args, framework, mode):
    """Trains once; returns (loss rows, per-rank stats or None, wall seconds)."""
    directory = os.path.join(args.out, "runs", framework, slug(mode))
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    csv_path = os.path.join(directory, "loss.csv")
    stats_dir = os.path.join(directory, "stats")
    torchrun = [args.python, "-m", "torch.distributed.run", "--nproc-per-node", str(args.ranks),
                "--standalone", TRAIN[framework], "--device", args.device, "--steps",
                str(args.steps), "--csv", csv_path] + PARALLEL.get(framework, []) + args.train_args
    if args.device == "cuda":
        torchrun.append("--one-gpu")
    if seed_of(mode):
        torchrun += ["--seed", str(DEFAULT_SEED + seed_of(mode))]
    env = {k: v for k, v in os.environ.items() if k not in ZPP_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(args.build, "python")] + [p for p in env.get("PYTHONPATH", "").split(
            os.pathsep) if p])
    env["OMP_NUM_THREADS"] = "1"
    if framework == "deepspeed" and args.device == "cpu":
        env["DS_ACCELERATOR"] = "cpu"
    reference = mode == REFERENCE[args.device]
    # The byte counter's stats: DeepSpeed's own techniques and torch's DDP hooks, over gloo.
    hook = HOOKS.get(base_mode(mode))
    counted = (mode in DEEPSPEED_OWN or hook is not None) and args.device == "cpu"
    if not reference:
        env["ZPP_LOCAL_SIZE"] = str(args.local_size)  # zpp's simulated nodes, or the counter's
    if reference:
        command = torchrun + ["--backend", mode]
    elif hook is not None:
        command = torchrun + ["--backend", "gloo", "--count-bytes"] + hook + [
            "--stats-dir", stats_dir]
    elif mode in DEEPSPEED_OWN:
        flags = [str(args.local_size) if f == "LOCAL" else f
                 for f in DEEPSPEED_OWN[mode][args.device]]
        command = torchrun + flags + (["--stats-dir", stats_dir] if counted else [])
    else:
        flags, variables = (REPLICATED_MODES if framework in PARALLEL else MODES)[base_mode(mode)]
        env.update(variables)
        command = [sys.executable, ZPP_RUN, "--lib", os.path.join(args.build, "lib", "libzpp.so")]
        backend = ["--backend", "zpp"] if args.device == "cpu" else []
        command += flags + ["--"] + torchrun + backend + ["--stats-dir", stats_dir]
    start = time.monotonic()
    log_path = os.path.join(directory, "log.txt")
    with open(log_path, "w") as log:
        try:
            finished = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      timeout=args.timeout, check=False)
            failure = None if finished.returncode == 0 else f"exit {finished.returncode}"
        except subprocess.TimeoutExpired:
            failure = f"still running after {args.timeout} s, killed"
    wall = time.monotonic() - start
    rows = read_losses(csv_path)
    without_zpp = reference or hook is not None or mode in DEEPSPEED_OWN
    exited = failure is not None and failure.startswith("exit")  # not killed for the time
    if exited and without_zpp and teardown_abort(log_path, rows, args.steps):
        print(f"convergence: {framework} {mode} (zpp not loaded) wrote all "
              f"{args.steps} steps, then a rank aborted at exit ({failure}, \"{TEARDOWN_ABORT}\"); "
              f"its losses are kept, see {log_path}", flush=True)
    elif failure is not None:
        # The log lives in the build folder, which CI does not keep: its end goes to the output.
        with open(log_path, errors="replace") as log:
            tail = log.readlines()[-60:]
        raise SystemExit(f"convergence: {framework} {mode} failed ({failure}); the end of "
                         f"{log_path}:\n" + "".join(tail))
    if len(rows) != args.steps:
        raise SystemExit(f"convergence: {framework} {mode} ended, but {csv_path} holds "
                         f"{len(rows)} of {args.steps} steps")
    stats = None
    if not reference and (mode not in DEEPSPEED_OWN or counted):  # (hooks: counted)
        stats = []
        for rank in range(args.ranks):
            with open(os.path.join(stats_dir, f"stats{rank}.json")) as source:
                stats.append(json.load(source)["steps"])
    return rows, stats, wall


def final_loss(rows):
    return quantities.final_loss(loss for _, loss, _ in rows)


def summarize_stats(stats, steps, steady_from):
    """Sums over ranks: inter-node bytes per optimizer step from STEADY_FROM on, hpZ record,
    calls per path and pass-throughs by reason over the whole run, the most secondary-partition
    memory a rank kept, and the collectives zpp's engine did not take. DeepSpeed's own runs
    (counted_backend.py) have bytes and kept memory only: the rest is None."""
    def inter(snapshot):
        sent = snapshot["sent_bytes"]
        return sent["inter_node"] + sent["inter_rack"]

    def total(key):
        return sum(s[key] for s in last) if key in last[0] else None

    def summed(key):
        out = {}
        for snapshot in last:
            for name, count in snapshot.get(key, {}).items():
                out[name] = out.get(name, 0) + count
        return out

    first = min(steady_from, steps - 1)
    per_step = sum(inter(rank[-1]) - (inter(rank[first - 1]) if first > 0 else 0)
                   for rank in stats) / (steps - first)
    last = [rank[-1] for rank in stats]
    zpp = "calls" in last[0]
    # zpp's peak counter, or DeepSpeed's secondary copies measured after every backward.
    kept = (max(s.get("hpz_kept_bytes_peak", 0) for s in last) if zpp else
            max(s.get("ds_secondary_bytes", 0) for rank in stats for s in rank))
    return {
        "inter_node_bytes_per_step": per_step,
        "hpz_hits": total("hpz_hits"),
        "hpz_misses": total("hpz_misses"),
        "hpz_verify_failures": total("hpz_verify_failures"),
        "secondary_bytes_per_rank": kept,
        "calls": summed("calls") if zpp else None,
        "pass_through": summed("pass_through"),
        "not_through_engine": summed("exact_ops"),
        "step_epoch": last[0].get("step_epoch"),
    }


def replicas_identical(stats, framework, local_size):
    """Whether every replica's parameters were bitwise equal at every step: all ranks under DDP;
    under HSDP the ranks holding the same shard (rank % ranks per node)."""
    def group(rank):
        return rank % local_size if framework == "hsdp" else 0

    for step in range(len(stats[0])):
        seen = {}
        for rank, per_step in enumerate(stats):
            digest = per_step[step].get("param_digest")
            if digest is None or seen.setdefault(group(rank), digest) != digest:
                return False
    return True


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
             title=f"GPT on fortunes text, {title}")
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


def _cell(value, form="{}"):
    return "" if value is None else form.format(value)


def _vs_plain(pct):
    """A mode's loss against plain at its seed, or why there is none (a NaN: no such plain ran)."""
    return "no plain at its seed" if pct != pct else f"{pct:+.3f}%"


def table(summary):
    lines = [
        "| framework | mode | final loss | vs plain | inter-node bytes / step | vs plain | "
        "hpZ hits | verify failures | kept secondary / rank | not taken by zpp (calls, all ranks)"
        " | wall |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for framework in summary["frameworks"]:
        reference = summary["references"].get(framework)
        if reference is not None:
            lines.append(f"| {framework} | {reference['mode']} (reference) | "
                         f"{reference['final_loss']:.4f} | {reference['delta_pct']:+.3f}% | "
                         f"| | | | | | {reference['wall_seconds']:.0f} s |")
        for entry in summary["modes"]:
            if entry["framework"] != framework:
                continue
            if entry.get("waits"):
                lines.append(f"| {framework} | {entry['mode']} | {entry['waits']} "
                             "| | | | | | | | |")
                continue
            reasons = [f"{k}: {v}" for k, v in sorted(entry["pass_through"].items())]
            reasons += [f"{k} (exact): {v}" for k, v in sorted(entry["not_through_engine"].items())]
            if entry["mode"] in DEEPSPEED_OWN:
                reasons = ["DeepSpeed over gloo, no zpp"]
            kept = entry["secondary_bytes_per_rank"]
            lines.append(
                f"| {framework} | {entry['mode']} | {entry['final_loss']:.4f} | "
                f"{_vs_plain(entry['delta_pct'])} | "
                f"{format_bytes(entry['inter_node_bytes_per_step'])} | "
                f"{_cell(entry.get('inter_node_vs_plain'), '{:.3f}')} | "
                f"{_cell(entry['hpz_hits'])} | {_cell(entry['hpz_verify_failures'])} | "
                f"{format_bytes(kept) if kept else ''} | {', '.join(reasons)} | "
                f"{entry['wall_seconds']:.0f} s |")
    return "\n".join(lines) + "\n"


def update_readme(path, text, marker="convergence-table", target="make convergence"):
    """Replaces the markdown file's block between <!-- MARKER:begin ... --> and
    <!-- MARKER:end -->."""
    begin, end = f"<!-- {marker}:begin", f"<!-- {marker}:end -->"
    with open(path) as source:
        readme = source.read()
    pattern = re.compile(re.escape(begin) + r".*?-->\n.*?" + re.escape(end), re.S)
    if not pattern.search(readme):
        raise SystemExit(f"convergence: {path} has no {begin} ... {end} markers")
    block = f"{begin} ({target}) -->\n{text}{end}"
    with open(path, "w") as out:
        out.write(pattern.sub(lambda _: block, readme))


def replicated_checks(summary, name, mode, entry):
    """DDP's and HSDP's: replicas bitwise identical at every step in every zpp mode, the
    compressed modes' all-reduces through zpp's plan, one step epoch per optimizer step."""
    failures = []
    if not entry.get("replicas_identical"):
        failures.append(f"{name}: the replicas' parameters differed at some step")
    if "--qar" in " ".join(REPLICATED_MODES[base_mode(mode)][0]) and entry["calls"]["qar"] == 0:
        failures.append(f"{name}: no all-reduce went through the compressed plan")
    if entry["step_epoch"] != summary["steps"]:
        failures.append(f"{name}: the step epoch is {entry['step_epoch']} after "
                        f"{summary['steps']} optimizer steps")
    return failures


def checks(summary):
    failures = []
    for framework, reference in summary["references"].items():
        difference = reference.get("max_rel_diff")
        if difference is not None and difference > 1e-5:
            failures.append(f"{framework}: plain through zpp differs from {reference['mode']} by "
                            f"{difference:.3g} relative (at most 1e-5)")
    entries = {(e["framework"], e["mode"]): e for e in summary["modes"] if not e.get("waits")}
    for (framework, mode), entry in entries.items():
        name = f"{framework} {mode}"
        if mode in DEEPSPEED_OWN or base_mode(mode) in HOOKS:
            continue
        if framework in PARALLEL:
            failures += replicated_checks(summary, name, mode, entry)
            continue
        flags = MODES[base_mode(mode)][0]
        calls = entry["calls"]
        wants_gather = any(f.startswith(("--qwz", "--hpz")) for f in flags) or "--preset" in flags
        wants_scatter = "--qgz" in flags or "--preset" in flags
        wants_hpz = "--hpz" in flags or "--preset" in flags
        if wants_gather and calls.get("qwz", 0) + calls.get("hpz", 0) == 0:
            failures.append(f"{name}: no all-gather went through zpp's plans")
        if wants_scatter and calls.get("qgz", 0) == 0:
            failures.append(f"{name}: no reduce-scatter went through qgZ")
        if wants_hpz and summary["steps"] > STEADY_FROM[framework] and entry["hpz_hits"] == 0:
            failures.append(f"{name}: no hpZ hit")
        if entry["hpz_verify_failures"]:
            failures.append(f"{name}: {entry['hpz_verify_failures']} hpZ verification failures")
        # zpp-run's optimizer hook, once per step: hpZ may reuse only within a step.
        if entry["step_epoch"] != summary["steps"]:
            failures.append(f"{name}: the step epoch is {entry['step_epoch']} after "
                            f"{summary['steps']} optimizer steps")
        if mode == "zero++" and "delta_pct" in entry and abs(entry["delta_pct"]) > ZEROPP_LOSS_PCT:
            failures.append(f"{name}: final loss {entry['delta_pct']:+.3f}% from plain's "
                            f"(at most {ZEROPP_LOSS_PCT}%)")
    ours, theirs = entries.get(("deepspeed", "hpz")), entries.get(("deepspeed", "ds-hpz"))
    if ours and theirs:
        record = AGREEMENT_RECORD_BYTES * summary["ranks"]
        if ours["inter_node_bytes_per_step"] > theirs["inter_node_bytes_per_step"] + record:
            failures.append(f"deepspeed: zpp's hpz moves {ours['inter_node_bytes_per_step']:.0f} "
                            f"inter-node bytes per step, DeepSpeed's own "
                            f"{theirs['inter_node_bytes_per_step']:.0f} (+ {record} for zpp's "
                            "agreement record at most)")
        apart = 100 * abs(ours["final_loss"] - theirs["final_loss"]) / theirs["final_loss"]
        if apart > LOSSLESS_PCT:
            failures.append(f"deepspeed: hpz and ds-hpz final losses {apart:.3f}% apart (both "
                            f"lossless: at most {LOSSLESS_PCT}%)")
    return failures


def compare_with_plain(summary, framework, ran):
    """Each run against plain at its own seed (its default seed's plain where plain ran at no
    other); plain's spread over its seeds; and, per mode run at several seeds, the paired
    verdict (quantities.paired_verdict)."""
    plains = {seed_of(e["mode"]): e for e in ran if base_mode(e["mode"]) == "plain"}
    seeds = [e["final_loss"] for e in plains.values()]
    if len(seeds) > 1:
        summary.setdefault("plain_seed_losses", {})[framework] = seeds
    differences = {}
    for entry in ran:
        base = plains.get(seed_of(entry["mode"]))  # never another seed's plain
        entry["delta_pct"] = (quantities.relative_pct(entry["final_loss"], base["final_loss"])
                              if base else float("nan"))
        if len(seeds) > 1:
            entry["within_plain_seed_spread"] = min(seeds) <= entry["final_loss"] <= max(seeds)
        if base and "inter_node_bytes_per_step" in entry and base["inter_node_bytes_per_step"]:
            entry["inter_node_vs_plain"] = (entry["inter_node_bytes_per_step"] /
                                            base["inter_node_bytes_per_step"])
        mode = base_mode(entry["mode"])
        if mode != "plain" and seed_of(entry["mode"]) in plains:
            differences.setdefault(mode, []).append(entry["delta_pct"])
    paired = {mode: quantities.paired_verdict(values) for mode, values in differences.items()
              if len(values) > 1}
    if paired:
        summary.setdefault("paired", {})[framework] = paired


def report_text(summary):
    """What a run writes into table.md and docs/benchmarks.md (tools/results_tables.py renders
    the recorded summary with it too): the table, the paired verdicts, plain's spread."""
    text = table(summary) + paired_table(summary)
    for framework, seeds in summary.get("plain_seed_losses", {}).items():
        spread = 100 * (max(seeds) - min(seeds)) / min(seeds)
        text += (f"\n{framework}: plain's final loss over {len(seeds)} seeds: "
                 f"{min(seeds):.4f} to {max(seeds):.4f} (a spread of {spread:.3f}%)\n")
    return text


def paired_table(summary):
    """The paired-seed verdicts, where some mode ran at several seeds (else empty)."""
    rows = [(framework, mode, figures) for framework, modes in summary.get("paired", {}).items()
            for mode, figures in modes.items()]
    if not rows:
        return ""
    lines = ["", "| framework | mode | seeds | mean of (mode - plain) / plain at each seed | "
             "standard error | verdict |", "|---|---|---:|---:|---:|---|"]
    for framework, mode, f in rows:
        lines.append(f"| {framework} | {mode} | {f['seeds']} | {f['mean_pct']:+.3f}% | "
                     f"{f['standard_error_pct']:.3f}% | {f['verdict']} |")
    return "\n".join(lines) + "\n"


def run_framework(args, framework, summary, index, count):
    """Every run of one framework, into `summary`; returns (curves, next index)."""
    reference_mode = REFERENCE[args.device]
    curves, reference_rows = {}, None
    for mode, runnable in runs_of(args, framework):
        index += 1
        if not runnable:
            summary["modes"].append({"mode": mode, "framework": framework, "waits": WAITS_FOR_GPU})
            print(f"[{index}/{count}] {framework} {mode}: {WAITS_FOR_GPU}", flush=True)
            continue
        rows, stats, wall = run_one(args, framework, mode)
        write_csv(os.path.join(args.out, f"loss_{framework}_{slug(mode)}.csv"), rows)
        line = (f"[{index}/{count}] {framework} {mode}: {len(rows)} steps, loss "
                f"{rows[0][1]:.4f} -> {final_loss(rows):.4f}, {wall:.0f} s")
        if mode == reference_mode:
            reference_rows = rows
            summary["references"][framework] = {"mode": mode, "final_loss": final_loss(rows),
                                                "wall_seconds": wall, "max_rel_diff": None}
        else:
            curves[mode] = rows
            entry = {"mode": mode, "framework": framework,
                     "backend": ("gloo (DeepSpeed's own)" if mode in DEEPSPEED_OWN else
                                 "zpp" if args.device == "cpu" else "nccl+libzpp.so"),
                     "final_loss": final_loss(rows), "wall_seconds": wall,
                     "seconds_per_step": rows[-1][2] / max(1, len(rows) - 1),
                     "loss_csv": os.path.join(args.out, f"loss_{framework}_{slug(mode)}.csv")}
            if base_mode(mode) in HOOKS:
                entry["backend"] = "gloo (torch's DDP comm hook)"
            if stats is not None:
                entry.update(summarize_stats(stats, len(rows), STEADY_FROM[framework]))
                if framework in PARALLEL:
                    entry["replicas_identical"] = replicas_identical(stats, framework,
                                                                     args.local_size)
                entry["steady_from_step"] = STEADY_FROM[framework]
                line += (f", inter-node {format_bytes(entry['inter_node_bytes_per_step'])}/step, "
                         f"hpZ hits {entry['hpz_hits']}")
                if "replicas_identical" in entry:
                    line += f", replicas identical {entry['replicas_identical']}"
            summary["modes"].append(entry)
        print(line, flush=True)

    plain = curves.get("plain")
    ran = [e for e in summary["modes"] if e["framework"] == framework and not e.get("waits")]
    compare_with_plain(summary, framework, ran)
    reference = summary["references"].get(framework)
    if reference is not None and plain is not None:
        first = min(FIRST_STEPS, len(plain), len(reference_rows))
        reference["max_rel_diff"] = max(abs(p[1] - g[1]) / abs(g[1])
                                        for p, g in zip(plain[:first], reference_rows[:first]))
        reference["steps_compared"] = first
        reference["delta_pct"] = (100 * (reference["final_loss"] - final_loss(plain)) /
                                  final_loss(plain))
    elif reference is not None:
        reference["delta_pct"] = 0.0
    where = ("CPU ranks through zpp" if args.device == "cpu" else
             "one GPU, NCCL with libzpp.so")
    label = {"fsdp2": "FSDP2", "deepspeed": "DeepSpeed ZeRO-3", "ddp": "DDP",
             "hsdp": "HSDP (FSDP2, 2-D mesh)"}[framework]
    summary["plots"][framework] = plot(os.path.join(args.out, f"losses_{framework}.png"), curves,
                                       plain, f"{label}, {where}")
    return index


def main(argv):
    args = parse(argv)
    os.makedirs(args.out, exist_ok=True)
    summary = {"frameworks": args.frameworks, "device": args.device, "ranks": args.ranks,
               "ranks_per_node": args.local_size, "steps": args.steps, "references": {},
               "modes": [], "plots": {}}
    count = sum(len(runs_of(args, f)) for f in args.frameworks)
    started = time.monotonic()
    index = 0
    for framework in args.frameworks:
        index = run_framework(args, framework, summary, index, count)
    summary["wall_seconds"] = time.monotonic() - started
    text = report_text(summary)
    with open(os.path.join(args.out, "table.md"), "w") as out:
        out.write(text)
    with open(os.path.join(args.out, "summary.json"), "w") as out:
        json.dump(summary, out, indent=2)
    if args.readme:
        update_readme(args.readme, text)
    print(text, end="")
    for framework, reference in summary["references"].items():
        if reference.get("max_rel_diff") is not None:
            print(f"{framework}: plain through zpp against {reference['mode']}: max relative "
                  f"difference {reference['max_rel_diff']:.3g} over the first "
                  f"{reference['steps_compared']} steps; final loss "
                  f"{reference['delta_pct']:+.4f}%")
    print(f"convergence: {summary['wall_seconds']:.0f} s in all; {args.out}/summary.json")
    if args.check:
        failures = checks(summary)
        for failure in failures:
            print(f"convergence check FAILED: {failure}")
        if failures:
            return 1
        print("convergence checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
