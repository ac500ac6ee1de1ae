#!/usr/bin/env python3
"""zpp's report of a whole job: every process's statistics file in a ZPP_STATS_DIR folder (one
per process and library, written at exit) summed into one table, with a hint for what kept the
calls from being compressed. zpp-run --stats runs it after the job; alone:

    tools/zpp_report.py FOLDER [--json]
"""
import argparse
import json
import os
import signal
import sys

PATHS = (("qwz", "qwZ (flat quantized all-gather)"), ("hpz", "hpZ (hierarchical all-gather)"),
         ("qgz", "qgZ (quantized reduce-scatter)"),
         ("qar", "qAR (compressed all-reduce)"))
OFF_NODE_LINKS = ("inter_node", "inter_rack")

# What the report says when one reason made most calls pass through: {reason: text(count,
# calls, settings)}.
HINTS = {
    "small": lambda n, calls, s: (
        f"{n} of {calls} calls under ZPP_MIN_BYTES={_size(s.get('ZPP_MIN_BYTES'))}: lower it "
        "for a small model"),
    "disabled": lambda n, calls, s: (
        f"{n} of {calls} calls asked for no technique: {_switches_off(s)}"),
    "dtype": lambda n, calls, s: (
        f"{n} of {calls} calls are of a dtype zpp does not compress (fp32, fp16 and bf16 only)"),
    "redop": lambda n, calls, s: (
        f"{n} of {calls} reduce-scatters use a reduction zpp does not take (sum, avg and "
        "pre-multiplied sum only)"),
    "topology": lambda n, calls, s: (
        f"{n} of {calls} calls could not run hierarchically: one rank per node, or uneven or "
        "interleaved nodes (ZPP_LOCAL_SIZE, ZPP_NODE_ID set the grouping)"),
    # Filled in by hint(): whether anything else compressed tells by design from a mistake.
    "one-node": None,
    "one-rank": lambda n, calls, s: f"{n} of {calls} calls ran on one-rank communicators",
    "config-mismatch": lambda n, calls, s: (
        f"{n} of {calls} calls passed through because the ranks' ZPP_* settings differ (see the "
        "WARN naming the variable)"),
    "nonblocking": lambda n, calls, s: (
        f"{n} of {calls} calls came before a nonblocking communicator's set-up"),
    "capture": lambda n, calls, s: f"{n} of {calls} calls were captured into a CUDA graph",
    "tuned": lambda n, calls, s: (
        f"{n} of {calls} calls: ZPP_TUNE measured NCCL faster on these links for their sizes"),
}

def _on(settings, name):
    return settings.get(name) not in (None, "", "0")


def _switches_off(settings):
    """The switches this job left off, each with the collectives it would take."""
    off = []
    if not (_on(settings, "ZPP_QWZ") or _on(settings, "ZPP_HPZ")):
        off.append("ZPP_QWZ or ZPP_HPZ takes all-gathers")
    if not _on(settings, "ZPP_QGZ"):
        off.append("ZPP_QGZ takes reduce-scatters")
    if off:
        off[-1] += " (FSDP, ZeRO-3: zpp-run --preset zero++ sets all three)"
    if not _on(settings, "ZPP_QAR"):
        off.append("ZPP_QAR takes all-reduces (DDP, HSDP's replicas: zpp-run --qar)")
    if not off:
        return "the switches that are on do not take these calls' collectives"
    return "; ".join(off)


def _feedback_label(settings):
    """Whose error feedback the feedback counters count: qgZ's, qAR's or both."""
    owners = [name for name, switch in (("qgZ", "ZPP_QGZ_EF"), ("qAR", "ZPP_QAR_EF"))
              if _on(settings, switch)]
    return f"{' and '.join(owners) or 'qgZ'} error feedback"


NO_COMMUNICATOR = (
    "zpp saw no communicator in this job: no process opened one with zpp loaded. Most often the "
    "script runs on the CPU with torch.distributed's gloo backend, which zpp does not see ("
    "`zpp-run --cpu` runs its gloo groups on zpp unchanged; or use the backend `zpp`: import "
    "zpp_torch, init_process_group('zpp')); or the program never "
    "called NCCL; or a launcher cleared LD_PRELOAD before starting the ranks.")


