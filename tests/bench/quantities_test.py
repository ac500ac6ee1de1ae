"""bench/quantities.py's definitions and the convergence harness's pairing by seed (issue 46):
each run against plain at its own seed, and the verdict over the seeds."""
import importlib.util
import os
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import quantities  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "convergence_harness", os.path.join(ROOT, "bench", "convergence", "run.py"))
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)


class QuantitiesTest(unittest.TestCase):
    def test_final_loss_is_the_mean_of_the_last_tenth(self):
        self.assertEqual(quantities.final_loss(range(100)), 94.5)
        self.assertEqual(quantities.final_loss([3.0, 2.0]), 2.0)  # at least the last step
        with self.assertRaises(ValueError):
            quantities.final_loss([])

    def test_step_clock_leaves_out_the_time_set_aside(self):
        ticks = iter([10.0, 11.0, 11.5, 14.5, 15.0])  # start, then each reading of the clock
        clock = quantities.StepClock(now=lambda: next(ticks))
        self.assertEqual(clock.seconds(), 1.0)
        with clock.aside():  # 11.5 to 14.5: bookkeeping
            pass
        self.assertEqual(clock.seconds(), 2.0)  # 15 - 10, less 3 set aside

    def test_verdicts(self):
        verdict = lambda values: quantities.paired_verdict(values)["verdict"]  # noqa: E731
        self.assertEqual(verdict([0.2, 0.25, 0.3]), "worse")  # above +0.1%, far from zero
        self.assertEqual(verdict([0.05, 0.08, 0.1]), "no worse than plain")  # at most +0.1%
        self.assertEqual(verdict([0.5, -0.3, 0.4]), "no worse than plain")  # within 2 SE of 0
        self.assertEqual(verdict([-0.5, -0.1, -0.3]), "no worse than plain")  # lower is fine
        self.assertEqual(verdict([0.01, 0.02]), "too few seeds")


class PairingTest(unittest.TestCase):
    def test_each_seed_against_plain_at_the_same_seed(self):
        losses = {"plain": 2.0, "plain@seed1": 3.0, "plain@seed2": 4.0,
                  "zero++": 2.02, "zero++@seed1": 3.03, "zero++@seed2": 4.04, "hpz": 2.0}
        ran = [{"mode": mode, "framework": "fsdp2", "final_loss": loss}
               for mode, loss in losses.items()]
        summary = {}
        harness.compare_with_plain(summary, "fsdp2", ran)
        deltas = {entry["mode"]: round(entry["delta_pct"], 9) for entry in ran}
        self.assertEqual(deltas["zero++@seed1"], 1.0)
        self.assertEqual(deltas["zero++@seed2"], 1.0)
        self.assertEqual(deltas["hpz"], 0.0)
        paired = summary["paired"]["fsdp2"]
        self.assertEqual(list(paired), ["zero++"])  # hpz ran at one seed only
        self.assertEqual(paired["zero++"]["seeds"], 3)
        self.assertAlmostEqual(paired["zero++"]["mean_pct"], 1.0)
        self.assertEqual(paired["zero++"]["verdict"], "worse")
        self.assertEqual(summary["plain_seed_losses"]["fsdp2"], [2.0, 3.0, 4.0])

    def test_every_mode_runs_at_every_seed(self):
        # torch's DDP comm hooks are judged by the same pairing as zpp's modes.
        args = harness.parse(["--frameworks", "ddp", "--modes", "plain,ar8,bf16-hook",
                              "--seeds", "3", "--no-gloo"])
        runs = [mode for mode, _ in harness.runs_of(args, "ddp")]
        for mode in ("plain", "ar8", "bf16-hook"):
            self.assertEqual([run for run in runs if harness.base_mode(run) == mode],
                             [mode, f"{mode}@seed1", f"{mode}@seed2"])


class TeardownAbortTest(unittest.TestCase):
    """The reference run's losses are kept after an abort at exit only when every step was
    written and the log shows that abort alone."""

    def verdict(self, log_text, rows, steps=3):
        with tempfile.TemporaryDirectory() as directory:
            log_path = os.path.join(directory, "log.txt")
            with open(log_path, "w") as log:
                log.write(log_text)
            return harness.teardown_abort(log_path, rows, steps)

    def test_kept_only_with_every_step_and_the_abort(self):
        rows = [(step, 2.0, 0.1) for step in range(3)]
        summary = "  exitcode  : {}  (pid: 1)\n"
        abort = ("final loss 2.0\n" + harness.TEARDOWN_ABORT + "\n" + summary.format(-15) +
                 summary.format(-6))
        self.assertTrue(self.verdict(abort, rows))
        self.assertFalse(self.verdict(abort, rows[:2]))  # a rank died before the end
        self.assertFalse(self.verdict("Segmentation fault\n" + summary.format(-11), rows))
        # The abort on one rank, a crash on another: not the abort alone.
        self.assertFalse(self.verdict(abort + summary.format(-11), rows))
        self.assertFalse(self.verdict(harness.TEARDOWN_ABORT + "\n", rows))  # no summary

    def test_losses_of_a_run_that_never_wrote_them_whole_are_none(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "loss.csv")
            self.assertEqual(harness.read_losses(path), [])
            with open(path, "w") as out:
                out.write("step,loss,seconds\n0,2.5,0.1\n1,2.4")  # cut short
            self.assertEqual(harness.read_losses(path), [])


if __name__ == "__main__":
    unittest.main()
