#!/usr/bin/env python3
"""Plots zpp-bench JSON files (zpp-bench --json FILE) as PNGs:

  busbw_vs_size.png    busbw against size, one line per mode, one panel per operation (not on
                       the sim backend, whose times are the CPU time of a simulation)
  off_node_vs_size.png on the sim backend instead: the bytes that crossed node boundaries per
                       call against size (exact counts), one line per mode
  step_volume.png      inter-node bytes per ZeRO-3 step per configuration (units of one
                       all-gather of the model: plain ZeRO-3 is 3.0)
  error_vs_bits.png    relative L2 error against bits on the wire, per technique

Usage: tools/plot_bench.py [--out DIR] FILE.json [FILE.json ...]
Rows and steps of all files are plotted together. Prints the path of each PNG written. On the
sim backend times are the CPU time of a simulation: no plot shows them.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def load(paths):
    reports = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            reports.append(json.load(f))
    return reports


def human_bytes(n):
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} TiB"


def time_label(reports):
    backends = {r.get("backend", "?") for r in reports}
    if backends == {"sim"}:
        return "sim backend: CPU time of a simulation, not a network"
    return "backend " + ", ".join(sorted(backends))


def unique_rows(reports):
    """Rows of all files, the first of each (op, mode, dtype, bytes) only."""
    seen, rows = set(), []
    for report in reports:
        for row in report["rows"]:
            key = (row["op"], row["mode"], row["dtype"], row["bytes"])
            if key not in seen:
                seen.add(key)
                rows.append(row)
    return rows


def only_sim(reports):
    return {r.get("backend", "?") for r in reports} == {"sim"}


def off_node_bytes(row):
    return row["bytes_inter_node"] + row["bytes_inter_rack"]


def plot_per_mode(reports, out, name, value, ylabel, title, log_y=False):
    """One panel per operation, one line per (mode, dtype): `value(row)` against size. A point
    zpp passed through to plain (below ZPP_MIN_BYTES) is hollow."""
    rows = unique_rows(reports)
    if not rows:
        return None
    ops = sorted({row["op"] for row in rows})
    fig, axes = plt.subplots(1, len(ops), figsize=(6 * len(ops), 4.5), squeeze=False)
    for ax, op in zip(axes[0], ops):
        series = {}
        for row in rows:
            if row["op"] == op:
                series.setdefault(f'{row["mode"]} ({row["dtype"]})', []).append(row)
        for key, points in sorted(series.items()):
            points.sort(key=lambda row: row["bytes"])
            line, = ax.plot([p["bytes"] for p in points], [value(p) for p in points], label=key)
            for p in points:
                passed = p.get("plan") == "pass-through" and p["mode"] != "plain"
                ax.plot(p["bytes"], value(p), marker="o", color=line.get_color(),
                        markerfacecolor="white" if passed else line.get_color())
        ax.set_xscale("log", base=2)
        if log_y:
            ax.set_yscale("log", base=2)
        ax.set_xlabel("size (bytes, whole buffer)")
        ax.set_ylabel(ylabel)
        ax.set_title(op)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = os.path.join(out, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_busbw(reports, out):
    """busbw against size; on the sim, whose times are a simulation's CPU time, the bytes that
    crossed node boundaries instead (exact counts)."""
    if only_sim(reports):
        return plot_per_mode(
            reports, out, "off_node_vs_size.png", off_node_bytes,
            "bytes across node boundaries (all ranks)",
            "bytes that crossed node boundaries per call (exact counts of the simulated cluster; "
            "its times are CPU time and not plotted)\nhollow: passed through to plain below "
            "ZPP_MIN_BYTES", log_y=True)
    return plot_per_mode(
        reports, out, "busbw_vs_size.png", lambda row: row["busbw_gbps"], "busbw (GB/s)",
        "busbw against size per mode (hollow: passed through to plain below ZPP_MIN_BYTES)\n" +
        time_label(reports))


def plot_step_volume(reports, out):
    steps = [s for r in reports for s in r.get("steps", [])]
    if not steps:
        return None
    models = list(dict.fromkeys(s["model"] for s in steps))
    configs = list(dict.fromkeys(s["config"] for s in steps))
    width = 0.8 / len(models)
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(configs)), 4.5))
    for i, model in enumerate(models):
        values = {s["config"]: s["relative_volume"] for s in steps if s["model"] == model}
        xs = [c + (i - (len(models) - 1) / 2) * width for c in range(len(configs))]
        heights = [values.get(c, 0) for c in configs]
        bars = ax.bar(xs, heights, width, label=model)
        for bar, h in zip(bars, heights):
            ax.annotate(f"{h:.2f}", (bar.get_x() + bar.get_width() / 2, h), ha="center",
                        va="bottom", fontsize=7)
    ax.axhline(3.0, color="gray", linestyle="--", linewidth=1)
    ax.axhline(0.75, color="green", linestyle=":", linewidth=1,
               label="ZeRO++ paper: 0.75 (published)")
    ax.set_xticks(range(len(configs)))
    ax.set_xticklabels(configs, rotation=20)
    ax.set_ylabel("inter-node bytes per step\n(all-gathers of the model)")
    ax.set_title("ZeRO-3 step on the simulated cluster (exact byte counts); plain = 3.0",
                 fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out, "step_volume.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_error_vs_bits(reports, out):
    rows = [row for row in unique_rows(reports) if row.get("wrong") is None]
    if not rows:
        return None
    # Per technique and bits on the wire: the largest size's error, named by its simplest mode.
    points = {}
    for row in rows:
        if row["op"] == "allgather" and row.get("qwz_bits"):
            series, bits = f'qwZ weights ({row["dtype"]})', row["qwz_bits"]
        elif row["op"] == "reducescatter" and row.get("qgz_bits_inter"):
            series = f'qgZ gradients, intra-node {row["qgz_bits_intra"]} bits ({row["dtype"]})'
            bits = row["qgz_bits_inter"]
        else:
            continue
        best = points.get((series, bits))
        if (best is None or row["bytes"] > best["bytes"] or
                (row["bytes"] == best["bytes"] and len(row["mode"]) < len(best["mode"]))):
            points[(series, bits)] = row
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for index, series in enumerate(sorted({s for s, _ in points})):
        chosen = sorted((bits, row) for (s, bits), row in points.items() if s == series)
        ax.plot([b for b, _ in chosen], [100 * r["rel_l2_err"] for _, r in chosen], marker="o",
                label=series)
        for bits, row in chosen:
            ax.annotate(row["mode"], (bits, 100 * row["rel_l2_err"]), fontsize=7,
                        textcoords="offset points", xytext=(6, -3 + 9 * index))
    ax.set_xticks([4, 8])
    ax.set_xlim(3, 9.5)
    ax.set_xlabel("bits per element across nodes")
    ax.set_ylabel("relative L2 error (%)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("error against bit width (fp64 reference, Gaussian inputs, largest size)",
                 fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out, "error_vs_bits.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=".", help="folder for the PNGs")
    parser.add_argument("files", nargs="+", help="zpp-bench JSON files")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    reports = load(args.files)
    written = [p for p in (plot_busbw(reports, args.out), plot_step_volume(reports, args.out),
                           plot_error_vs_bits(reports, args.out)) if p]
    if not written:
        print("plot_bench: nothing to plot (no rows, no steps)", file=sys.stderr)
        return 1
    for path in written:
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