NO_COMMUNICATOR_CPU = (
    "zpp saw no communicator in this job: with --cpu every CPU process group torch makes runs on "
    "zpp, and no process made one; or a launcher cleared LD_PRELOAD and PYTHONPATH before "
    "starting the ranks.")


def _how_it_ended(code):
    """The command's end in words: a negative code is the signal that stopped it."""
    if code < 0:
        try:
            return f"was stopped by {signal.Signals(-code).name}"
        except ValueError:
            return f"was stopped by signal {-code}"
    return f"ended with exit status {code}"


def _size(text):
    try:
        value = int(text)
    except (TypeError, ValueError):
        return text
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale} {unit}"
    return f"{value} B"


def load(folder):
    """Every statistics file of the folder, parsed; unreadable ones are named on stderr."""
    files = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(folder, name)) as handle:
                files.append(json.load(handle))
        except (OSError, ValueError) as error:
            print(f"zpp report: skipping {name}: {error}", file=sys.stderr)
    return files


def summarize(files):
    """The job's totals, as a dict (what --json prints)."""
    total = {"processes": len(files), "communicators": 0, "ranks": 0,
             "calls": {path: 0 for path, _ in PATHS}, "input_bytes": {path: 0 for path, _ in PATHS},
             "pass_through": {}, "pass_through_calls": 0, "off_node_bytes": 0,
             "plain_off_node_bytes": 0, "hpz_hits": 0, "hpz_misses": 0,
             "hpz_verify_failures": 0, "qgz_ef_calls": 0, "qgz_ef_without": 0, "qwz_delta_calls": 0,
             "qwz_delta_full": 0, "hpz_skipped_steps": 0, "settings": files[0]["settings"] if files else {}}
    ranks = set()
    for file in files:
        for comm in file["communicators"]:
            total["communicators"] += 1
            ranks.add((comm["nranks"], comm["rank"]))
            for path, _ in PATHS:
                total["calls"][path] += comm["calls"].get(path, 0)
                total["input_bytes"][path] += comm["input_bytes"].get(path, 0)
            for reason, count in comm["pass_through"].items():
                total["pass_through"][reason] = total["pass_through"].get(reason, 0) + count
                total["pass_through_calls"] += count
            total["off_node_bytes"] += sum(comm["sent_bytes"].get(link, 0)
                                           for link in OFF_NODE_LINKS)
            total["plain_off_node_bytes"] += comm["plain_off_node_bytes"]
            for key in ("hpz_hits", "hpz_misses", "hpz_verify_failures"):
                total[key] += comm[key]
            for key in ("qgz_ef_calls", "qgz_ef_without", "qwz_delta_calls", "qwz_delta_full"):
                total[key] += comm.get(key, 0)
            # Process-wide, and every rank skips the same steps: the job's count, not a sum.
            total["hpz_skipped_steps"] = max(total["hpz_skipped_steps"],
                                             comm.get("hpz_skipped_steps", 0))
    total["ranks"] = max((nranks for nranks, _ in ranks), default=0)
    all_calls = sum(total["calls"].values()) + total["pass_through_calls"]
    total["all_calls"] = all_calls
    plain = total["plain_off_node_bytes"]
    total["off_node_share_of_plain"] = total["off_node_bytes"] / plain if plain else None
    total["hint"] = hint(total)
    return total


def hint(total):
    """One line for the reason that made most calls pass through, or None."""
    if not total["pass_through"]:
        return None
    reason, count = max(total["pass_through"].items(), key=lambda item: item[1])
    if count * 2 < total["all_calls"]:
        return None
    if reason == "one-node":
        return _one_node_hint(count, total)
    text = HINTS.get(reason)
    if text is None:
        return f"{count} of {total['all_calls']} calls passed through ({reason})"
    return text(count, total["all_calls"], total["settings"])


