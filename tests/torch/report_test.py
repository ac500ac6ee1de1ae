"""zpp-run --stats: one report for the whole job (issue 29, item 1), under torchrun with 4 CPU
ranks (2 simulated nodes of 2) on the `zpp` backend, the zero++ preset:
  - a small model, every call under ZPP_MIN_BYTES: nothing compressed, and the hint says so;
  - large calls: the techniques' calls, and the bytes sent off the nodes against plain's;
  - a gloo script: no communicator, and why that usually happens; under --cpu, the same script
    on zpp's communicators.

    tests/torch/run.sh BUILD tests/torch/report_test.py
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.join(HERE, "..", "..")
RANKS, CALLS = 4, 6


def rank_main(backend, count):
    import torch
    import torch.distributed as dist

    if backend == "zpp":
        import zpp_torch  # noqa: F401 (registers the backend)
    dist.init_process_group(backend)
    n = dist.get_world_size()
    for step in range(CALLS):
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


def run_job(backend, count, cpu_switch=False, extra_env=None):
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    command = [sys.executable, os.path.join(ROOT, "tools", "zpp-run"), "--lib", build_library(),
               "--preset", "zero++",
               "--stats"] + (["--cpu"] if cpu_switch else []) + ["--", torchrun, "--standalone", f"--nproc-per-node={RANKS}",
               os.path.realpath(__file__), "--rank", backend, str(count)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZPP_")}
    env.update(ZPP_LOCAL_SIZE="2", OMP_NUM_THREADS="1", **(extra_env or {}))
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise AssertionError(f"{backend} {count}: exit {result.returncode}\n"
                             f"{result.stderr[-4000:]}")
    return result.stderr


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
    print(f"report test: the three reports held (zero++ sent {share:.3f} of plain's bytes)")
    return 0


if __name__ == "__main__":
    if "--rank" in sys.argv:
        backend, count = sys.argv[sys.argv.index("--rank") + 1:][:2]
        rank_main(backend, int(count))
    else:
        sys.exit(main())
