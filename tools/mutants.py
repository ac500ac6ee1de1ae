#!/usr/bin/env python3
"""make mutants: breaks zpp's key contracts on purpose, one mutation of tools/mutants.toml at a
time, and checks that the tests meant to guard each contract fail (docs/architecture.md, "How the
contracts are tested").

A mutation replaces its `before` text with `after` inside its `function` (lizard finds the
function's lines; without one, the whole file), every occurrence there, rebuilds only the test
binaries its `tests` name (incremental, in build-mutants/, CUDA off: every mutation here is host
code), runs them with their gtest filters under a per-binary timeout, stops at the first binary
that fails, and restores the file on every way out. A mutation whose text is no longer in its
function stops the run before anything is built ("no longer applies": the code moved, update the
list). Prints a table and writes it to bench/results/mutants.md; exits 1 when a mutation
survived, 2 on a broken list or build. Run with the python tools/install-lint.sh prints:

  tools/mutants.py                 every mutation (about 50 minutes on 2 cores)
  tools/mutants.py --check-list    only whether every mutation still applies (make test)
  tools/mutants.py --self-test     a planted stale mutation must be reported
Environment: MUTANTS_ONLY (a regex on the names), MUTANTS_BUILD (the build folder),
MUTANTS_TIMEOUT (seconds per test binary, 180), MUTANTS_REPORT (the table's file; the default
only for a full run), JOBS (build jobs).
"""
import os
import re
import signal
import subprocess
import sys
import time
import tomllib

import lizard

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
LIST = os.path.join(ROOT, "tools", "mutants.toml")


def say(text):
    print(text, file=sys.stderr, flush=True)


def load(path=LIST):
    return tomllib.load(open(path, "rb"))["mutant"]


def scopes(mutant, text):
    """[(start, end)] character ranges of `text` the mutation may edit: its functions' lines."""
    names = mutant.get("function")
    if names is None:
        return [(0, len(text))]
    names = [names] if isinstance(names, str) else names
    path = os.path.join(ROOT, mutant["file"])
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    found = [f for f in lizard.analyze_file.analyze_source_code(path, text).function_list
             if f.name in names]
    return [(starts[f.start_line - 1], starts[min(f.end_line, len(starts) - 1)]) for f in found]


def apply(mutant, text):
    """(the mutated text, the occurrences replaced) within the mutation's scopes."""
    count = 0
    for start, end in sorted(scopes(mutant, text), reverse=True):
        piece = text[start:end]
        count += piece.count(mutant["before"])
        text = text[:start] + piece.replace(mutant["before"], mutant["after"]) + text[end:]
    return text, count


def stale(mutants):
    """One line per mutation that no longer applies."""
    lines = []
    for m in mutants:
        path = os.path.join(ROOT, m["file"])
        if not os.path.exists(path) or apply(m, open(path).read())[1] == 0:
            where = f" in {m['function']}" if "function" in m else ""
            lines.append(f"mutation no longer applies: {m['name']} ({m['file']}): its text{where} "
                         "is gone; update tools/mutants.toml")
    return lines


def self_test(mutants):
    planted = dict(mutants[0], before=mutants[0]["before"] + "\n// planted: not in the file")
    moved = dict(mutants[0], function="zpp::NoSuchFunction")
    return len(stale([planted, moved])) == 2


def binaries_of(mutant):
    out = []
    for spec in mutant["tests"]:
        binary = spec.split("=", 1)[0]
        # ctest runs the torch backend's Python tests: the package and the libraries.
        for target in (["zpp_torch_package", "zpp"] if binary == "ctest" else [binary]):
            if target not in out:
                out.append(target)
    return out


