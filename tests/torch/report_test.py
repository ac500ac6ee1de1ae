"""zpp-run --stats: one report for the whole job (issue 29, item 1; issue 46), under torchrun
with 4 CPU ranks (2 simulated nodes of 2) on the `zpp` backend, the zero++ preset unless said:
  - a small model, every call under ZPP_MIN_BYTES: nothing compressed, and the hint says so;
  - large calls: the techniques' calls, and the bytes sent off the nodes against plain's;
  - a gloo script: no communicator, and why that usually happens; under --cpu, the same script
    on zpp's communicators;
  - all-reduces only (DDP's calls): with no switch the hint names --qar; after --preset zero++
    it names --qar alone; with --qar and its error feedback, qAR's feedback is named qAR's;
  - HSDP with zero++ and --qar: its shard groups inside a node are plain by design, never "could
    not run hierarchically"; --qar with every rank on one node: a WARN, and a hint to simulate
    nodes;
  - a job stopped by Ctrl-C, and a script that does not exist: the report says how the command
    ended, never that zpp saw no communicator or that --cpu would help.

    tests/torch/run.sh BUILD tests/torch/report_test.py
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.join(HERE, "..", "..")
RANKS, CALLS = 4, 6


def rank_main(backend, count, collectives):
    import torch
    import torch.distributed as dist

    if backend == "zpp":
        import zpp_torch  # noqa: F401 (registers the backend)
    dist.init_process_group(backend)
    n = dist.get_world_size()
    if collectives == "all-reduce":  # DDP's
        for _ in range(CALLS):
            dist.all_reduce(torch.ones(count))
    if collectives == "wait":  # until stopped
        dist.barrier()
        print(f"rank {dist.get_rank()} waiting", flush=True)
        import time

        time.sleep(600)
    for step in range(CALLS if collectives == "gather-scatter" else 0):
        out = torch.empty(count * n)
        dist.all_gather_into_tensor(out, torch.full((count,), float(step)))
        scattered = torch.empty(count)
        dist.reduce_scatter_tensor(scattered, torch.ones(count * n))
    dist.barrier()
    dist.destroy_process_group()


def build_library():
    """libzpp.so of the build whose zpp_torch this test runs with (tests/torch/run.sh BUILD puts
    BUILD/python first on the path), not zpp-run's default: make mutants builds elsewhere."""
    import importlib.util

    package = os.path.dirname(importlib.util.find_spec("zpp_torch").origin)
    return os.path.realpath(os.path.join(package, "..", "..", "lib", "libzpp.so"))


def job_command(backend, count, flags=("--preset", "zero++"), collectives="gather-scatter",
                script=os.path.realpath(__file__)):
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    return ([sys.executable, os.path.join(ROOT, "tools", "zpp-run"), "--lib", build_library()]
            + list(flags) + ["--stats", "--", torchrun, "--standalone",
                             f"--nproc-per-node={RANKS}", script, "--rank", backend, str(count),
                             collectives])


