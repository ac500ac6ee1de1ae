"""Loss curves of the FSDP2 runs side by side (CSV files from train_fsdp2.py) into one PNG, and
a markdown table of final losses (bench/quantities.py: the mean of the last 10% of the steps)
relative to plain NCCL.

    plot_losses.py OUT.png nccl=loss_nccl.csv qwz=loss_qwz.csv ...
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), ".."))
import quantities  # noqa: E402 (the final loss, defined once)


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
    plain = quantities.final_loss(curves["nccl"][1])
    print("| run | final loss | vs plain |")
    print("|---|---:|---:|")
    for name, (_, losses) in curves.items():
        final = quantities.final_loss(losses)
        print(f"| {name} | {final:.5f} | {quantities.relative_pct(final, plain):+.3f}% |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
