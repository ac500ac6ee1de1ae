"""The GPU check's own checks, on the CPU: tools/gpu-check.sh --dry-run prints every part's
commands with the preload pointing at the real build folder and every time limit inside one
device call; tools/gpu-stage.sh's folder holds everything the scripts run;
tools/zpp_stats_check.py passes a log where zpp took the calls and fails one where it did not;
tools/gpu-bench.sh and tools/gpu-check.sh start and quit their MPS daemon when asked; the
hpz-loops part runs tests/torch/hpz_loops_gpu.py (plain NCCL against zpp-run --hpz), reports its
table and fails clearly where torch sees no GPU.
Usage: gpu_check_test.py SOURCE_DIR BUILD_DIR"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

SOURCE, BUILD = sys.argv[1], os.path.realpath(sys.argv[2])
sys.path.insert(0, os.path.join(SOURCE, "tools"))
import zpp_stats_check  # noqa: E402

# The script's own list of parts (its all_parts), so that its header and its sections are
# checked against it.
with open(os.path.join(SOURCE, "tools", "gpu-check.sh")) as script_text:
    PARTS = re.search(r'^all_parts="([^"]+)"', script_text.read(), re.M).group(1).split()


def dry_run(*args, cwd=SOURCE, env=None):
    script = os.path.join(SOURCE, "tools", "gpu-check.sh")
    run = subprocess.run(["bash", script, "--dry-run", *args], cwd=cwd, capture_output=True,
                         text=True, timeout=60, env={**os.environ, **(env or {})})
    return run.returncode, run.stdout + run.stderr


class DryRunTest(unittest.TestCase):
    def test_speed_is_one_device_call_under_eight_minutes(self):
        code, out = dry_run(BUILD, "speed")
        self.assertEqual(code, 0, out)
        self.assertLessEqual(sum(int(t) for t in re.findall(r"timeout\s+(\d+)", out)), 480, out)
        self.assertIn("zpp-codec-gpu-bench", out)
        self.assertRegex(out, r"ZPP_BENCH_MPS=1\s.*ZPP_BENCH_MODES=plain\\,qwz4\\,zero\+\+\\,auto")
        self.assertRegex(out, r"ZPP_BENCH_MODES=plain\\,qar8\\,qar4\+ef")
        self.assertIn("ZPP_DEBUG_SUBSYS=TUNE", out)
        self.assertIn("ip netns", out)
        self.assertRegex(out, r"ZPP_BENCH_MODES=plain\\,passthrough")

    def test_a_part_first_leaves_the_default_build(self):
        code, out = dry_run("speed")  # run from the checkout: BUILD is its build folder
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("== "), 1, out)
        self.assertIn(os.path.join(os.path.realpath(SOURCE), "build", "bin", "zpp-codec-gpu-bench"),
                      out)

    def test_every_part_prints_its_commands(self):
        code, out = dry_run(BUILD)
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("== "), len(PARTS), out)
        self.assertIn("zpp-collective-check", out)
        self.assertIn("compute-sanitizer", out)
        self.assertIn("train_fsdp2.py", out)
        self.assertRegex(out, r"--parallel\s+ddp")
        self.assertRegex(out, r"--parallel\s+hsdp")
        self.assertRegex(out, r"--frameworks\s+deepspeed")
        self.assertIn("ds-zero++", out)
        self.assertIn("zpp_stats_check.py", out)
        self.assertIn("hpz_loops_gpu.py", out)

    def test_help_lists_every_part(self):
        script = os.path.join(SOURCE, "tools", "gpu-check.sh")
        for flag in ("--help", "-h"):
            run = subprocess.run(["bash", script, flag], capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("Usage: tools/gpu-check.sh", run.stdout)
            listed = [name for name in re.findall(r"^  ([a-z+-]+) ", run.stdout, re.MULTILINE)
                      if name in PARTS]
            self.assertEqual(listed, PARTS, run.stdout)  # each once, in all_parts' order

    def test_hpz_loops_compares_plain_nccl_with_zpp_run_hpz(self):
        code, out = dry_run(BUILD, "hpz-loops")
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("== "), 1, out)
        self.assertRegex(out, r"timeout\s+\d+\s+python3\s+tests/torch/hpz_loops_gpu\.py\s+"
                         + re.escape(BUILD) + r"\s")
        self.assertRegex(out, r"--loops\s+stochastic_depth\\?,ema_eval\s")
        # The driver's own dry run: plain is unwrapped NCCL, hpz goes through zpp-run without
        # --cpu, both on the GPU.
        driver = os.path.join(SOURCE, "tests", "torch", "hpz_loops_gpu.py")
        run = subprocess.run([sys.executable, driver, BUILD, "--dry-run"], capture_output=True,
                             text=True, timeout=60,
                             env={**os.environ, "LD_PRELOAD": f"{BUILD}/lib/libzpp.so"})
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        lines = dict(line.split(": ", 1) for line in run.stdout.splitlines())
        self.assertEqual(sorted(lines), ["hpz", "plain"], run.stdout)
        for mode, line in lines.items():
            self.assertIn("hpz_loops_train.py --device cuda", line)
            self.assertNotIn("--cpu", line)
        self.assertNotIn("zpp-run", lines["plain"])
        self.assertNotIn("libzpp.so", lines["plain"])  # not even the caller's preload
        self.assertNotIn("ZPP_", lines["plain"])
        self.assertIn(f"zpp-run --lib {BUILD}/lib/libzpp.so --hpz --", lines["hpz"])
        self.assertIn("ZPP_LOCAL_SIZE=2", lines["hpz"])

    def test_the_preload_is_the_real_build_folder_absolute_or_relative(self):
        for build in (BUILD, os.path.relpath(BUILD, SOURCE)):
            code, out = dry_run(build)
            self.assertEqual(code, 0, out)
            self.assertIn(f"LD_PRELOAD={BUILD}/lib/libzpp.so", out)
            self.assertNotIn(f"{SOURCE}/{BUILD}", out)

    def test_every_time_limit_fits_one_device_call(self):
        code, out = dry_run(BUILD)
        limits = [int(n) for n in re.findall(r"\btimeout\s+(\d+)", out)]
        self.assertTrue(limits, out)
        self.assertLess(max(limits), 600, out)

    def test_parts_run_alone_and_unknown_parts_are_refused(self):
        code, out = dry_run(BUILD, "fsdp")
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("== "), 1, out)
        code, out = dry_run(BUILD, "everything")
        self.assertEqual(code, 2, out)

    def test_check_modes_picks_the_plugin_modes_and_refuses_unknown_ones(self):
        code, out = dry_run(BUILD, "plugin", env={"ZPP_CHECK_MODES": "nccl qar8"})
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("zpp-collective-check"), 8, out)  # 2 modes x 4 ranks
        self.assertIn("ZPP_QAR=1", out)
        self.assertNotIn("ZPP_QWZ=1", out)
        code, out = dry_run(BUILD, "plugin", env={"ZPP_CHECK_MODES": "nccl qwz9"})
        self.assertEqual(code, 2, out)

    def test_stats_checks_read_per_rank_tables(self):
        # zpp_stats_check reads the per-rank tables that ZPP_STATS=1 prints; zpp-run --stats
        # alone prints one job report instead (the first GPU run failed every framework check so).
        code, out = dry_run(BUILD, "fsdp", "ddp")
        self.assertEqual(code, 0, out)
        launches = [line for line in out.splitlines() if "zpp-run" in line and "--stats" in line]
        self.assertTrue(launches, out)
        for line in launches:
            self.assertIn("--per-rank", line)


class StageTest(unittest.TestCase):
    """tools/gpu-stage.sh: the small folder carried to the GPU machine holds every binary and
    library the GPU scripts name (a binary added to a part but not to the stage fails there)."""

    def test_the_stage_holds_everything_the_scripts_run(self):
        if not os.path.isfile(os.path.join(BUILD, "bin", "zpp_codec_gpu_tests")):
            self.skipTest("this build has no CUDA binaries to stage")
        with tempfile.TemporaryDirectory() as scratch:
            stage = os.path.join(scratch, "build")
            run = subprocess.run(["bash", os.path.join(SOURCE, "tools", "gpu-stage.sh"), BUILD,
                                  stage], capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            named = set()
            for script in ("gpu-check.sh", "gpu-bench.sh"):
                with open(os.path.join(SOURCE, "tools", script)) as text:
                    named |= set(re.findall(r"\$build/((?:bin|lib)/[A-Za-z0-9_.+-]+)", text.read()))
            self.assertIn("bin/zpp-collective-check", named)
            self.assertIn("bin/zpp-bench", named)
            for path in sorted(named):
                self.assertTrue(os.path.isfile(os.path.join(stage, path)), path)
            # zpp-run puts the library's ../python on PYTHONPATH.
            self.assertTrue(os.path.isdir(os.path.join(stage, "python", "zpp_torch")))
            code, out = dry_run(stage)
            self.assertEqual(code, 0, out)
            self.assertIn(f"LD_PRELOAD={stage}/lib/libzpp.so", out)


FAKE_MPS = """#!/bin/bash
if [[ "$1" == -d ]]; then
  echo "start $CUDA_MPS_PIPE_DIRECTORY" >> "$FAKE_MPS_LOG"
  [[ -n "${FAKE_MPS_FAIL:-}" ]] && { echo "cannot start: $FAKE_MPS_FAIL"; exit 1; }
  exit 0
