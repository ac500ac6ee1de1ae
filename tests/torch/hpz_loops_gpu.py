"""hpZ under FSDP2's training loops on a GPU (issue 44, acceptance item 5): the loops of
tests/torch/hpz_loops_train.py (default: stochastic depth and the EMA swap) over plain NCCL, with
no zpp at all, and under `tools/zpp-run --hpz` (libzpp.so preloaded; NCCL, not --cpu), 4 ranks
as 2 simulated nodes of 2 (ZPP_LOCAL_SIZE=2; several ranks on one GPU each take their own
NCCL_HOSTID). tools/gpu-check.sh's part hpz-loops runs it.

    python3 tests/torch/hpz_loops_gpu.py BUILD [--loops a,b] [--keep DIR] [--json FILE]

Both modes run every loop in one job each (one start-up of torch; each loop a fresh model on a
fresh process group). Here the autograd engine runs the backward on its own threads
(pt_autograd_<device>), which is how the preloaded engine tells a backward all-gather from a
forward one. What must hold, per loop:
  - plain: every rank's results, on NCCL, finite, and no libzpp.so in the process (no counters);
  - hpz: on NCCL through libzpp.so (its zppGetStats counters are there), bitwise plain's
    per-step losses (training and evaluation) and final shards on every rank, hpZ hit on every
    rank (in a loop that gathers a block twice per step: all but no_reshard), no verification
    failure and no skipped step (no loop here changes a weight in place: inplace_change, with
    its skipped-step reference, is the CPU driver's, tests/torch/hpz_loops_test.py).
Prints a markdown table (one row per loop and mode), every failure (FAIL ...), and a last line
that starts with "hpz_loops_gpu:"; exits 1 when a check failed, 77 when torch sees no GPU. No
rerun: a job that fails or outlives --timeout fails its loops (the device call is short).
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.realpath(os.path.join(HERE, "..", ".."))
TRAIN = os.path.join(HERE, "hpz_loops_train.py")
sys.path.insert(0, HERE)
import hpz_loops_test as driver  # noqa: E402 (the CPU driver's jobs and readers; no torch)
import hpz_loops_train  # noqa: E402 (the loop names)

DEFAULT_LOOPS = ("stochastic_depth", "ema_eval")
# inplace_change's skipped steps need plain runs without them (the CPU driver's reference).
LOOPS = tuple(loop for loop in hpz_loops_train.LOOPS if loop != "inplace_change")
HITS_EXPECTED = tuple(loop for loop in LOOPS if loop != "no_reshard")  # as the CPU driver's
MODES = ("plain", "hpz")


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", help="the build folder (its lib/libzpp.so is preloaded)")
    parser.add_argument("--loops", default=",".join(DEFAULT_LOOPS),
                        help="comma list, of " + ", ".join(LOOPS))
    parser.add_argument("--steps", type=int, default=9, help="optimizer steps per loop")
    parser.add_argument("--timeout", type=int, default=90,
                        help="seconds one mode's job (every loop) may take (default 90)")
    parser.add_argument("--keep", help="write the runs here and keep them (default: a temporary "
                                       "folder, removed)")
    parser.add_argument("--json", help="write the per-step losses, digests and counters here")
    parser.add_argument("--dry-run", action="store_true",
                        help="print each mode's rank command and environment, run nothing")
    args = parser.parse_args()
    args.loops = [loop for loop in args.loops.split(",") if loop]
    unknown = [loop for loop in args.loops if loop not in LOOPS]
    if unknown or not args.loops:
        parser.error(f"unknown loops {unknown} (the loops here: {', '.join(LOOPS)})")
    return args


def command(build, mode, loops, folder, steps):
    """A rank's argv after sys.executable (Ranks starts it)."""
    train = [TRAIN, "--device", "cuda", "--loop", ",".join(loops), "--out", folder,
             "--steps", str(steps)]
    if mode == "plain":
        return train
    return [os.path.join(ROOT, "tools", "zpp-run"), "--lib",
            os.path.join(build, "lib", "libzpp.so"), "--hpz", "--", sys.executable] + train


