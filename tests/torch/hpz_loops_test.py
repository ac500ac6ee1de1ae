"""hpZ under the training loops that change what a step gathers (issue 44, acceptance item 1):
stochastic depth, an EMA evaluation, a validation loop, SAM's two passes, gradient accumulation,
activation checkpointing, bf16 parameters, reshard_after_forward=False and a weight changed in
place between a forward and its backward (tests/torch/hpz_loops_train.py, an ordinary gloo FSDP2
script). Each runs under `tools/zpp-run --cpu` in three modes: plain, --hpz and --preset zero++,
4 CPU ranks as 2 simulated nodes of 2 (tests/torch/launch.py), and once on pure gloo.

    tests/torch/run.sh BUILD tests/torch/hpz_loops_test.py BUILD [--loops a,b] [--keep DIR]
    tests/torch/run.sh BUILD tests/torch/hpz_loops_test.py BUILD --framework deepspeed

--framework deepspeed runs the same loops under an unmodified DeepSpeed ZeRO-3 engine
(tests/torch/hpz_loops_deepspeed_train.py, DS_ACCELERATOR=cpu), with the same checks, in the
modes plain, hpz and zero++ only (plain through zpp against gloo under DeepSpeed is
TrainDeepspeedPlainEqualsGlooAndZeroppTakes's check; --gloo adds it here): 95 to 150 s on 2
busy cores, most of it the start-up of torch and DeepSpeed in each mode's job.

Each mode runs every loop in one job (one start-up of torch; each loop a fresh model on a fresh
process group, so a fresh zpp communicator); a loop left without results by a failed job runs
again alone. About 110 s on 2 cores. What must hold, per loop:
  - plain through zpp: finite, and within 1e-5 relative of pure gloo's losses at every step
    (zpp's reduce-scatter sums in another order than gloo's: the last bits may differ, as
    bench/convergence/run.py allows);
  - hpz: bitwise plain's losses (training and evaluation) and final shards on every rank; in
    inplace_change either that, or a difference due only to zpp having skipped the step(s) in
    which the weight changed, on every rank: a WARN that says so (it names hpZ and "skipped"),
    nothing NaN or infinite, and bitwise the plain run that drops those steps' updates (a skipped
    step is one whose optimizer step changed no shard on any rank);
  - zero++: nothing NaN or infinite, and the final loss (mean over ranks of the last 10% of the
    steps, at least the last) within 1% of plain's (of plain without the skipped steps' updates
    where zpp skipped some, under the same conditions as hpz's);
  - hpz and zero++: no step skipped outside the steps that changed a weight in place, and hpZ
    hit on every rank in every loop that gathers a layer twice in a step (Framework's
    hits_expected).
All checks run, every failure is printed, then the test fails.
"""
import argparse
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.realpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import hpz_loops_deepspeed_train  # noqa: E402 (its loop names; torch is not imported)
import hpz_loops_train  # noqa: E402 (its loop names and in-place changes)
from launch import Ranks  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "bench"))
import quantities  # noqa: E402 (the final loss, defined once)

RANKS = 4
MODES = {"plain": [], "hpz": ["--hpz"], "zero++": ["--preset", "zero++"]}


class Framework:
    """A training script of the loops: its loops, those in which hpZ must hit (all but
    `without_reuse`), what its ranks need in their environment, and whether the pure gloo run is
    part of the set by default."""

    def __init__(self, name, train, loops, without_reuse, env=None, gloo=True):
        self.name, self.train, self.loops = name, train, loops
        self.hits_expected = tuple(loop for loop in loops if loop not in without_reuse)
        self.env, self.gloo = dict(env or {}), gloo


