"""A rank killed mid-training: FSDP2 over the zpp backend on 4 CPU processes (2 simulated nodes),
rank 1 SIGKILLs itself at the start of step 3. Every other rank must raise a ZppError naming
ncclRemoteError within ZPP_TIMEOUT of the death (the time its traceback line appears, plus a
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


def main():
    sys.path.insert(0, HERE)
    from launch import Ranks

    env = dict(os.environ, ZPP_LOCAL_SIZE="2", ZPP_TIMEOUT=str(TIMEOUT), ZPP_QWZ="1")
    argv = [os.path.realpath(TRAIN), "--device", "cpu", "--backend", "zpp", "--steps", "20",
            "--csv", os.devnull, "--die-at-step", "3", "--die-rank", str(VICTIM)]
    ranks = Ranks(argv, RANKS, env=env)
    hung = ranks.wait(timeout=240)
    codes = ranks.codes()
    failures = []
    if hung:
        failures.append(f"ranks {hung} were still running after 240 s (killed)")
    if codes[VICTIM] != -9:
        failures.append(f"the victim exited {codes[VICTIM]}, not by SIGKILL")
    death = ranks.ended[VICTIM]
    for rank in range(RANKS):
        if rank == VICTIM or rank in hung:
            continue
        output = ranks.output(rank)
        raised = ranks.first_time(rank, "ZppError")
        if raised is None or "ncclRemoteError" not in output:
            failures.append(f"rank {rank} did not raise zpp's error:\n{output[-3000:]}")
            continue
        after = raised - death
        print(f"rank {rank}: raised {after:.1f} s after rank {VICTIM} died, exit {codes[rank]} "
              f"{ranks.ended[rank] - death:.1f} s after")
        if codes[rank] == 0:
            failures.append(f"rank {rank} exited 0: it should have raised")
        if not after <= TIMEOUT + RAISE_SLACK:
            failures.append(f"rank {rank} raised {after:.1f} s after the death (at most "
                            f"{TIMEOUT} + {RAISE_SLACK})")
    for failure in failures:
        print(f"FAILED: {failure}")
    print("fault test: " + ("FAILED" if failures else "every survivor raised in time"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