class Run:
    def __init__(self):
        self.build_dir = os.environ.get("MUTANTS_BUILD", os.path.join(ROOT, "build-mutants"))
        self.timeout = int(os.environ.get("MUTANTS_TIMEOUT", "180"))
        self.jobs = int(os.environ.get("JOBS", str(os.cpu_count() or 2)))
        self.changed = None  # (path, pristine text) while a mutation is in place

    def restore(self):
        if self.changed:
            path, pristine = self.changed
            open(path, "w").write(pristine)
            self.changed = None

    def build(self, targets):
        log = os.path.join(self.build_dir, "mutants-build.log")
        with open(log, "w") as out:
            done = subprocess.run(["cmake", "--build", self.build_dir, "-j", str(self.jobs),
                                   "--target", *targets], stdout=out, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            say("".join(open(log).readlines()[-30:]))
        return done.returncode == 0

    def run_spec(self, spec):
        """None when it passes, else what failed ("binary: Test.Name")."""
        binary, _, filter_ = spec.partition("=")
        seconds = self.timeout
        if "@" in filter_:
            filter_, seconds = filter_.rsplit("@", 1)
            seconds = int(seconds)
        if binary == "ctest":
            command = ["ctest", "--test-dir", self.build_dir, "-R", f"^{filter_}$",
                       "--output-on-failure"]
        else:
            command = [os.path.join(self.build_dir, "bin", binary), f"--gtest_filter={filter_}",
                       "--gtest_brief=1"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=seconds)
        except subprocess.TimeoutExpired:
            return f"{binary}: timed out after {seconds}s"
        out = done.stdout + done.stderr
        if binary == "ctest":
            ran = "100% tests passed, 0 tests failed out of 1" in out
            return None if done.returncode == 0 and ran else f"ctest: {filter_}"
        if done.returncode == 0:
            return None
        failed = re.search(r"^\[  FAILED  \] ([A-Za-z0-9_/.]+)", out, re.M)
        return f"{binary}: {failed.group(1) if failed else f'exit status {done.returncode}'}"

    def caught_by(self, mutant):
        for spec in mutant["tests"]:
            failure = self.run_spec(spec)
            if failure:
                return failure
        return None

    def prepare(self, selected):
        if not os.path.exists(os.path.join(self.build_dir, "CMakeCache.txt")):
            say(f"mutants: configuring {self.build_dir} (Release, CUDA off)")
            subprocess.run(["cmake", "-S", ROOT, "-B", self.build_dir, "-G", "Ninja",
                            "-DCMAKE_BUILD_TYPE=Release", "-DZPP_ENABLE_CUDA=OFF"], check=True,
                           stdout=subprocess.DEVNULL)
        targets = list(dict.fromkeys(t for m in selected for t in binaries_of(m)))
        say(f"mutants: building {' '.join(targets)}")
        if not self.build(targets):
            say("mutants: the unmutated build failed")
            return False
        # Every spec must pass unmutated, or a "caught" below would mean nothing.
        for spec in dict.fromkeys(s for m in selected for s in m["tests"]):
            failure = self.run_spec(spec)
            if failure:
                say(f"mutants: the unmutated code fails {spec} ({failure}); fix that first")
                return False
        return True

    def one(self, mutant):
        """(the table's row, whether it survived, whether the list is broken)."""
        start = time.time()
        path = os.path.join(ROOT, mutant["file"])
        pristine = open(path).read()
        mutated, sites = apply(mutant, pristine)
        self.changed = (path, pristine)
        open(path, "w").write(mutated)
        survived = broken = False
        if not self.build(binaries_of(mutant)):
            result, broken = "BUILD FAILED (the mutation does not compile: fix the list)", True
        else:
            result = self.caught_by(mutant)
            if result is None:
                result, survived = "SURVIVED", True
        self.restore()
        seconds = int(time.time() - start)
        say(f"mutants: {mutant['name']}: {result} ({seconds}s)")
        return f"| {mutant['name']} | `{mutant['file']}` | {sites} | {result} | {seconds} |", \
            survived, broken


def table(rows, survived, seconds, jobs):
    return "\n".join(
        ["| mutation | file | sites | caught by (binary: first failing test) | seconds |",
         "|---|---|---:|---|---:|", *rows, "",
         f"{len(rows)} mutations, {survived} survived; {seconds} s in all (`tools/mutants.py`, "
         f"{jobs} build jobs, {os.cpu_count()} cores)."])


def report(path, text):
    git = lambda *args: subprocess.run(["git", "-C", ROOT, *args], capture_output=True,
                                       text=True)
    relative = os.path.relpath(path, ROOT)
    dirty = git("diff", "--quiet", "HEAD", "--", ".", f":(exclude){relative}").returncode != 0
    commit = git("rev-parse", "--short", "HEAD").stdout.strip() or "?"
    with open(path, "w") as out:
        out.write("# make mutants\n\nEach row breaks one contract on purpose (`tools/mutants.toml` "
                  "lists the exact change and the\ntests expected to catch it) and names the first "
                  f"test that failed. Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
                  f"on commit {commit}{' plus uncommitted changes' if dirty else ''}.\n\n"
                  f"{text}\n")
    say(f"mutants: table written to {path}")


def run_all(selected, report_path):
    run = Run()
    signal.signal(signal.SIGTERM, lambda *_: (run.restore(), sys.exit(130)))
    start = time.time()
    try:
        if not run.prepare(selected):
            return 2
        say(f"mutants: baseline passes ({int(time.time() - start)} s)")
        results = [run.one(m) for m in selected]
    finally:
        run.restore()
    survived = sum(1 for _, s, _ in results if s)
    text = table([row for row, _, _ in results], survived, int(time.time() - start), run.jobs)
    print("\n" + text)
    if report_path:
        report(report_path, text)
    if any(broken for _, _, broken in results):
        return 2
    return 1 if survived else 0


def main():
    mutants = load()
    if "--self-test" in sys.argv:
        ok = self_test(mutants)
        print("mutants: a planted stale mutation was " + ("reported" if ok else "NOT reported"))
        return 0 if ok else 1
    only = os.environ.get("MUTANTS_ONLY", "")
    selected = [m for m in mutants if not only or re.search(only, m["name"])]
    if not selected:
        say(f"mutants: no mutation matches '{only}'")
        return 2
    lines = stale(selected)
    for line in lines:
        say(f"mutants: {line}")
    if "--check-list" in sys.argv:
        print(f"mutants: {len(selected) - len(lines)} of {len(selected)} mutations apply")
        return 1 if lines else 0
    if lines:
        return 2
    report_path = os.environ.get("MUTANTS_REPORT") or (
        "" if only else os.path.join(ROOT, "bench", "results", "mutants.md"))
    return run_all(selected, report_path)


if __name__ == "__main__":
    sys.exit(main())