fi
echo "$(cat) $CUDA_MPS_PIPE_DIRECTORY" >> "$FAKE_MPS_LOG"
"""
FAKE_BENCH = """#!/bin/bash
json=""
while (($#)); do [[ "$1" == --json ]] && json=$2; shift; done
echo "pipe=${CUDA_MPS_PIPE_DIRECTORY:-none}"
echo '{"rows": []}' > "$json"
"""


def fake_machine(scratch, path_tools, build_tools=()):
    """A GPU machine's stand-ins under `scratch`: a PATH folder with a fake nvidia-smi and
    `path_tools` ((name, script) pairs), and a build folder with lib/libzpp.so and bin/
    `build_tools`. Returns the PATH folder and the build folder."""
    bin_dir, build = os.path.join(scratch, "path"), os.path.join(scratch, "build")
    for folder in (bin_dir, os.path.join(build, "lib"), os.path.join(build, "bin")):
        os.makedirs(folder)
    open(os.path.join(build, "lib", "libzpp.so"), "w").close()
    scripts = [(os.path.join(bin_dir, "nvidia-smi"), "#!/bin/bash\necho Fake GPU\n")]
    scripts += [(os.path.join(bin_dir, name), text) for name, text in path_tools]
    scripts += [(os.path.join(build, "bin", name), text) for name, text in build_tools]
    for path, text in scripts:
        with open(path, "w") as file:
            file.write(text)
        os.chmod(path, 0o755)
    return bin_dir, build


class BenchMpsTest(unittest.TestCase):
    """tools/gpu-bench.sh with ZPP_BENCH_MPS=1 runs its ranks under an MPS daemon of its own and
    quits it on exit; a daemon that does not start leaves the run time-sliced, said in the table
    (a fake nvidia-smi, nvidia-cuda-mps-control and zpp-bench stand in)."""

    def bench(self, scratch, **env):
        bin_dir, build = fake_machine(scratch, [("nvidia-cuda-mps-control", FAKE_MPS)],
                                      [("zpp-bench", FAKE_BENCH)])
        results, log = os.path.join(scratch, "results"), os.path.join(scratch, "mps.log")
        run = subprocess.run(
            ["bash", os.path.join(SOURCE, "tools", "gpu-bench.sh"), build], cwd=SOURCE,
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "PATH": bin_dir + ":" + os.environ["PATH"],
                 "ZPP_RESULTS": results, "FAKE_MPS_LOG": log, **env})
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        with open(os.path.join(results, "zpp_bench_gpu_fake_gpu.md")) as table:
            text = table.read()
        calls = open(log).read().splitlines() if os.path.exists(log) else []
        return text, calls

    def test_the_ranks_run_under_a_daemon_that_is_quit_after(self):
        with tempfile.TemporaryDirectory() as scratch:
            table, calls = self.bench(scratch, ZPP_BENCH_MPS="1")
            self.assertIn("MPS on (ZPP_BENCH_MPS=1", table)
            self.assertEqual(len(calls), 2, calls)
            start, pipe = calls[0].split()
            self.assertEqual(start, "start")
            self.assertIn(f"pipe={pipe}", table)  # the ranks were its clients
            self.assertEqual(calls[1], f"quit {pipe}")

    def test_a_daemon_that_does_not_start_leaves_the_run_time_sliced(self):
        with tempfile.TemporaryDirectory() as scratch:
            table, calls = self.bench(scratch, ZPP_BENCH_MPS="1", FAKE_MPS_FAIL="no MPS here")
            self.assertIn("did not start (cannot start: no MPS here", table)
            self.assertIn("pipe=none", table)
            self.assertEqual(len(calls), 1, calls)

    def test_no_daemon_unless_asked(self):
        with tempfile.TemporaryDirectory() as scratch:
            table, calls = self.bench(scratch)
            self.assertIn("MPS off", table)
            self.assertEqual(calls, [])


class CheckMpsTest(unittest.TestCase):
    """tools/gpu-check.sh with ZPP_CHECK_MPS=1 starts a daemon of its own for its parts, says so
    in the report and quits it on exit; it refuses the sanitizer parts under it."""

    def test_the_parts_run_under_a_daemon_that_is_quit_after(self):
        with tempfile.TemporaryDirectory() as scratch:
            bin_dir, build = fake_machine(scratch, [("nvidia-cuda-mps-control", FAKE_MPS)])
            results, log = os.path.join(scratch, "results"), os.path.join(scratch, "mps.log")
            run = subprocess.run(
                ["bash", os.path.join(SOURCE, "tools", "gpu-check.sh"), build, "probe"],
                cwd=SOURCE, capture_output=True, text=True, timeout=60,
                env={**os.environ, "PATH": bin_dir + ":" + os.environ["PATH"],
                     "ZPP_RESULTS": results, "FAKE_MPS_LOG": log, "ZPP_CHECK_MPS": "1"})
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            calls = open(log).read().splitlines()
            self.assertEqual(len(calls), 2, calls)
            start, pipe = calls[0].split()
            self.assertEqual(start, "start")
            self.assertEqual(calls[1], f"quit {pipe}")
            with open(os.path.join(results, "plugin_gpu_fake_gpu.md")) as report:
                self.assertIn("MPS on (ZPP_CHECK_MPS=1", report.read())

    def test_the_sanitizer_parts_refuse_it(self):
        for part in ("codec-mem", "memcheck", "racecheck"):
            code, out = dry_run(BUILD, part, env={"ZPP_CHECK_MPS": "1"})
            self.assertEqual(code, 2, out)
            self.assertIn("without MPS", out)


FAKE_SANITIZER = """#!/bin/bash
# compute-sanitizer's stand-in: one check's result line where the rank's --out names, then as
# FAKE_SANITIZER says: clean, a finding (exit 3, as --error-exitcode 3), or past the time limit.
out=""
while (($#)); do [[ "$1" == --out ]] && out=$2; shift; done
echo '{"case": "sweep", "ok": true}' > "$out"
echo "========= COMPUTE-SANITIZER"
case "$FAKE_SANITIZER" in
  finding) printf '========= Invalid __global__ read of size 4 bytes\n=========     at zppFakeKernel+0x10\n'
           exit 3 ;;
  slow) sleep 30 ;;
esac
exit 0
"""


class SanitizerReportTest(unittest.TestCase):
    """The sanitizer parts' report tells a clean run, a finding (with the finding's first line)
    and a run stopped by its time limit (with how far it got) apart: the first H100 run printed
    'ERRORS or timed out' for all three, and nothing of what was found."""

    def report(self, behaviour):
        with tempfile.TemporaryDirectory() as scratch:
            bin_dir, build = fake_machine(scratch, [("compute-sanitizer", FAKE_SANITIZER)])
            results = os.path.join(scratch, "results")
            run = subprocess.run(
                ["bash", os.path.join(SOURCE, "tools", "gpu-check.sh"), build, "memcheck"],
                cwd=SOURCE, capture_output=True, text=True, timeout=60,
                env={**os.environ, "PATH": bin_dir + ":" + os.environ["PATH"],
                     "ZPP_RESULTS": results, "ZPP_CHECK_MODES": "qwz4",
                     "ZPP_CHECK_SANITIZER_TIMEOUT": "2", "FAKE_SANITIZER": behaviour})
            with open(os.path.join(results, "plugin_gpu_fake_gpu.md")) as report:
                rows = [line for line in report if line.startswith("| qwz4 |")]
            self.assertEqual(len(rows), 1, run.stdout + run.stderr)
            return run.returncode, rows[0]

    def test_clean(self):
        code, row = self.report("clean")
        self.assertEqual(code, 0, row)
        self.assertIn("clean (4 checks)", row)

    def test_a_finding_is_named(self):
        code, row = self.report("finding")
        self.assertNotEqual(code, 0, row)
        self.assertIn("ERRORS (4 checks done)", row)
        self.assertIn("Invalid __global__ read of size 4 bytes", row)
        self.assertIn("zppFakeKernel", row)

    def test_a_time_out_is_told_from_a_finding(self):
        code, row = self.report("slow")
        self.assertNotEqual(code, 0, row)
        self.assertIn("TIMED OUT after 2 s", row)
        self.assertIn("4 checks done; no finding before it", row)


FAKE_TORCH_WITHOUT_GPU = {
    "torch/__init__.py": "from . import cuda\n",
    "torch/cuda/__init__.py": "def is_available():\n    return False\n",
    "torch/distributed/__init__.py": "",
    "torch/distributed/fsdp/__init__.py": "",
}
# python3's stand-in for the hpz-loops driver alone: its table, as FAKE_HPZ_LOOPS says (pass, or
# a failure), and the arguments it got; anything else runs the real python.
FAKE_PYTHON = """#!/bin/bash
if [[ "$1" == *hpz_loops_gpu.py ]]; then
  echo "$*" > "$FAKE_ARGS"
  echo "plain: 2 of 2 loops ran, 30 s"
  echo "| loop | mode | result | final loss | vs plain | hpz_hits per rank | verify fails | skipped steps |"
  echo "|---|---|---|---:|---|---|---|---|"
  if [[ "$FAKE_HPZ_LOOPS" == pass ]]; then
    echo "| ema_eval | hpz | ok | 0.675115 | bitwise | 36/36/36/36 | 0/0/0/0 | 0/0/0/0 |"
    echo "hpz_loops_gpu: every check held for 2 loops (stochastic_depth, ema_eval), 70 s"
    exit 0
  fi
  echo "| ema_eval | hpz | FAIL | 0.675115 | differs | 36/36/36/36 | 0/0/0/0 | 0/0/0/0 |"
  echo "FAIL ema_eval / hpz: not bitwise plain NCCL: rank 0: first differing loss at step 3"
  echo "hpz_loops_gpu: 1 failure(s) in 2 loops, 70 s"
  exit 1
fi
exec "$REAL_PYTHON" "$@"
"""


class HpzLoopsPartTest(unittest.TestCase):
    """The hpz-loops part: on a machine whose torch sees no GPU it fails and says so; otherwise
    the driver's table, its failures and its last line reach the report (a fake nvidia-smi, a fake
    torch package and, for the driver, a fake python3 stand in)."""

    def part(self, scratch, path_tools=(), **env):
        bin_dir, build = fake_machine(scratch, path_tools)
        torch_dir = os.path.join(scratch, "fake_torch")
        for name, text in FAKE_TORCH_WITHOUT_GPU.items():
            os.makedirs(os.path.dirname(os.path.join(torch_dir, name)), exist_ok=True)
            with open(os.path.join(torch_dir, name), "w") as file:
                file.write(text)
        results = os.path.join(scratch, "results")
        run = subprocess.run(
            ["bash", os.path.join(SOURCE, "tools", "gpu-check.sh"), build, "hpz-loops"],
            cwd=SOURCE, capture_output=True, text=True, timeout=120,
            # ZPP_CHECK_NCCL: a small file, not a real libnccl.so.2 (strings takes 3 s over it).
            env={**os.environ, "PATH": bin_dir + ":" + os.environ["PATH"],
                 "PYTHONPATH": torch_dir, "ZPP_RESULTS": results, "REAL_PYTHON": sys.executable,
                 "ZPP_CHECK_NCCL": "/bin/true", **env})
        with open(os.path.join(results, "plugin_gpu_fake_gpu.md")) as report:
            text = report.read()
        return run.returncode, text, run.stdout + run.stderr, build, results

    def test_no_gpu_for_torch_fails_clearly(self):
        with tempfile.TemporaryDirectory() as scratch:
            code, report, out, _, _ = self.part(scratch)
            self.assertNotEqual(code, 0, out)
            self.assertIn("## hpZ under FSDP2's training loops", report)
            self.assertIn("- FAILED: hpz_loops_gpu: torch sees no GPU", report)
            self.assertIn("gpu-check: 1 failure(s) in parts: hpz-loops", report)

    def test_the_drivers_table_reaches_the_report(self):
        for outcome in ("pass", "fail"):
            with tempfile.TemporaryDirectory() as scratch:
                args = os.path.join(scratch, "args")
                code, report, out, build, results = self.part(
                    scratch, [("python3", FAKE_PYTHON)], FAKE_HPZ_LOOPS=outcome, FAKE_ARGS=args)
                with open(args) as file:
                    given = file.read().split()
                self.assertEqual(given[1], build)
                self.assertIn(os.path.join(results, "hpz_loops_fake_gpu.json"), given)
                self.assertIn("    | ema_eval | hpz |", report)
                if outcome == "pass":
                    self.assertEqual(code, 0, out)
                    self.assertIn("- hpz_loops_gpu: every check held for 2 loops", report)
                else:
                    self.assertNotEqual(code, 0, out)
                    self.assertIn("    FAIL ema_eval / hpz: not bitwise plain NCCL", report)
                    self.assertIn("- FAILED (exit 1): hpz_loops_gpu: 1 failure(s)", report)


TABLE = """zpp stats: per communicator and technique
 comm      rank technique          calls    input bytes   off-node bytes
    0       {r}/4 qwZ                  {qwz}        1048576
    0       {r}/4 qgZ                  {qgz}        4194304
    0       {r}/4 all                                             123  (zpp)
    0 pass-through reasons: small=12