FRAMEWORKS = {
    # Where a layer is gathered twice in one step, so that hpZ has a reuse to take: FSDP2 with
    # reshard_after_forward=True gathers each block in its forward and again in its backward
    # (also around a checkpointed block's recomputation, for each of SAM's passes and for each
    # micro-batch). With reshard_after_forward=False (no_reshard) each block is gathered once
    # per step and its backward uses the kept unsharded weights: nothing for hpZ to reuse. (The
    # root's own small weights stay unsharded between its forward and backward in every loop.)
    "fsdp2": Framework("fsdp2", os.path.join(HERE, "hpz_loops_train.py"), hpz_loops_train.LOOPS,
                       ("no_reshard",)),
    # DeepSpeed ZeRO-3 with its live-parameter budgets at 0 releases every module's weights
    # after its forward and gathers them again in its backward, in every loop (around a
    # checkpointed block's recomputation too) but no_reshard, which leaves those budgets at
    # DeepSpeed's defaults (reshard_after_forward=False's counterpart): once the first step has
    # recorded the parameter trace, the weights stay gathered from the forward to the backward.
    # Every loop of the FSDP2 set is written for DeepSpeed.
    "deepspeed": Framework("deepspeed", os.path.join(HERE, "hpz_loops_deepspeed_train.py"),
                           hpz_loops_deepspeed_train.LOOPS, ("no_reshard",),
                           env={"DS_ACCELERATOR": "cpu"}, gloo=False),
}
CHANGE_STEPS = sorted({step for step, _, _, _ in hpz_loops_train.INPLACE_CHANGES})
MARKER = "=== hpz loop "
FINAL_TOLERANCE = 0.01
GLOO_TOLERANCE = 1e-5
SINGLE_TIMEOUT, ALL_TIMEOUT = 150, 300
DEADLINE = 720  # seconds: past it no rerun starts (ctest's TIMEOUT is 900)


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("--framework", choices=sorted(FRAMEWORKS), default="fsdp2")
    parser.add_argument("--loops", help="comma list (default: every loop of the framework)")
    gloo = parser.add_mutually_exclusive_group()
    gloo.add_argument("--no-gloo", action="store_true",
                      help="skip the pure gloo run (fsdp2; deepspeed skips it by default)")
    gloo.add_argument("--gloo", action="store_true", help="run pure gloo too (deepspeed)")
    parser.add_argument("--separate", action="store_true",
                        help="each loop in a job of its own (about 17 s more per loop and mode "
                             "on 2 cores): tells a loop's failure from one an earlier loop of the "
                             "same process left behind")
    parser.add_argument("--keep", help="write the runs here and keep them (default: a temporary "
                                       "folder, removed)")
    args = parser.parse_args()
    args.framework = FRAMEWORKS[args.framework]
    loops = args.framework.loops
    args.loops = [loop for loop in (args.loops or ",".join(loops)).split(",") if loop]
    unknown = [loop for loop in args.loops if loop not in loops]
    if unknown:
        parser.error(f"unknown loops {unknown} ({args.framework.name}: {', '.join(loops)})")
    args.with_gloo = args.gloo or (args.framework.gloo and not args.no_gloo)
    # inplace_change last: a WARN zpp prints at the end of the process still falls in its part.
    args.loops.sort(key=lambda loop: loop == "inplace_change")
    return args


class Run:
    """One mode's results, per loop: every rank's JSON and its part of the output."""

    def __init__(self):
        self.results = {}  # loop -> [rank's dict]
        self.output = {}  # loop -> [rank's text]
        self.errors = {}  # loop -> why it has no result
        self.seconds = 0.0


def environment(framework):
    env = {key: value for key, value in os.environ.items() if not key.startswith("ZPP_")}
    env.update(ZPP_LOCAL_SIZE="2", ZPP_TIMEOUT="60", ZPP_MIN_BYTES="65536")
    env.update(framework.env)
    return env


def command(build, framework, mode, loops, folder, extra=()):
    train = ([sys.executable, framework.train, "--loop", ",".join(loops), "--out", folder]
             + list(extra))
    if mode == "gloo":
        return train[1:]  # Ranks starts sys.executable
    return ([os.path.join(ROOT, "tools", "zpp-run"), "--lib",
             os.path.join(build, "lib", "libzpp.so"), "--cpu"] + MODES[mode] + ["--"] + train)