def _one_node_hint(count, total):
    if any(total["calls"].values()):  # other communicators span nodes: inside one by design
        return (f"{count} of {total['all_calls']} calls ran on communicators inside one node "
                "(HSDP's shard groups, for one): nothing crosses a node there, so they are plain "
                "by design")
    return (f"{count} of {total['all_calls']} calls ran on communicators inside one node: zpp "
            "saves only what crosses nodes; to try zpp on one machine, ZPP_LOCAL_SIZE=2 makes "
            "its ranks simulated nodes of 2 (docs/training.md)")


def table(total):
    lines = [f"zpp job report: {total['processes']} process(es), {total['communicators']} "
             f"communicator(s), {total['ranks']} ranks in the largest"]
    lines.append(f"  {'technique':<34} {'calls':>10} {'input bytes':>16}")
    for path, label in PATHS:
        if total["calls"][path]:
            lines.append(f"  {label:<34} {total['calls'][path]:>10} "
                         f"{total['input_bytes'][path]:>16}")
    reasons = ", ".join(f"{reason} {count}" for reason, count in
                        sorted(total["pass_through"].items(), key=lambda item: -item[1]))
    lines.append(f"  {'passed through (plain collective)':<34} {total['pass_through_calls']:>10}"
                 + (f"   ({reasons})" if reasons else ""))
    if not any(total["calls"].values()):
        lines.append("  zpp compressed no call: every one passed through")
    share = total["off_node_share_of_plain"]
    if share is not None:
        lines.append(f"  bytes sent off the nodes: {total['off_node_bytes']}; plain (NCCL's ring) "
                     f"for the same calls: {total['plain_off_node_bytes']}; {share:.3f} of plain, "
                     f"{round(100 * (1 - share), 1) + 0.0:.1f}% saved")  # never -0.0
    if total["hpz_hits"] + total["hpz_misses"] + total["hpz_verify_failures"]:
        lines.append(f"  hpZ: {total['hpz_hits']} hits, {total['hpz_misses']} misses, "
                     f"{total['hpz_verify_failures']} verification failures")
    if total["hpz_skipped_steps"]:
        lines.append(f"  hpZ step guard: {total['hpz_skipped_steps']} optimizer step(s) skipped on "
                     f"every rank, where a check failed (the WARN lines name them)")
    if total["qgz_ef_calls"] + total["qgz_ef_without"]:
        lines.append(f"  {_feedback_label(total['settings'])}: {total['qgz_ef_calls']} calls "
                     "kept their residual, "
                     f"{total['qgz_ef_without']} ran without (past ZPP_EF_MAX_MB)")
    if total["qwz_delta_calls"] + total["qwz_delta_full"]:
        lines.append(f"  qwZ deltas: {total['qwz_delta_calls']} weight gathers sent a delta, "
                     f"{total['qwz_delta_full']} sent in full (first step, changed pattern, "
                     f"refresh)")
    if total["hint"]:
        lines.append(f"  hint: {total['hint']}")
    if total.get("ended"):
        lines.append(f"  {total['ended']}")
    return "\n".join(lines)


def report(folder, as_json=False, exit_code=None, cpu=False):
    """The report's text for a folder (no communicator: the line that says so). `exit_code`: how
    the command ended, where known (negative: the signal that stopped it); `cpu`: zpp-run --cpu."""
    files = load(folder)
    failed = exit_code is not None and exit_code != 0
    if not any(file["communicators"] for file in files):
        if failed:
            note = (f"zpp job report: none: the command {_how_it_ended(exit_code)}, and no "
                    "process wrote zpp's statistics (a process writes them when it exits "
                    "normally)")
        else:
            note = NO_COMMUNICATOR_CPU if cpu else NO_COMMUNICATOR
        return json.dumps({"processes": len(files), "communicators": 0,
                           "note": note}) if as_json else note
    total = summarize(files)
    if failed:
        total["ended"] = (f"the command {_how_it_ended(exit_code)}: this report covers the "
                          f"{len(files)} process(es) that wrote their statistics")
    return json.dumps(total, indent=1) if as_json else table(total)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="the job's ZPP_STATS_DIR")
    parser.add_argument("--json", action="store_true", help="the totals as JSON")
    args = parser.parse_args(argv)
    print(report(args.folder, args.json))


if __name__ == "__main__":
    main(sys.argv[1:])
