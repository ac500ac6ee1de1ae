#!/usr/bin/env python3
"""Checks that zpp took the calls a run should have given it, from the ZPP_STATS=1 tables in a
log (one table per rank, printed at exit): a run's exit code alone cannot tell a zpp run from one
where the preload pointed at nothing or every call passed through.

    zpp_stats_check.py --require 'qwZ|hpZ,qgZ' run.log

--require lists groups separated by commas; a group is met when one of its techniques (|) has
calls in a table. Every table must meet every group; there must be at least --ranks tables."""
import argparse
import re
import sys

HEADER = "zpp stats: per communicator and technique"
ROW = re.compile(r"^\s*\d+\s+\d+/\d+\s+(qwZ|hpZ|qgZ|qAR|pass-through)\s+(\d+)\s")


def tables(text):
    """The calls per technique in each table, in order."""
    found = []
    for line in text.splitlines():
        if HEADER in line:
            found.append({})
            continue
        match = ROW.match(line)
        if match and found:
            found[-1][match.group(1)] = found[-1].get(match.group(1), 0) + int(match.group(2))
    return found


def check(text, groups, ranks):
    """The problems found, empty when the log shows what was required."""
    found = tables(text)
    problems = []
    if len(found) < ranks:
        problems.append(f"{len(found)} stats table(s) in the log, {ranks} expected "
                        "(ZPP_STATS=1 and libzpp.so preloaded?)")
    for index, calls in enumerate(found):
        for group in groups:
            if not any(calls.get(technique, 0) > 0 for technique in group):
                problems.append(f"table {index}: no calls on {'|'.join(group)} ({calls or 'none'})")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--require", required=True, help="e.g. 'qwZ|hpZ,qgZ'")
    parser.add_argument("--ranks", type=int, default=1, help="tables expected at least")
    parser.add_argument("log")
    args = parser.parse_args()
    groups = [group.split("|") for group in args.require.split(",") if group]
    with open(args.log, errors="replace") as log:
        problems = check(log.read(), groups, args.ranks)
    for problem in problems:
        print(f"zpp_stats_check: {problem}")
    if not problems:
        print(f"zpp_stats_check: {args.log}: every table shows calls on {args.require}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