def split_output(text, loops):
    """A rank's output cut at the loops' begin markers; what precedes the first goes with it."""
    parts = {loop: [] for loop in loops}
    current = loops[0]
    for line in text.splitlines(keepends=True):
        if line.startswith(MARKER):
            name = line[len(MARKER):].split()[0]
            if name in parts:
                current = name
        parts[current].append(line)
    return {loop: "".join(lines) for loop, lines in parts.items()}


def launch(build, framework, mode, loops, folder, timeout, extra=()):
    """Runs `loops` in one job of 4 ranks; returns {loop: results or None}, outputs, an error."""
    return run_job(command(build, framework, mode, loops, folder, extra), environment(framework),
                   loops, folder, timeout)


def run_job(argv, env, loops, folder, timeout):
    """One job of RANKS ranks (`argv` after sys.executable, in `folder`) that runs `loops`, each
    rank writing FOLDER/LOOP/rank<r>.json; every rank's output goes to FOLDER/rank<r>.log. Returns
    ({loop: (the ranks' results, or None unless every rank wrote its own; each rank's output of
    that loop)}, the error (exit codes, hung ranks, the failed ranks' output) or None, seconds).
    The GPU driver (tests/torch/hpz_loops_gpu.py) runs its jobs through it too."""
    os.makedirs(folder, exist_ok=True)
    started = time.monotonic()
    ranks = Ranks(argv, RANKS, env=env, cwd=folder)
    hung = ranks.wait(timeout=timeout)
    seconds = time.monotonic() - started
    outputs = [ranks.output(rank) for rank in range(RANKS)]
    for rank, text in enumerate(outputs):
        with open(os.path.join(folder, f"rank{rank}.log"), "w") as sink:
            sink.write(text)
    error = None
    codes = ranks.codes()
    if hung or any(codes):
        tails = "\n".join(f"--- rank {rank} (exit {codes[rank]}"
                          f"{', hung: killed' if rank in hung else ''}):\n" + text[-1500:]
                          for rank, text in enumerate(outputs) if codes[rank] or rank in hung)
        error = (f"exit codes {codes}, hung {hung} (after {seconds:.0f} s; limit {timeout} s)\n"
                 + tails)
    per_loop = {}
    parts = [split_output(text, loops) for text in outputs]
    for loop in loops:
        results = []
        for rank in range(RANKS):
            path = os.path.join(folder, loop, f"rank{rank}.json")
            if os.path.exists(path):
                with open(path) as source:
                    results.append(json.load(source))
        per_loop[loop] = (results if len(results) == RANKS else None,
                          [part[loop] for part in parts])
    return per_loop, error, seconds


def run_mode(build, framework, mode, loops, folder, started, separate=False):
    """Every loop in one job (one start-up of torch instead of one per loop); after a failed
    job, each loop left without results again alone, so that one loop's crash or hang shows as
    that loop's failure only. `separate`: each loop alone from the start."""
    run = Run()
    error = "each loop alone (--separate)"
    if not separate:
        per_loop, error, seconds = launch(build, framework, mode, loops,
                                          os.path.join(folder, "all"), ALL_TIMEOUT)
        run.seconds += seconds
        for loop, (results, output) in per_loop.items():
            run.output[loop] = output
            if results is not None:
                run.results[loop] = results
    began = separate or any(line.startswith(MARKER) for output in run.output.values()
                            for text in output for line in text.splitlines())
    if error is not None and not began:
        # No loop began (the job failed in its start-up): a failure of every loop alike.
        print(f"{mode}: the job failed before any loop began: {error.splitlines()[0]}")
        for loop in loops:
            run.errors[loop] = f"the job failed before any loop began: {error}"
        return run
    if error is not None and not separate:
        print(f"{mode}: the job of all loops failed ({error.splitlines()[0]}); "
              f"rerunning alone: {[loop for loop in loops if loop not in run.results]}")
    for loop in loops:
        if loop in run.results:
            continue
        if not separate and time.monotonic() - started > DEADLINE:
            run.errors[loop] = f"not run: past the test's {DEADLINE} s budget ({error})"
            continue
        alone, single_error, seconds = launch(build, framework, mode, [loop],
                                              os.path.join(folder, loop), SINGLE_TIMEOUT)
        run.seconds += seconds
        results, output = alone[loop]
        run.output[loop] = output
        if results is not None:
            run.results[loop] = results
        else:
            run.errors[loop] = single_error or "no result files"
    return run