def environment(mode):
    """The ranks' environment: no ZPP_* setting of the caller's and no libzpp.so in LD_PRELOAD
    (plain is unwrapped NCCL; zpp-run preloads it for hpz); for hpz the simulated nodes and the
    size threshold of the CPU driver (every block's all-gather is above it)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ZPP_")}
    preload = [p for p in env.pop("LD_PRELOAD", "").split(":")
               if p and os.path.basename(p) != "libzpp.so"]
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    if mode != "plain":
        env.update(ZPP_LOCAL_SIZE="2", ZPP_MIN_BYTES="65536")
    return env


def launch(build, mode, loops, folder, steps, timeout):
    """Every loop in one job of 4 ranks (the CPU driver's run_job): ({loop: [rank's result] or
    None}, {loop: [rank's output]}, the error or None, seconds)."""
    per_loop, error, seconds = driver.run_job(command(build, mode, loops, folder, steps),
                                              environment(mode), loops, folder, timeout)
    return ({loop: results for loop, (results, _) in per_loop.items()},
            {loop: output for loop, (_, output) in per_loop.items()}, error, seconds)


def check_loop(loop, runs):
    """(rows, failures) of one loop: `runs` is {mode: (results, outputs, error, seconds)}."""
    failures, rows = [], []
    for mode in MODES:
        results = runs[mode][0].get(loop)
        row = {"loop": loop, "mode": mode, "ok": True, "final": "-", "vs_plain": "",
               "hits": "", "verify": "", "skipped": ""}
        rows.append(row)

        def fail(message, row=row, mode=mode):
            failures.append(f"{loop} / {mode}: {message}")
            row["ok"] = False

        if results is None:
            error = runs[mode][2] or "no result files"
            fail(f"no result: {error}")
            continue
        row["final"] = f"{driver.final_loss(results):.6f}"
        backends = sorted({result["backend"] for result in results})
        if backends != ["nccl"]:
            fail(f"the loop's group ran on {backends}, not nccl")
        bad = driver.nonfinite(results)
        if bad:
            fail("NaN or inf: " + "; ".join(bad))
        stats = [result.get("stats") for result in results]
        if mode == "plain":
            if any(s is not None for s in stats):
                fail("zpp's counters are there: libzpp.so was loaded in the plain NCCL run")
            continue
        if any(s is None for s in stats):
            fail("no zpp counters (zppGetStats) on ranks "
                 f"{[r for r, s in enumerate(stats) if s is None]}: libzpp.so was not preloaded")
            continue
        hits = driver.stat(results, "hpz_hits")
        verify = driver.stat(results, "hpz_verify_failures")
        skipped = driver.stat(results, "hpz_skipped_steps")
        row["hits"], row["verify"] = "/".join(map(str, hits)), "/".join(map(str, verify))
        row["skipped"] = "/".join(map(str, skipped))
        if loop in HITS_EXPECTED and not all(h and h > 0 for h in hits):
            fail(f"hpZ did not hit on every rank (hpz_hits per rank {hits}), in a loop that "
                 "gathers each block twice per step")
        if any(verify) or any(skipped):
            fail(f"hpZ verification failures {verify} and skipped steps {skipped} per rank, in a "
                 "loop that changes no weight in place")
        left = [steps for steps in driver.skipped_steps(results) if steps]
        if left:
            fail(f"optimizer steps that changed no shard, per rank: {left}")
        plain = runs["plain"][0].get(loop)
        if plain is None:
            row["vs_plain"] = "not compared"
            fail("not compared: plain has no result")
            continue
        differences = driver.bitwise_differences(results, plain)
        row["vs_plain"] = "differs" if differences else "bitwise"
        if differences:
            fail("not bitwise plain NCCL: " + "; ".join(differences))
    return rows, failures


def print_table(rows, seconds):
    print("| loop | mode | result | final loss | vs plain | hpz_hits per rank | verify fails | "
          "skipped steps |")
    print("|---|---|---|---:|---|---|---|---|")
    for r in rows:
        print(f"| {r['loop']} | {r['mode']} | {'ok' if r['ok'] else 'FAIL'} | {r['final']} | "
              f"{r['vs_plain']} | {r['hits']} | {r['verify']} | {r['skipped']} |")
    print("jobs: " + ", ".join(f"{mode} {value:.0f} s" for mode, value in seconds.items()))


def summary(runs, failures):
    """The JSON written with --json: per loop, mode and rank the per-step losses (and their
    float.hex), the digests and zpp's counters; the failures."""
    loops = {}
    for mode, (results, _, error, seconds) in runs.items():
        for loop, ranks in results.items():
            entry = loops.setdefault(loop, {})
            if ranks is None:
                entry[mode] = {"error": error}
                continue
            entry[mode] = {"seconds": seconds, "ranks": [
                {"rank": r["rank"], "losses": [s["losses"] for s in r["steps"]],
                 "eval_losses": [s["eval_losses"] for s in r["steps"]],
                 "losses_hex": [driver.hexes(s["losses"] + s["eval_losses"]) for s in r["steps"]],
                 "digests": [s["digest"] for s in r["steps"]], "final_digest": r["digest"],
                 "stats": [s["stats"] for s in r["steps"]]} for r in ranks]}
    return {"loops": loops, "failures": failures}


def main():
    args = parse()
    build = os.path.realpath(args.build)
    if args.dry_run:
        for mode in MODES:
            env = environment(mode)
            settings = " ".join(f"{k}={v}" for k, v in sorted(env.items())
                                if k.startswith("ZPP_") or k == "LD_PRELOAD")
            print(f"{mode}: {settings} {sys.executable} "
                  + " ".join(command(build, mode, args.loops, "OUT", args.steps)))
        return 0
    try:
        import torch
    except ImportError as error:
        print(f"hpz_loops_gpu: no torch here ({error})")
        return 77
    if not torch.cuda.is_available():
        print("hpz_loops_gpu: torch sees no GPU (torch.cuda.is_available() is False): nothing "
              "to run")
        return 77
    started = time.monotonic()
    work = args.keep or tempfile.mkdtemp(prefix="zpp-hpz-loops-gpu-")
    if args.keep:
        shutil.rmtree(work, ignore_errors=True)
    try:
        runs = {}
        for mode in MODES:
            runs[mode] = launch(build, mode, args.loops, os.path.join(work, mode), args.steps,
                                args.timeout)
            ran = sum(results is not None for results in runs[mode][0].values())
            print(f"{mode}: {ran} of {len(args.loops)} loops ran, {runs[mode][3]:.0f} s",
                  flush=True)
        rows, failures = [], []
        for loop in args.loops:
            more_rows, more_failures = check_loop(loop, runs)
            rows += more_rows
            failures += more_failures
        print_table(rows, {mode: run[3] for mode, run in runs.items()})
        if args.json:
            os.makedirs(os.path.dirname(os.path.realpath(args.json)), exist_ok=True)
            with open(args.json, "w") as sink:
                json.dump(summary(runs, failures), sink, indent=1)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    wall = time.monotonic() - started
    for failure in failures:
        print(f"FAIL {failure}")
    if failures:
        print(f"hpz_loops_gpu: {len(failures)} failure(s) in {len(args.loops)} loops, {wall:.0f} s")
        return 1
    print(f"hpz_loops_gpu: every check held for {len(args.loops)} loops ({', '.join(args.loops)}),"
          f" plain NCCL and zpp-run --hpz, {wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
