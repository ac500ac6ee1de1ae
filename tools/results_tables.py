#!/usr/bin/env python3
"""The result tables the README and docs/benchmarks.md show, written from the files under
bench/results/ (issue 46). Each table sits in its page between `<!-- NAME:begin (...) -->` and
`<!-- NAME:end -->`; its text is what the renderer below makes of its result files, so a figure
in a table is never typed by hand. `make convergence` and `make netbench` rewrite their own
tables in docs/benchmarks.md from a fresh run (`--readme`); this tool rewrites or checks all of
them from the files already recorded.

    tools/results_tables.py [--root DIR]            rewrite every table from its files
    tools/results_tables.py --check [--root DIR]    exit 1 naming each table its files disagree with
    tools/results_tables.py --self-test             plant a stale figure, expect it reported

tools/check_docs.py runs the check too, so `make test` fails on a hand-edited figure.
"""
import argparse
import csv
import functools
import glob
import importlib.util
import json
import os
import re
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(HERE)


def _module(root, name, relative):
    """A harness's module by path: both harnesses are called run.py."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, relative))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _results(root, name):
    with open(os.path.join(root, "bench", "results", name)) as source:
        return json.load(source)


def convergence_table(root):
    harness = _module(root, "convergence_harness", "bench/convergence/run.py")
    return harness.report_text(_results(root, "convergence_cpu_summary.json"))


def netbench_table(root):
    harness = _module(root, "netbench_harness", "bench/netbench/run.py")
    return harness.table(_results(root, "netbench_cpu.json"))


# The README's step times: per framework and link, the median step of each mode side by side,
# each row from its newest run: FSDP2 and DeepSpeed from `make netbench`'s file, DDP from the
# newest of netbench_replicated_auto_cpu*.json holding it (the median over its rounds).
README_FRAMEWORKS = (("fsdp2", "FSDP2"), ("deepspeed", "DeepSpeed"), ("ddp", "DDP"))
README_RATES = ((50, "50 Mbit/s"), (1000, "1 Gbit/s"))
README_MODES = (("gloo", "gloo"), ("plain", "zpp plain"), ("zero++", "zero++"), ("ar8", "`ar8`"),
                ("ar4+ef", "`ar4+ef`"), ("auto", "`auto`"))


@functools.cache
def _rounds():
    """bench/netbench/rounds.py: its link_case and its campaign table."""
    return _module(ROOT, "netbench_rounds", "bench/netbench/rounds.py")


def _link_case(run):
    return _rounds().link_case(run)


def _summaries_by_date(root, pattern):
    """(summary, file name) of every bench/results file matching `pattern`, oldest first: by
    date, then name."""
    return sorted(((_results(root, os.path.basename(path)), os.path.basename(path))
                   for path in glob.glob(os.path.join(root, "bench", "results", pattern))),
                  key=lambda pair: (pair[0]["date"], pair[1]))


def _replicated_summaries(root):
    return _summaries_by_date(root, "netbench_replicated_auto_cpu*.json")


def _newest_replicated_runs(root, by_congestion_control=False):
    """Every run of netbench_replicated_auto_cpu*.json, each (framework, rate) from the newest
    file (by date, then name) that holds it, each run with its file's `source` label; with
    by_congestion_control, the newest of each (framework, rate, TCP congestion control), the
    files before netbed recorded it counting as one more kind ("")."""
    newest = {}
    for summary, name in _replicated_summaries(root):
        cases = {}
        for run in summary["runs"]:
            case = _link_case(run)
            tcp = case[2]
            cases.setdefault(case if by_congestion_control else case[:2], []).append(
                dict(run, source=f"`{name}` ({summary['date']}{', TCP ' + tcp if tcp else ''})"))
        newest.update(cases)
    return [run for runs in newest.values() for run in runs]


def _step_time_sources(root):
    """{(framework, rate, mode): [median steps]} and {(framework, rate): 'file (date)'}."""
    times, sources = {}, {}
    summary = _results(root, "netbench_cpu.json")
    netbench = [dict(run, source=f"`netbench_cpu.json` ({summary['date']})")
                for run in summary["runs"]]
    for run in netbench + _newest_replicated_runs(root):
        key = (run["framework"], run["rate_mbit"])
        if run["framework"] not in dict(README_FRAMEWORKS) or run["mode"] == "int4":
            continue
        if sources.get(key, run["source"]) != run["source"]:
            times = {k: v for k, v in times.items() if k[:2] != key}  # a newer file's rounds
        times.setdefault(key + (run["mode"],), []).append(run["median_step_s"])
        sources[key] = run["source"]
    return times, sources


def readme_step_times(root):
    times, sources = _step_time_sources(root)
    lines = ["| framework | link | " + " | ".join(label for _, label in README_MODES) + " | from |",
             "|---|---|" + "---:|" * len(README_MODES) + "---|"]
    for framework, label in README_FRAMEWORKS:
        for rate, link in README_RATES:
            cells = [f"{statistics.median(times[(framework, rate, mode)]):.3f} s"
                     if (framework, rate, mode) in times else "" for mode, _ in README_MODES]
            lines.append(f"| {label} | {link} |" + "".join(f" {cell} |" if cell else " |"
                                                            for cell in cells) +
                         f" {sources.get((framework, rate), '')} |")
    return "\n".join(lines) + "\n"


# The README's convergence tables: per mode and framework, the inter-node bytes against plain's
# and the paired verdict over seeds (bench/quantities.py), from the harness's `--seeds` runs: every
# bench/results/convergence_paired_cpu_*.json of the table's steps that ran the framework, so a
# new run is read once its file is there. (framework, label): a framework without a file shows
# no figures.
PAIRED_FILES = "convergence_paired_cpu_*.json"
PAIRED_100 = (("fsdp2", "FSDP2"), ("deepspeed", "DeepSpeed"))
PAIRED_100_MODES = (("qwz8", "qwZ int8"), ("hpz", "hpZ"), ("qgz8/4", "qgZ 8/4"),
                    ("zero++", "zero++ (all three)"), ("int4", "int4 everywhere"))
PAIRED_300 = (("fsdp2", "FSDP2"), ("deepspeed", "DeepSpeed"))
PAIRED_300_MODES = (("int4+ef", "int4 + error feedback"),
                    ("delta4", "4-bit weight deltas + zero++"),
                    ("delta4+ef3+min0", "4-bit deltas, 3-bit gradients + feedback, `min0`"),
                    ("delta4+ef2+min0", "4-bit deltas, 2-bit gradients + feedback, `min0`"))
PAIRED_REPLICATED = (("ddp", "DDP"), ("hsdp", "HSDP"))
PAIRED_REPLICATED_MODES = (("ar8", "`ar8` (`ZPP_QAR=1`)"),
                           ("ar4+ef", "`ar4+ef` (4 bits, `ZPP_QAR_EF=1`)"),
                           ("bf16-hook", "torch's `bf16_compress_hook` (a code change)"),
                           ("powersgd", "torch's PowerSGD, rank 2 (a code change)"))
# FSDP2 (and so HSDP) takes no DDP comm hook.
DOES_NOT_APPLY = {("hsdp", "bf16-hook"), ("hsdp", "powersgd")}


def _paired_files(root, framework, steps):
    """The recorded paired-seed summaries of `steps` steps that ran `framework`, by name."""
    names = sorted(os.path.basename(path) for path in
                   glob.glob(os.path.join(root, "bench", "results", PAIRED_FILES)))
    return [name for name in names
            if _results(root, name)["steps"] == steps
            and framework in _results(root, name)["frameworks"]]


def _paired_figures(root, framework, names):
    """{mode: paired figures with `bytes` (against plain's)} from the summaries `names`."""
    harness = _module(root, "convergence_harness", "bench/convergence/run.py")
    figures = {}
    for name in names:
        summary = _results(root, name)
        ratios = {harness.base_mode(e["mode"]): e.get("inter_node_vs_plain")
                  for e in summary["modes"] if e["framework"] == framework}
        for mode, paired in summary.get("paired", {}).get(framework, {}).items():
            figures[mode] = dict(paired, bytes=ratios.get(mode))
    return figures


def _paired_cells(figures):
    if figures is None:
        return ["", "", "not yet run at 3 seeds"]
    ratio = "" if figures["bytes"] is None else f"{figures['bytes']:.3f}"
    return [ratio, f"{figures['mean_pct']:+.3f}% ± {figures['standard_error_pct']:.3f}% "
            f"({figures['seeds']})", figures["verdict"]]


def paired_table(root, frameworks, modes, steps):
    """Bytes, mean loss difference ± its standard error (seeds) and verdict, per framework."""
    files = {framework: _paired_files(root, framework, steps) for framework, _ in frameworks}
    found = {framework: _paired_figures(root, framework, files[framework])
             for framework, _ in frameworks}
    header, rule = "| mode |", "|---|"
    for _, label in frameworks:
        header += f" {label} bytes | {label} loss | {label} verdict |"
        rule += "---:|---:|---|"
    lines = [header, rule]
    for mode, label in modes:
        cells = []
        for framework, _ in frameworks:
            cells += (["", "", ""] if (framework, mode) in DOES_NOT_APPLY else
                      _paired_cells(found[framework].get(mode)))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    files = [name for framework, _ in frameworks for name in files[framework]]
    lines += ["", "From " + (", ".join(f"`bench/results/{name}`" for name in files) or
                             "no recorded file yet") + "."]
    return "\n".join(lines) + "\n"


# The CPU all-reduce's own cost (issue 45): bench/netbench/all_reduce_cost_run.py's medians over
# rounds, and the testbed's step times of two libraries side by side.
# (where, builds old -> new, file)
ONE_MACHINE = "one machine, 2 simulated nodes of 2 (UCX shared memory)"
NETBED_1000 = "tools/netbed, 2 nodes x 2 at 1000 Mbit/s (TCP)"
ALL_REDUCE_COST_FILES = (
    (ONE_MACHINE, "e856b0f -> 36f4517", "all_reduce_cost_cpu_one_machine.json"),
    (NETBED_1000, "e856b0f -> 36f4517", "all_reduce_cost_cpu_netbed_1000mbit.json"),
    (ONE_MACHINE, "0003e81 -> b41867f", "all_reduce_cost_cpu_one_machine_tiled_sums.json"),
    (NETBED_1000, "0003e81 -> b41867f", "all_reduce_cost_cpu_netbed_1000mbit_tiled_sums.json"))
AB_LABELS = (("gloo", "gloo"), ("bf16-hook", "torch's bf16_compress_hook"), ("plain", "zpp plain"),
             ("ar8", "`ar8`"), ("ar4+ef", "`ar4+ef`"))


def all_reduce_cost_table(root):
    lines = ["| where | zpp old -> new | gloo | zpp old | zpp new | file |",
             "|---|---|---:|---:|---:|---|"]
    for where, builds, name in ALL_REDUCE_COST_FILES:
        runs = _results(root, name)["runs"]
        cells = []
        for label in ("gloo", "old", "new"):
            mine = [r for r in runs if r["label"] == label]
            wall = statistics.median(r["median_wall_ms"] for r in mine)
            cpu = statistics.median(r["cpu_ms_per_call_all_ranks"] for r in mine)
            cells.append(f"{wall:.1f} ms, {cpu:.1f} ms CPU")
        lines.append(f"| {where} | {builds} | " + " | ".join(cells) + f" | `{name}` |")
    return "\n".join(lines) + "\n"


def all_reduce_ab_table(root):
    runs = _results(root, "netbench_all_reduce_ab_cpu.json")["runs"]
    lines = ["| framework | mode | old, per round | new, per round | old | new | new / gloo |",
             "|---|---|---|---|---:|---:|---:|"]
    for framework in ("ddp", "hsdp"):
        def steps(mode, build):
            return [r["median_step_s"] for r in runs
                    if (r["framework"], r["mode"], r["build"]) == (framework, mode, build)]
        gloo = statistics.median(steps("gloo", "new"))
        for mode, label in AB_LABELS:
            old, new = steps(mode, "old"), steps(mode, "new")
            if not new:
                continue
            median_old = f"{statistics.median(old):.3f} s" if old else ""
            old_rounds = ", ".join(f"{v:.3f}" for v in old)
            lines.append(f"| {framework.upper()} | {label} | {old_rounds} | "
                         f"{', '.join(f'{v:.3f}' for v in new)} | {median_old} | "
                         f"{statistics.median(new):.3f} s | {statistics.median(new) / gloo:.2f} |")
    return "\n".join(lines) + "\n"


# The GPU runs' figures (one seed each, so no verdict): the final loss of each way against plain
# NCCL's in the same run (bench/quantities.py), from every loss CSV the GPU check recorded, found
# by name: `<framework>_loss_<gpu>_<way>.csv`, or `deepspeed_<gpu>/loss_deepspeed_<way>.csv`,
# beside the way `nccl`; and zpp-bench's times from every `zpp_bench_*gpu_<gpu>.json`.
GPU_LOSS_PATTERNS = (("FSDP2", "fsdp_loss_{gpu}_{way}.csv"), ("DDP", "ddp_loss_{gpu}_{way}.csv"),
                     ("HSDP", "hsdp_loss_{gpu}_{way}.csv"),
                     ("DeepSpeed ZeRO-3", "deepspeed_{gpu}/loss_deepspeed_{way}.csv"))
GPU_WAYS = (("plain", "plain (libzpp.so, techniques off)"), ("qwz", "qwZ int8"),
            ("qwz_hpz", "qwZ + hpZ"), ("hpz", "hpZ"), ("zero++", "zero++"), ("zeropp", "zero++"),
            ("delta4_ef2", "zero++, `delta4+ef2`"), ("qar8", "`ar8`"), ("qar4_ef", "`ar4+ef`"))


def _gpu_name(slug):
    """`nvidia_h100_80gb_hbm3` -> `H100 80GB HBM3`: the device as the GPU check named it."""
    return " ".join(word.upper() for word in slug.split("_")[1:])


def _matching(root, pattern):
    """{what the one `*` of `pattern` stood for: path under bench/results/} of its files."""
    results = os.path.join(root, "bench", "results")
    head, tail = pattern.split("*")
    found = (os.path.relpath(path, results) for path in sorted(glob.glob(os.path.join(results,
                                                                                       pattern))))
    return {name[len(head):len(name) - len(tail)]: name for name in found}


def _gpu_loss_runs(root):
    """[(device, framework, CSV pattern, {way: CSV name})] of every recorded GPU run with a plain
    NCCL CSV."""
    runs = []
    for framework, pattern in GPU_LOSS_PATTERNS:
        for slug in _matching(root, pattern.format(gpu="*", way="nccl")):
            shown = pattern.format(gpu=slug, way="*")
            runs.append((_gpu_name(slug), framework, shown, _matching(root, shown)))
    return runs


def _final_loss(root, name):
    quantities = _module(root, "quantities", "bench/quantities.py")
    with open(os.path.join(root, "bench", "results", name)) as source:
        losses = [float(row["loss"]) for row in csv.DictReader(source)]
    return quantities.final_loss(losses), len(losses)


def gpu_loss_table(root):
    quantities = _module(root, "quantities", "bench/quantities.py")
    labels = dict(GPU_WAYS)
    lines = ["| GPU | run | way | final loss | vs plain NCCL | files |",
             "|---|---|---|---:|---:|---|"]
    for device, framework, shown, ways in _gpu_loss_runs(root):
        plain, steps = _final_loss(root, ways.pop("nccl"))
        run = f"{framework}, {steps} steps"
        lines.append(f"| {device} | {run} | plain NCCL | {plain:.5f} | | `{shown}` |")
        for way, name in sorted(ways.items(), key=lambda item: list(labels).index(item[0])
                                if item[0] in labels else len(labels)):
            loss, _ = _final_loss(root, name)
            lines.append(f"| {device} | {run} | {labels.get(way, way)} | {loss:.5f} | "
                         f"{quantities.relative_pct(loss, plain):+.3f}% | |")
    return "\n".join(lines) + "\n"


# zpp-bench on one GPU shared by 4 ranks: time-sliced, then under MPS. (sharing, file pattern)
GPU_BENCH_RUNS = (("time-sliced", "zpp_bench_gpu_*.json"),
                  ("time-sliced, a later run", "zpp_bench_nomps_gpu_*.json"),
                  ("MPS, beside that run", "zpp_bench_mps_gpu_*.json"))
GPU_BENCH_MODES = ("plain", "zero++", "qwz4", "qgz8/4")
GPU_BENCH_BYTES = 64 << 20


def _gpu_bench_rows(root, name, label):
    rows = _results(root, name)["rows"]
    lines = []
    for op in ("allgather", "reducescatter"):
        def milliseconds(mode, size):
            times = [r["time_us"] for r in rows
                     if (r["op"], r["mode"], r["bytes"]) == (op, mode, size)]
            return f"{times[0] / 1000:.2f} ms" if times else ""
        cells = [milliseconds("plain", 8)] + [milliseconds(mode, GPU_BENCH_BYTES)
                                              for mode in GPU_BENCH_MODES]
        lines.append(f"| {label} | {op} | " + " | ".join(cells) + f" | `{name}` |")
    return lines


def gpu_bench_table(root):
    lines = ["| run | collective | plain, 8 B | " + " | ".join(f"{mode}, 64 MiB" for mode in
                                                            GPU_BENCH_MODES) + " | file |",
             "|---|---|---:|" + "---:|" * len(GPU_BENCH_MODES) + "---|"]
    for sharing, pattern in GPU_BENCH_RUNS:
        for path in sorted(glob.glob(os.path.join(root, "bench", "results", pattern))):
            name = os.path.basename(path)
            device = _gpu_name(name[:-len(".json")].split("gpu_", 1)[1])
            lines += _gpu_bench_rows(root, name, f"{device}, {sharing}")
    return "\n".join(lines) + "\n"


REPLICATED_AUTO_LABELS = (("gloo", "gloo"), ("bf16-hook", "torch's `bf16_compress_hook`"),
                          ("plain", "zpp plain"), ("ar8", "`ar8`"), ("ar4+ef", "`ar4+ef`"),
                          ("auto", "`auto` (plain, `qar8` = 8 bits with `ar4+ef`'s feedback, or "
                                   "`qar4` = `ar4+ef`; ' / ' between commits: another "
                                   "communicator's, or the same one's after a recalibration)"))
NOT_ZPP = ("gloo", "bf16-hook")


def _trial_choices(trials):
    """What auto committed to per size band, from the tuner's trials lines (`... 1M+: ... -> qar4`)
    of the run's communicators that measured a call (each line's, joined by ' / ')."""
    chosen = [", ".join(f"{band} {choice}" for band, choice in
                        re.findall(r"(\d+[KMG]?\+):[^;]*?-> (\w+)", line)) for line in trials]
    return " / ".join(c for c in chosen if c) or "no trial measured (in the communicators logged)"


def replicated_auto_table(root):
    """DDP and HSDP per link and mode over interleaved rounds, against gloo and the bf16 hook,
    with auto's choice: the newest netbench_replicated_auto_cpu*.json of each framework, link and
    TCP congestion control."""
    runs = _newest_replicated_runs(root, by_congestion_control=True)
    lines = ["| framework | link | mode | per round | median | / gloo | / bf16 hook | "
             "/ fastest zpp mode | from |", "|---|---|---|---|---:|---:|---:|---:|---|"]
    cases = sorted({_link_case(r) for r in runs},
                   key=lambda case: (case[0] != "ddp", -case[1], case[2]))
    for framework, rate, tcp in cases:
        mine = sorted((r for r in runs if _link_case(r) == (framework, rate, tcp)),
                      key=lambda r: r["round"])
        steps = {mode: [r["median_step_s"] for r in mine if r["mode"] == mode]
                 for mode, _ in REPLICATED_AUTO_LABELS}
        medians = {mode: statistics.median(values) for mode, values in steps.items() if values}
        fixed = [value for mode, value in medians.items() if mode not in NOT_ZPP + ("auto",)]
        fastest = min(fixed) if len(fixed) > 1 else None  # one fixed mode: nothing to be fastest of
        hook = medians.get("bf16-hook")
        for mode, label in REPLICATED_AUTO_LABELS:
            if mode not in medians:
                continue
            if mode == "auto":
                # tuner_trials: every communicator's line; files older than run.py's
                # trials_lines have only `tuner`, rank 0's first communicator's.
                chosen = [r.get("tuner_trials") or [r.get("tuner", {}).get("trials", "")]
                          for r in mine if r["mode"] == mode]
                label += f"; its choices per round: {'; '.join(_trial_choices(t) for t in chosen)}"
            link = f"{rate:g} Mbit/s, TCP {tcp or 'not recorded'}"
            lines.append(f"| {framework.upper()} | {link} | {label} | "
                         f"{', '.join(f'{v:.3f}' for v in steps[mode])} | {medians[mode]:.3f} s | "
                         f"{medians[mode] / medians['gloo']:.3f} | "
                         f"{f'{medians[mode] / hook:.3f}' if hook else ''} | "
                         f"{'' if mode in NOT_ZPP or not fastest else f'{medians[mode] / fastest:.3f}'} | "
                         f"{mine[0]['source']} |")
    return "\n".join(lines) + "\n"


def tcp_congestion_table(root):
    """HSDP at 50 Mbit/s, gloo and plain under BBR and cubic in turn (rounds.py's own table)."""
    return _rounds().table(_results(root, "netbench_tcp_congestion_hsdp_cpu.json")["runs"]) + "\n"


def _plain_and_auto(runs):
    """Over `runs` of one case: plain's median step over gloo's, and auto's over the fastest fixed
    zpp mode's."""
    medians = {mode: statistics.median(r["median_step_s"] for r in runs if r["mode"] == mode)
               for mode in {r["mode"] for r in runs}}
    fastest = min(value for mode, value in medians.items() if mode not in NOT_ZPP + ("auto",))
    return medians["plain"] / medians["gloo"], medians["auto"] / fastest


def case_files_table(root, case):
    """Every netbench_replicated_auto_cpu*.json file holding `case` (framework, rate, TCP), each
    with its commit, by date then name (as the replicated table picks its newest): where that
    table shows only the newest file. Not pooled: the files measure different libraries."""
    lines = ["| file | commit | rounds | plain / gloo | `auto` / fastest fixed zpp mode |",
             "|---|---|---:|---:|---:|"]
    for summary, name in _replicated_summaries(root):
        runs = [r for r in summary["runs"] if _link_case(r) == case]
        if not runs:
            continue
        plain, auto = _plain_and_auto(runs)
        lines.append(f"| `{name}` | {summary['commit']} | {len({r['round'] for r in runs})} | "
                     f"{plain:.3f} | {auto:.3f} |")
    return "\n".join(lines) + "\n"


def passthrough_table(root):
    """The interposer's host cost per passed-through call (bench/passthrough_bench.cc)."""
    lines = ["| call | straight into NCCL | through zpp | zpp's own cost | rounds |",
             "|---|---:|---:|---:|---:|"]
    for case in _results(root, "passthrough_cpu.json")["cases"]:
        lines.append(f"| {case['case']} | {case['median_direct_ns']:.0f} ns | "
                     f"{case['median_through_ns']:.0f} ns | {case['median_overhead_ns']:.0f} ns | "
                     f"{len(case['direct_ns'])} |")
    return "\n".join(lines) + "\n"


def zero3_rounds_table(root):
    """FSDP2's and DeepSpeed's modes over interleaved rounds (the newest
    netbench_zero3_rounds_cpu*.json, by date then name) beside the README's table of `make netbench`
    (netbench_cpu.json): the issue's 'no slower than today's table'."""
    rounds, name = _summaries_by_date(root, "netbench_zero3_rounds_cpu*.json")[-1]
    today = {(r["framework"], r["rate_mbit"], r["mode"]): r["median_step_s"]
             for r in _results(root, "netbench_cpu.json")["runs"]}
    lines = [f"| framework | link | mode | per round (`{name}`) | median | `netbench_cpu.json` | "
             "median / that |", "|---|---|---|---|---:|---:|---:|"]
    for framework, rate, tcp in sorted({_link_case(r) for r in rounds["runs"]}):
        mine = [r for r in rounds["runs"] if _link_case(r) == (framework, rate, tcp)]
        for mode in dict.fromkeys(r["mode"] for r in mine):
            steps = [r["median_step_s"] for r in sorted(mine, key=lambda r: r["round"])
                     if r["mode"] == mode]
            median = statistics.median(steps)
            before = today.get((framework, rate, mode))
            lines.append(f"| {framework} | {rate:g} Mbit/s, TCP {tcp or 'not recorded'} | {mode} | "
                         f"{', '.join(f'{v:.3f}' for v in steps)} | {median:.3f} s | "
                         f"{f'{before:.3f} s' if before else ''} | "
                         f"{f'{median / before:.3f}' if before else ''} |")
    return "\n".join(lines) + "\n"


def codec_ab_table(root):
    """The CPU codec's operations before and after its branch-free loops, side by side."""
    summary = _results(root, "codec_cpu_vectorized_ab.json")
    lines = [f"| operation (zpp-codec-bench) | before, {summary['commit_before']} | "
             f"after, {summary['commit_after']} | before / after |", "|---|---:|---:|---:|"]
    for row in summary["benchmarks"]:
        lines.append(f"| `{row['benchmark']}` | {row['before_median_ms']:.2f} ms | "
                     f"{row['after_median_ms']:.2f} ms | {row['speedup']:.2f} |")
    return "\n".join(lines) + "\n"


# (page, marker, what rewrites it after a run, renderer)
TABLES = (
    ("docs/benchmarks.md", "convergence-table", "make convergence", convergence_table),
    ("docs/benchmarks.md", "netbench-table", "make netbench", netbench_table),
    ("README.md", "bytes-loss-table", "tools/results_tables.py",
     functools.partial(paired_table, frameworks=PAIRED_100, modes=PAIRED_100_MODES, steps=100)),
    ("README.md", "deltas-loss-table", "tools/results_tables.py",
     functools.partial(paired_table, frameworks=PAIRED_300, modes=PAIRED_300_MODES, steps=300)),
    ("README.md", "replicated-loss-table", "tools/results_tables.py",
     functools.partial(paired_table, frameworks=PAIRED_REPLICATED, modes=PAIRED_REPLICATED_MODES,
                       steps=300)),
    ("README.md", "step-time-table", "tools/results_tables.py", readme_step_times),
    ("docs/benchmarks.md", "all-reduce-cost-table", "tools/results_tables.py",
     all_reduce_cost_table),
    ("docs/benchmarks.md", "all-reduce-ab-table", "tools/results_tables.py", all_reduce_ab_table),
    ("docs/benchmarks.md", "passthrough-table", "tools/results_tables.py", passthrough_table),
    ("docs/benchmarks.md", "codec-ab-table", "tools/results_tables.py", codec_ab_table),
    ("docs/benchmarks.md", "zero3-rounds-table", "tools/results_tables.py", zero3_rounds_table),
    ("docs/benchmarks.md", "tcp-congestion-table", "tools/results_tables.py",
     tcp_congestion_table),
    ("docs/benchmarks.md", "hsdp-1000-cubic-table", "tools/results_tables.py",
     functools.partial(case_files_table, case=("hsdp", 1000.0, "cubic"))),
    ("docs/benchmarks.md", "replicated-auto-table", "tools/results_tables.py",
     replicated_auto_table),
    ("README.md", "gpu-loss-table", "tools/results_tables.py", gpu_loss_table),
    ("README.md", "gpu-bench-table", "tools/results_tables.py", gpu_bench_table),
)


def _block(marker):
    return re.compile(r"(<!-- " + re.escape(marker) + r":begin[^\n]*-->\n)(.*?)(<!-- " +
                      re.escape(marker) + r":end -->)", re.S)


def check(root):
    """One line per table whose page text differs from what its files make (empty: none)."""
    problems = []
    for page, marker, target, render in TABLES:
        with open(os.path.join(root, page)) as source:
            found = _block(marker).search(source.read())
        if found is None:
            problems.append(f"{page}: no <!-- {marker}:begin ... --> ... <!-- {marker}:end --> "
                            "markers")
            continue
        expected = render(root).splitlines()
        shown = found.group(2).splitlines()
        for number, (want, have) in enumerate(zip(expected, shown), start=1):
            if want != have:
                problems.append(f"{page}: table {marker}, row {number}: shows {have!r}, its files "
                                f"say {want!r} (rewrite it: tools/results_tables.py)")
                break
        else:
            if len(expected) != len(shown):
                problems.append(f"{page}: table {marker} has {len(shown)} rows, its files make "
                                f"{len(expected)} (rewrite it: tools/results_tables.py)")
    return problems


def write(root):
    for page, marker, target, render in TABLES:
        path = os.path.join(root, page)
        with open(path) as source:
            text = source.read()
        block = _block(marker)
        if block.search(text) is None:
            raise SystemExit(f"results_tables: {page} has no <!-- {marker}:begin --> markers")
        table = render(root)
        text = block.sub(lambda m: f"<!-- {marker}:begin ({target}) -->\n{table}{m.group(3)}",
                         text)
        with open(path, "w") as out:
            out.write(text)
        print(f"results_tables: {page}: {marker} written")


def self_test():
    with tempfile.TemporaryDirectory() as scratch:
        for part in ("README.md", "docs", "bench", "tools"):
            source = os.path.join(ROOT, part)
            copy = shutil.copytree if os.path.isdir(source) else shutil.copy
            copy(source, os.path.join(scratch, part))
        if check(scratch):
            raise SystemExit("self-test: the tables disagree with their files before planting")
        readme = os.path.join(scratch, "README.md")
        with open(readme) as source:
            text = source.read()
        row = readme_step_times(scratch).splitlines()[2]
        stale = re.sub(r"(\d)\.(\d{3}) s",
                       lambda m: f"{m.group(1)}.{(int(m.group(2)) + 1) % 1000:03d} s", row, count=1)
        with open(readme, "w") as out:
            out.write(text.replace(row, stale, 1))
        problems = check(scratch)
        if not any("step-time-table" in problem and "row 3" in problem for problem in problems):
            raise SystemExit(f"self-test: a stale figure ({stale}) was not reported: {problems}")
    print("self-test: a stale figure in the README's step times was reported")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=ROOT)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.check:
        write(args.root)
        return 0
    problems = check(args.root)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} table(s) disagree with their files" if problems else
          f"every result table matches its files: {len(TABLES)} tables")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