# ---- reading the results ----------------------------------------------------------------------

def hexes(values):
    return [float(value).hex() for value in values]


def finite(values):
    return all(math.isfinite(value) for value in values)


def all_losses(result):
    return [value for step in result["steps"] for value in step["losses"] + step["eval_losses"]]


def nonfinite(results):
    """What is NaN or infinite in a run (empty: nothing)."""
    found = []
    for result in results:
        losses = [step["step"] for step in result["steps"]
                  if not finite(step["losses"] + step["eval_losses"])]
        if losses:
            found.append(f"rank {result['rank']}: losses at steps {losses}")
        shards = [name for name, shard in result["shards"].items() if not shard["finite"]]
        if shards:
            found.append(f"rank {result['rank']}: final shards {shards}")
    return found


def final_loss(results):
    """bench/quantities.py's final loss of the per-step losses, each the mean over the ranks."""
    steps = zip(*(result["steps"] for result in results))
    return quantities.final_loss(sum(s["loss"] for s in step) / len(step) for step in steps)


def bitwise_differences(results, reference):
    """Where `results` differ bitwise from `reference`, per rank (empty: identical)."""
    found = []
    for got, want in zip(results, reference):
        rank = got["rank"]
        if len(got["steps"]) != len(want["steps"]):
            found.append(f"rank {rank}: {len(got['steps'])} steps, expected {len(want['steps'])}")
            continue
        for mine, theirs in zip(got["steps"], want["steps"]):
            if hexes(mine["losses"]) != hexes(theirs["losses"]):
                found.append(f"rank {rank}: first differing loss at step {mine['step']}: "
                             f"{mine['losses']} vs {theirs['losses']}")
                break
            if hexes(mine["eval_losses"]) != hexes(theirs["eval_losses"]):
                found.append(f"rank {rank}: first differing evaluation loss at step "
                             f"{mine['step']}: {mine['eval_losses']} vs {theirs['eval_losses']}")
                break
        shards = [name for name in want["shards"]
                  if got["shards"].get(name, {}).get("sha256") != want["shards"][name]["sha256"]]
        if shards:
            found.append(f"rank {rank}: {len(shards)} of {len(want['shards'])} final shards "
                         f"differ ({', '.join(shards[:3])}{', ...' if len(shards) > 3 else ''})")
    return found


def relative_difference(results, reference):
    """The largest relative difference between two runs' losses (training and evaluation)."""
    worst = 0.0
    for got, want in zip(results, reference):
        mine, theirs = all_losses(got), all_losses(want)
        if len(mine) != len(theirs):
            return math.inf
        for a, b in zip(mine, theirs):
            difference = abs(a - b) / max(abs(b), 1e-12)
            worst = max(worst, difference if math.isfinite(difference) else math.inf)
    return worst


def stat(results, key):
    """Per rank, the counter `key` of the loop's communicator at the end (None: not there)."""
    return [None if result.get("stats") is None else result["stats"].get(key)
            for result in results]


WARN = re.compile(r"\bWARN(ING)?\b")  # zpp's "ZPP WARN" (not Python's "UserWarning")


def warn_lines(output, *words):
    """The WARN lines of a loop's output (every rank's) holding every one of `words`, in any
    case."""
    lines = []
    for text in output:
        for line in text.splitlines():
            lower = line.lower()
            if WARN.search(line) and all(word.lower() in lower for word in words):
                lines.append(line.strip())
    return lines


def skipped_steps(results):
    """The steps in which no shard changed in the optimizer step, per rank."""
    return [[step["step"] for step in result["steps"] if not any(step["updated"])]
            for result in results]


# ---- the checks -------------------------------------------------------------------------------