def job_env(extra_env=None, one_node=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPP_")}
    env.update(OMP_NUM_THREADS="1", **(extra_env or {}))
    if not one_node:
        env["ZPP_LOCAL_SIZE"] = "2"
    return env


def run_job(backend, count, cpu_switch=False, extra_env=None, expect_exit=0, one_node=False,
            **command):
    if cpu_switch:
        command["flags"] = list(command.get("flags", ("--preset", "zero++"))) + ["--cpu"]
    result = subprocess.run(job_command(backend, count, **command),
                            env=job_env(extra_env, one_node), capture_output=True, text=True,
                            timeout=300)
    if (result.returncode == 0) != (expect_exit == 0):
        raise AssertionError(f"{backend} {count}: exit {result.returncode}\n"
                             f"{result.stderr[-4000:]}")
    return result.stderr


def interrupted_job():
    """A job on the zpp backend stopped by SIGINT (Ctrl-C) once every rank waits: its output and
    zpp-run's report, read as they come (a pipe left unread would stall the job)."""
    import signal
    import threading
    import time

    job = subprocess.Popen(job_command("zpp", 1024, flags=("--cpu",), collectives="wait"),
                           env=job_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, errors="replace")
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(job.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while sum(line.count("waiting") for line in list(lines)) < RANKS:
        if time.monotonic() > deadline or job.poll() is not None:
            job.kill()
            raise AssertionError("the ranks did not all come to wait:\n" + "".join(lines[-60:]))
        time.sleep(0.2)
    job.send_signal(signal.SIGINT)
    try:
        job.wait(timeout=120)
    except subprocess.TimeoutExpired:
        job.kill()
        raise AssertionError("a job stopped by SIGINT did not end within 120 s:\n"
                             + "".join(lines[-60:]))
    reader.join(timeout=10)
    return "".join(lines)


def expect_not_in(text, words, what):
    for word in words:
        if word in text:
            raise AssertionError(f"{what}: the report should not hold {word!r}:\n{text[-3000:]}")


def expect_in(text, words, what):
    for word in words:
        if word not in text:
            raise AssertionError(f"{what}: the report should hold {word!r}:\n{text[-3000:]}")


def main():
    calls = 2 * CALLS * RANKS  # all-gathers and reduce-scatters, every rank
    small = run_job("zpp", 1024)
    expect_in(small, ["zpp job report: 4 process(es), 4 communicator(s), 4 ranks",
                      f"passed through (plain collective)          {calls}   (small {calls})",
                      "zpp compressed no call",
                      f"hint: {calls} of {calls} calls under ZPP_MIN_BYTES=1 MiB: lower it for a "
                      "small model"], "a small model")
    # 2 MiB of fp32 per rank; with qgZ's error feedback: six places in one step epoch, 4 ranks.
    large = run_job("zpp", 1 << 19, extra_env={"ZPP_QGZ_EF": "1"})
    expect_in(large, ["hpZ (hierarchical all-gather)", "qgZ (quantized reduce-scatter)",
                      "of plain", "% saved", "hpZ: ",
                      f"qgZ error feedback: {CALLS * RANKS} calls kept their residual, 0 ran "
                      "without"], "large calls")
    if "hint:" in large:
        raise AssertionError(f"large calls: no reason dominates, yet a hint:\n{large[-3000:]}")
    share = float(large.split(" of plain")[0].split()[-1])
    if not 0 < share < 0.5:
        raise AssertionError(f"large calls: zero++ sent {share} of plain's off-node bytes")
    gloo = run_job("gloo", 1024)
    expect_in(gloo, ["zpp saw no communicator in this job", "gloo backend", "zpp-run --cpu"],
              "a gloo script")
    switched = run_job("gloo", 1 << 19, cpu_switch=True)
    expect_in(switched, ["zpp job report: 4 process(es), 4 communicator(s), 4 ranks",
                         "hpZ (hierarchical all-gather)", "qgZ (quantized reduce-scatter)"],
              "a gloo script under --cpu")
    check_all_reduce_hints()
    check_one_node_hints()
    check_ended_jobs()
    print(f"report test: every report held (zero++ sent {share:.3f} of plain's bytes)")
    return 0


def check_all_reduce_hints():
    calls = CALLS * RANKS
    plain = run_job("zpp", 1 << 19, flags=(), collectives="all-reduce")
    expect_in(plain, [f"hint: {calls} of {calls} calls asked for no technique", "zpp-run --qar",
                      "zpp-run --preset zero++"], "plain DDP")
    preset = run_job("zpp", 1 << 19, collectives="all-reduce")
    expect_in(preset, [f"hint: {calls} of {calls} calls asked for no technique", "zpp-run --qar"],
              "DDP under --preset zero++")
    expect_not_in(preset, ["--preset zero++", "ZPP_QWZ"], "DDP under --preset zero++")
    qar = run_job("zpp", 1 << 19, flags=("--qar=4",), collectives="all-reduce",
                  extra_env={"ZPP_QAR_EF": "1", "ZPP_MIN_BYTES": "0"})
    expect_in(qar, ["qAR (compressed all-reduce)", f"qAR error feedback: {calls} calls kept"],
              "DDP under --qar=4 with feedback")
    expect_not_in(qar, ["qgZ error feedback", "hint:"], "DDP under --qar=4 with feedback")


def check_one_node_hints():
    """HSDP over 2 nodes of 2 (zero++ and --qar): its shard groups lie inside a node by design;
    the same all-reduces with every rank on one node: --qar cannot run, said by a WARN."""
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    command = [sys.executable, os.path.join(ROOT, "tools", "zpp-run"), "--lib", build_library(),
               "--cpu", "--preset", "zero++", "--qar", "--stats", "--", torchrun, "--standalone",
               f"--nproc-per-node={RANKS}", os.path.join(ROOT, "bench", "fsdp", "train_fsdp2.py"),
               "--device", "cpu", "--backend", "gloo", "--parallel", "hsdp", "--steps", "2",
               "--warmup", "1"]
    with tempfile.TemporaryDirectory() as folder:  # the script writes its CSV where it runs
        hsdp = subprocess.run(command, env=job_env({"ZPP_MIN_BYTES": "0"}), cwd=folder,
                              capture_output=True, text=True, timeout=300)
    if hsdp.returncode != 0:
        raise AssertionError(f"HSDP: exit {hsdp.returncode}\n{hsdp.stderr[-4000:]}")
    expect_in(hsdp.stderr, ["qAR (compressed all-reduce)"], "HSDP with zero++ and --qar")
    expect_not_in(hsdp.stderr, ["could not run hierarchically"], "HSDP with zero++ and --qar")
    expect_in(hsdp.stderr, ["hint:", "inside one node", "by design"], "HSDP with zero++ and --qar")
    one_node = run_job("zpp", 1 << 19, flags=("--qar",), collectives="all-reduce", one_node=True)
    expect_in(one_node, ["WARN ZPP_QAR=1 is off on this communicator (4 ranks on 1 node(s)",
                         "inside one node", "ZPP_LOCAL_SIZE=2"], "--qar on one node")


def check_ended_jobs():
    misleading = ["zpp saw no communicator", "zpp-run --cpu"]
    stopped = interrupted_job()
    expect_in(stopped, ["zpp job report", "the command was stopped by SIGINT"],
              "a job stopped by SIGINT")
    expect_not_in(stopped, misleading, "a job stopped by SIGINT")
    missing = run_job("zpp", 1024, flags=("--cpu",), expect_exit=1,
                      script=os.path.join(HERE, "no_such_script.py"))
    expect_in(missing, ["zpp job report: none: the command ended with exit status 1"],
              "a script that does not exist")
    expect_not_in(missing, misleading, "a script that does not exist")


if __name__ == "__main__":
    if "--rank" in sys.argv:
        backend, count, collectives = sys.argv[sys.argv.index("--rank") + 1:][:3]
        rank_main(backend, int(count), collectives)
    else:
        sys.exit(main())
