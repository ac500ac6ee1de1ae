"""Starts N ranks of a Python program as plain processes with torch's env:// variables (no
torchrun: its agent would kill the survivors of a failed rank, and the tests want to see what
the survivors do themselves). Every line a rank prints is kept with the time it appeared; every
wait is bounded, and what is still running at the end is killed.
"""
import os
import socket
import subprocess
import sys
import threading
import time


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Ranks:
    def __init__(self, argv, ranks, env=None, cwd=None):
        port = str(free_port())
        self.started = time.monotonic()
        self.processes = []
        self.lines = [[] for _ in range(ranks)]  # per rank: (monotonic time, line)
        self._readers = []
        for rank in range(ranks):
            rank_env = dict(os.environ if env is None else env)
            rank_env.update(RANK=str(rank), WORLD_SIZE=str(ranks), LOCAL_RANK=str(rank),
                            LOCAL_WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1",
                            MASTER_PORT=port, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
            process = subprocess.Popen([sys.executable] + argv, env=rank_env, cwd=cwd,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, errors="replace")
            self.processes.append(process)
            # Read as it comes: a rank that logs much never blocks on a full pipe.
            reader = threading.Thread(target=self._read, args=(rank, process), daemon=True)
            reader.start()
            self._readers.append(reader)
        self.ended = [None] * ranks  # monotonic time each rank was seen gone

    def _read(self, rank, process):
        for line in process.stdout:
            self.lines[rank].append((time.monotonic(), line))

    def wait(self, timeout, only=None):
        """Polls until every rank (of `only`, when given) ended or `timeout` seconds passed;
        kills what is left. Returns the ranks of `only` that had not ended."""
        watched = range(len(self.processes)) if only is None else only
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(self.ended[r] is None for r in watched):
            for rank, process in enumerate(self.processes):
                if self.ended[rank] is None and process.poll() is not None:
                    self.ended[rank] = time.monotonic()
            time.sleep(0.05)
        left = [rank for rank, end in enumerate(self.ended) if end is None]
        for rank in left:
            self.processes[rank].kill()
            self.processes[rank].send_signal(18)  # SIGCONT: a stopped rank takes its SIGKILL
        hung = [rank for rank in left if rank in watched]
        for process, reader in zip(self.processes, self._readers):
            process.wait()
            reader.join(timeout=10)
        return hung

    def output(self, rank):
        return "".join(line for _, line in self.lines[rank])

    def first_time(self, rank, text):
        """When `rank` first printed a line holding `text` (None: never)."""
        return next((when for when, line in self.lines[rank] if text in line), None)

    def codes(self):
        return [process.returncode for process in self.processes]

    def print_failures(self, hung, label=""):
        """Prints the end of the output of each rank that exited non-zero or hung; True if any."""
        failed = False
        codes = self.codes()
        # In the order they ended: the first rank to fail is the likeliest cause, and its lines
        # come first in a log that a CI keeps only the start of.
        order = sorted(range(len(codes)), key=lambda r: (self.ended[r] is None, self.ended[r] or 0))
        for rank in order:
            code = codes[rank]
            if code != 0 or rank in hung:
                failed = True
                ending = " (hung, killed)" if rank in hung else ""
                print(f"--- {label}rank {rank}: exit {code}{ending}")
                print(self.output(rank)[-4000:])
        return failed