class Checks:
    """Every check of every loop; failures are collected, not raised."""

    def __init__(self, build, framework, runs, folder, started):
        self.build, self.framework, self.runs = build, framework, runs
        self.folder, self.started = folder, started
        self.failures = []
        self.rows = []
        self._references = {}  # (loop, skipped steps) -> plain's results without their updates

    def loop(self, loop):
        rows = {}

        def row(mode):
            return rows.setdefault(mode, {"loop": loop, "mode": mode, "ok": True, "final": None,
                                          "vs_plain": "", "hits": "", "verify": "",
                                          "skipped": "", "warns": 0})

        def fail(mode, message):
            self.failures.append(f"{loop} / {mode}: {message}")
            row(mode)["ok"] = False

        for mode, run in self.runs.items():
            row(mode)
            if loop not in run.results:
                fail(mode, f"no result: {run.errors.get(loop, 'missing')}")
                continue
            results = run.results[loop]
            row(mode)["final"] = final_loss(results)
            row(mode)["warns"] = len(warn_lines(run.output.get(loop, [])))
            if mode == "gloo":
                continue
            backends = sorted({result["backend"] for result in results})
            if backends != ["zpp"]:
                fail(mode, f"the loop's group ran on {backends}, not zpp: zpp-run --cpu did not "
                           "switch it")
            hits = stat(results, "hpz_hits")
            row(mode)["hits"] = "/".join(str(h) for h in hits)
            row(mode)["verify"] = "/".join(str(v) for v in stat(results, "hpz_verify_failures"))
            row(mode)["skipped"] = "/".join(str(s) for s in stat(results, "hpz_skipped_steps"))
            expected = loop in self.framework.hits_expected
            if mode != "plain" and expected and not all(h and h > 0 for h in hits):
                fail(mode, f"hpZ did not hit on every rank (hpz_hits per rank {hits}), in a loop "
                           "that gathers each block twice per step")
        self.rows += [rows[mode] for mode in self.runs]
        plain = self.runs["plain"].results.get(loop)
        if plain is None:
            for mode in self.runs:
                if mode not in ("plain", "gloo") and row(mode)["ok"]:
                    fail(mode, "not compared: plain has no result")
            return
        bad = nonfinite(plain)
        if bad:
            fail("plain", f"NaN or inf in plain: {'; '.join(bad)}")
        gloo = self.runs.get("gloo")
        if gloo is not None and loop in gloo.results:
            # zpp's reduce-scatter sums in another order than gloo's: the last bits differ, as
            # bench/convergence/run.py allows (1e-5 relative at every step).
            worst = relative_difference(plain, gloo.results[loop])
            row("plain")["vs_plain"] = f"gloo {worst:.1e}"
            if not worst <= GLOO_TOLERANCE:
                fail("plain", f"plain through zpp is {worst:.3g} relative from pure gloo in some "
                              f"loss (at most {GLOO_TOLERANCE:g})")
        for mode in ("hpz", "zero++"):
            if mode in self.runs and loop in self.runs[mode].results:
                self.mode(loop, mode, plain, lambda message, mode=mode: fail(mode, message),
                          row(mode))

    def mode(self, loop, mode, plain, fail, row):
        run = self.runs[mode]
        results = run.results[loop]
        bad = nonfinite(results)
        if bad:
            fail("NaN or inf: " + "; ".join(bad))
        # Steps left without an update: allowed only where a weight changed in place, skipped on
        # every rank with a WARN, and then the reference is plain without those updates.
        skipped = skipped_steps(results)
        steps = sorted(set(step for ranks in skipped for step in ranks))
        reference, name = plain, "plain"
        if steps:
            row["vs_plain"] = f"skipped {steps}"
            allowed = CHANGE_STEPS if loop == "inplace_change" else []
            if any(ranks != skipped[0] for ranks in skipped):
                fail(f"the steps whose update was not applied differ between ranks: {skipped}")
                return
            if not set(steps) <= set(allowed):
                where = (f"only steps {allowed} changed a weight in place" if allowed else
                         "this loop changes no weight in place")
                fail(f"steps {steps} were skipped (the optimizer step changed no weight on any "
                     f"rank), but {where}")
                return
            if not warn_lines(run.output.get(loop, []), "skipped", "hpz"):
                fail(f"steps {steps} were skipped without a WARN naming hpZ and the skip")
            reference = self.plain_without(loop, steps, fail)
            if reference is None:
                return
            name = f"plain without the updates of steps {steps}"
        if mode == "hpz":
            differences = bitwise_differences(results, reference)
            if not differences:
                row["vs_plain"] = "bitwise" if not steps else f"= plain w/o {steps}"
                return
            row["vs_plain"] = "differs" if not steps else f"!= plain w/o {steps}"
            if steps:
                fail(f"not bitwise {name}: " + "; ".join(differences))
            elif loop == "inplace_change":
                fail("differs from plain and no step was skipped (a silent difference): "
                     + "; ".join(differences))
            else:
                fail("not bitwise plain: " + "; ".join(differences))
            return
        ours, theirs = final_loss(results), final_loss(reference)
        relative = (ours - theirs) / abs(theirs)
        row["vs_plain"] = f"{relative:+.3%}" + (f" (w/o {steps})" if steps else "")
        if not abs(relative) <= FINAL_TOLERANCE:
            fail(f"final loss {ours!r} is {relative:+.3%} from {name}'s {theirs!r} (allowed "
                 f"{FINAL_TOLERANCE:.0%})")

    def plain_without(self, loop, steps, fail):
        """Plain's results with the optimizer steps `steps` dropped (run once per set)."""
        key = (loop, tuple(steps))
        if key not in self._references:
            if time.monotonic() - self.started > DEADLINE:
                fail(f"skipped steps {steps}: no time left to run plain without them")
                return None
            listed = ",".join(str(step) for step in steps)
            per_loop, error, _ = launch(self.build, self.framework, "plain", [loop],
                                        os.path.join(self.folder, f"{loop}-skip-{listed}"),
                                        SINGLE_TIMEOUT, ["--skip-steps", listed])
            self._references[key] = (per_loop[loop][0], error)
        results, error = self._references[key]
        if results is None:
            fail(f"plain without the updates of steps {steps} failed: {error}")
        return results