"""


def log(qwz, qgz, ranks=4):
    return "".join(TABLE.format(r=r, qwz=qwz, qgz=qgz) for r in range(ranks))


class StatsCheckTest(unittest.TestCase):
    def test_zpp_took_the_calls(self):
        self.assertEqual(zpp_stats_check.check(log(20, 10), [["qwZ", "hpZ"], ["qgZ"]], 4), [])

    def test_no_reduce_scatter_taken(self):
        problems = zpp_stats_check.check(log(20, 0), [["qwZ", "hpZ"], ["qgZ"]], 4)
        self.assertEqual(len(problems), 4, problems)

    def test_no_table_means_no_zpp(self):
        self.assertTrue(zpp_stats_check.check("loss 3.2\n", [["qwZ"]], 4))
        self.assertTrue(zpp_stats_check.check(log(20, 10, ranks=2), [["qwZ"]], 4))

    def test_command_line(self):
        with tempfile.NamedTemporaryFile("w", suffix=".log") as file:
            file.write(log(0, 10))
            file.flush()
            script = os.path.join(SOURCE, "tools", "zpp_stats_check.py")
            run = subprocess.run([sys.executable, script, "--ranks", "4", "--require", "qwZ",
                                  file.name], capture_output=True, text=True)
            self.assertEqual(run.returncode, 1, run.stdout)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
