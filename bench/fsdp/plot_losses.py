"""Loss curves of the FSDP2 runs side by side (CSV files from train_fsdp2.py) into one PNG, and
a markdown table of final losses relative to plain NCCL.

    plot_losses.py OUT.png nccl=loss_nccl.csv qwz=loss_qwz.csv ...
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(out, runs):
    curves = {}
    for run in runs:
        name, path = run.split("=", 1)
        with open(path) as f:
            rows = list(csv.DictReader(f))
        curves[name] = ([int(r["step"]) for r in rows], [float(r["loss"]) for r in rows])
    figure, axes = plt.subplots(figsize=(7, 4))
    for name, (steps, losses) in curves.items():
        axes.plot(steps, losses, label=name)
    axes.set_xlabel("step")
    axes.set_ylabel("loss (mean over ranks)")
    axes.set_title("FSDP2 GPT, 4 ranks: plain NCCL and zpp")
    axes.legend()
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    plain = curves["nccl"][1][-1]
    print("| run | final loss | vs plain |")
    print("|---|---:|---:|")
    for name, (_, losses) in curves.items():
        print(f"| {name} | {losses[-1]:.4f} | {100 * (losses[-1] - plain) / plain:+.2f}% |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