def print_table(rows):
    header = ("loop", "mode", "result", "final loss", "vs plain", "hpz_hits per rank",
              "verify fails", "skipped steps", "WARNs")
    lines = [header]
    for r in rows:
        final = "-" if r["final"] is None else f"{r['final']:.6f}"
        lines.append((r["loop"], r["mode"], "ok" if r["ok"] else "FAIL", final, r["vs_plain"],
                      r["hits"], r["verify"], r["skipped"], str(r["warns"])))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


def main():
    args = parse()
    build = os.path.realpath(args.build)
    started = time.monotonic()
    work = args.keep or tempfile.mkdtemp(prefix="zpp-hpz-loops-")
    if args.keep:
        shutil.rmtree(work, ignore_errors=True)
    modes = (["gloo"] if args.with_gloo else []) + list(MODES)
    framework = args.framework
    try:
        runs = {}
        for mode in modes:
            runs[mode] = run_mode(build, framework, mode, args.loops, os.path.join(work, mode),
                                  started, args.separate)
            print(f"{mode}: {len(runs[mode].results)} of {len(args.loops)} loops ran, "
                  f"{runs[mode].seconds:.0f} s", flush=True)
        checks = Checks(build, framework, runs, os.path.join(work, "reference"), started)
        for loop in args.loops:
            checks.loop(loop)
        failures = checks.failures
        for mode in ("hpz", "zero++"):
            for loop in args.loops:
                for line in warn_lines(runs[mode].output.get(loop, []))[:3]:
                    print(f"{loop} / {mode} WARN: {line}")
        print_table(checks.rows)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    wall = time.monotonic() - started
    if failures:
        print(f"\n{len(failures)} failure(s), {wall:.0f} s:")
        for failure in failures:
            print(f"FAIL {failure}")
        raise AssertionError(f"{len(failures)} check(s) failed: "
                             + "; ".join(f.splitlines()[0][:200] for f in failures))
    print(f"hpz loops ({framework.name}): every check held for {len(args.loops)} loops x "
          f"{len(modes)} modes, {wall:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
