"""A rank killed mid-training: FSDP2 over the zpp backend on 4 CPU processes (2 simulated nodes),
rank 1 SIGKILLs itself at the start of step 3. Every other rank must raise a ZppError naming
ncclRemoteError within ZPP_TIMEOUT of the death (and, in a second run with ZPP_TIMEOUT at its
default, within init_process_group's shorter timeout) (the time its traceback line appears, plus a
little for printing it), then exit non-zero; none may be left running. (Exiting takes longer:
the interpreter's teardown of torch took 18 s on this project's loaded 2-core machine.)

    tests/torch/run.sh BUILD tests/torch/fault_test.py
"""
import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "bench", "fsdp", "train_fsdp2.py")
RANKS, VICTIM, TIMEOUT = 4, 1, 5
RAISE_SLACK = 3  # seconds to format and print the traceback, on a loaded machine


def run_case(env, extra_argv, what):
    """One run; the list of what went wrong."""
    from launch import Ranks

    argv = [os.path.realpath(TRAIN), "--device", "cpu", "--backend", "zpp", "--steps", "20",
            "--csv", os.devnull, "--die-at-step", "3", "--die-rank", str(VICTIM)] + extra_argv
    ranks = Ranks(argv, RANKS, env=env)
    hung = ranks.wait(timeout=240)
    codes = ranks.codes()
    failures = []
    if hung:
        failures.append(f"{what}: ranks {hung} were still running after 240 s (killed)")
    if codes[VICTIM] != -9:
        failures.append(f"{what}: the victim exited {codes[VICTIM]}, not by SIGKILL")
    death = ranks.ended[VICTIM]
    for rank in range(RANKS):
        if rank == VICTIM or rank in hung:
            continue
        output = ranks.output(rank)
        raised = ranks.first_time(rank, "ZppError")
        if raised is None or "ncclRemoteError" not in output:
            failures.append(f"{what}: rank {rank} did not raise zpp's error:\n{output[-3000:]}")
            continue
        after = raised - death
        print(f"{what}: rank {rank}: raised {after:.1f} s after rank {VICTIM} died, exit "
              f"{codes[rank]} {ranks.ended[rank] - death:.1f} s after")
        if codes[rank] == 0:
            failures.append(f"{what}: rank {rank} exited 0: it should have raised")
        if not after <= TIMEOUT + RAISE_SLACK:
            failures.append(f"{what}: rank {rank} raised {after:.1f} s after the death (at most "
                            f"{TIMEOUT} + {RAISE_SLACK})")
    return failures


def main():
    sys.path.insert(0, HERE)
    base = {k: v for k, v in os.environ.items() if k != "ZPP_TIMEOUT"}
    base.update(ZPP_LOCAL_SIZE="2", ZPP_QWZ="1")
    failures = run_case(dict(base, ZPP_TIMEOUT=str(TIMEOUT)), [], "ZPP_TIMEOUT")
    # Issue 29, item 7: torch's init_process_group(timeout=) bounds zpp's waits when shorter
    # than ZPP_TIMEOUT (here its 300 s default).
    failures += run_case(base, ["--pg-timeout", str(TIMEOUT)], "init_process_group(timeout=)")
    for failure in failures:
        print(f"FAILED: {failure}")
    print("fault test: " + ("FAILED" if failures else "every survivor raised in time"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
