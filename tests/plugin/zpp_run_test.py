"""zpp-run: the variables it sets, LD_PRELOAD, and the optimizer hook that advances the epoch.

Runs against a stand-in torch (fake_torch/) so that it needs neither torch nor a GPU.
Usage: zpp_run_test.py ZPP_RUN LIBZPP
"""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
ZPP_RUN, LIBRARY = sys.argv[1], sys.argv[2]

PROGRAM = r"""
import ctypes, os
import torch
epoch = ctypes.c_uint64(0)
zpp = ctypes.CDLL(None)
optimizer = torch.optim.Optimizer()
for _ in range(STEPS):
    optimizer.step()
assert zpp.zppGetStepEpoch(ctypes.byref(epoch)) == 0
print("epoch", epoch.value)
for name in ("ZPP_QWZ", "ZPP_QWZ_BITS", "ZPP_HPZ", "ZPP_QGZ", "ZPP_QGZ_BITS_INTER", "ZPP_STATS",
             "ZPP_STATS_DIR", "ZPP_QAR", "ZPP_QAR_BITS"):
    print(name, os.environ.get(name, "-"))
print("preload", os.environ["LD_PRELOAD"])
"""


def run(*flags, steps=3, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(HERE, "fake_torch")
    env.pop("LD_PRELOAD", None)
    env.update(env_extra or {})
    command = [ZPP_RUN, "--lib", LIBRARY, *flags, "--", sys.executable, "-c",
               PROGRAM.replace("STEPS", str(steps))]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


class ZppRunTest(unittest.TestCase):
    def test_preset_sets_the_zero_plus_plus_variables_and_preloads(self):
        result = run("--preset", "zero++")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("ZPP_QWZ 1\n", result.stdout)
        self.assertIn("ZPP_QWZ_BITS 8\n", result.stdout)
        self.assertIn("ZPP_HPZ 1\n", result.stdout)
        self.assertIn("ZPP_QGZ 1\n", result.stdout)
        self.assertIn("ZPP_QGZ_BITS_INTER 4\n", result.stdout)
        self.assertIn("preload " + os.path.realpath(LIBRARY), result.stdout)

    def test_optimizer_steps_advance_the_step_epoch(self):
        result = run("--hpz", steps=5)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("epoch 5\n", result.stdout)
        self.assertIn("ZPP_QWZ -\n", result.stdout)

    def test_qar_is_its_own_flag_outside_the_preset(self):
        result = run("--preset", "zero++")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("ZPP_QAR -\n", result.stdout)
        result = run("--qar=4")
        self.assertIn("ZPP_QAR 1\n", result.stdout)
        self.assertIn("ZPP_QAR_BITS 4\n", result.stdout)

    def test_qwz_bits_and_stats_flags(self):
        result = run("--qwz=4", "--stats")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("ZPP_QWZ_BITS 4\n", result.stdout)
        # One report for the job, not a table per process (issue 29, item 1) ...
        self.assertIn("ZPP_STATS -\n", result.stdout)
        self.assertIn("ZPP_STATS_DIR /", result.stdout)
        # ... which says so when no process opened a communicator, and why that happens.
        self.assertIn("zpp saw no communicator in this job", result.stderr)
        self.assertIn("gloo backend", result.stderr)
        result = run("--stats", "--per-rank")
        self.assertIn("ZPP_STATS 1\n", result.stdout)

    def test_stats_returns_the_commands_exit_status(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "fake_torch"))
        env.pop("LD_PRELOAD", None)
        result = subprocess.run([ZPP_RUN, "--lib", LIBRARY, "--stats", "--json", "--",
                                 sys.executable, "-c", "raise SystemExit(3)"], env=env,
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn('"communicators": 0', result.stderr)

    def test_existing_preload_is_kept_after_zpp(self):
        result = run("--qgz", env_extra={"LD_PRELOAD": "/lib/x86_64-linux-gnu/libm.so.6"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(os.path.realpath(LIBRARY) + ":/lib/x86_64-linux-gnu/libm.so.6",
                      result.stdout)

    # Issue 29, item 5: presets compose. The user's own ZPP_* values and flags win; the preset
    # fills only what is unset; a bare --qwz leaves the bits alone.
    def test_user_values_win_over_the_preset(self):
        result = run("--preset", "zero++", env_extra={"ZPP_QWZ_BITS": "4"})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("ZPP_QWZ_BITS 4\n", result.stdout)
        self.assertIn("ZPP_HPZ 1\n", result.stdout)  # the preset fills the rest
        result = run("--preset", "zero++", "--qwz=4")
        self.assertIn("ZPP_QWZ_BITS 4\n", result.stdout)
        result = run("--qwz", env_extra={"ZPP_QWZ_BITS": "4"})
        self.assertIn("ZPP_QWZ 1\n", result.stdout)
        self.assertIn("ZPP_QWZ_BITS 4\n", result.stdout)

    def test_dry_run_names_each_settings_source_and_runs_nothing(self):
        env = dict(os.environ, ZPP_QGZ_BITS_INTER="8")
        result = subprocess.run([ZPP_RUN, "--lib", LIBRARY, "--preset", "zero++", "--qwz=4",
                                 "--dry-run", "--", "false"],
                                env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)  # `false` did not run
        self.assertIn("ZPP_QWZ_BITS=4  (flag)\n", result.stdout)
        self.assertIn("ZPP_QGZ_BITS_INTER=8  (environment)\n", result.stdout)
        self.assertIn("ZPP_HPZ=1  (preset zero++)\n", result.stdout)
        self.assertIn("command: false\n", result.stdout)

    def test_dry_run_warns_of_names_and_values_zpp_rejects(self):
        env = dict(os.environ, ZPP_QARR="1", ZPP_QAR="2")
        result = subprocess.run([ZPP_RUN, "--lib", LIBRARY, "--dry-run", "--", "false"],
                                env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"warning: ZPP_QAR=\"2\" is not a boolean")
        self.assertRegex(result.stdout, r"warning: ZPP_QARR is not a variable zpp knows.*ZPP_QAR")

    def test_cpu_switch_makes_gloo_groups_on_zpp(self):
        program = ("import sys, torch, torch.distributed as dist\n"
                   "from torch.distributed import distributed_c10d as c10d\n"
                   "dist.init_process_group('gloo'); dist.new_group([0, 1])\n"
                   "c10d._new_process_group_helper(2, 0, [], 'cpu:gloo,cuda:nccl', None, 'x')\n"
                   "dist.init_process_group()\n"
                   "print(c10d.made, 'zpp_torch' in sys.modules)\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "fake_torch"))
        switched = subprocess.run([ZPP_RUN, "--lib", LIBRARY, "--cpu", "--", sys.executable, "-c",
                                   program], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(switched.returncode, 0, switched.stderr)
        self.assertIn("['zpp', 'zpp', 'cpu:zpp,cuda:nccl', 'zpp'] True", switched.stdout)
        plain = subprocess.run([ZPP_RUN, "--lib", LIBRARY, "--", sys.executable, "-c", program],
                               env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertIn("['gloo', 'gloo', 'cpu:gloo,cuda:nccl', 'undefined'] False", plain.stdout)

    def test_help_lists_what_each_preset_sets(self):
        result = subprocess.run([ZPP_RUN, "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("zero++: ZPP_QWZ=1 ZPP_QWZ_BITS=8 ZPP_HPZ=1", result.stdout)

    def test_command_not_on_path_is_a_clear_error(self):
        env = dict(os.environ, PATH="/nonexistent")
        result = subprocess.run([sys.executable, ZPP_RUN, "--lib", LIBRARY, "--",
                                 "no-such-command-zpp"],
                                env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("no-such-command-zpp: not found on PATH", result.stderr)

    def test_missing_library_is_a_clear_error(self):
        result = subprocess.run([ZPP_RUN, "--lib", "/nonexistent/libzpp.so", "--", "true"],
                                capture_output=True, text=True, timeout=60)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("does not exist", result.stderr)

    def test_no_command_is_a_usage_error(self):
        result = subprocess.run([ZPP_RUN, "--hpz"], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 2)
        self.assertIn("no command given", result.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
