"""A budget file held against figures measured now: one line per key, `FIGURE... KEY`, each figure
the most allowed (KEY is the rest of the line and may hold spaces; `#` starts a comment line).
Using less passes and says so; using more is a decision written into the file (--write), never a
silent drift. Shared by tools/kernel_resources.py and tools/kernel_instructions.py:

    TOOL --check BUILD      exit 1 on a key over its budget, a key missing from the file or a
                            stale line; 77 when BUILD has no CUDA kernels
    TOOL --write BUILD      rewrite the budget from the figures measured now
    TOOL --self-test BUILD  a budget one short must be reported (--check makes the same test first)
"""
import argparse
import os

SKIP = 77


def read(path, figures):
    """{key: (figures, line number)}."""
    budget = {}
    for number, line in enumerate(open(path), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        words = line.rstrip("\n").split(" ", figures)
        budget[words[figures]] = (tuple(int(word) for word in words[:figures]), number)
    return budget


def problems(found, budget, path, names):
    """One line per key over its budget, missing from it, or no longer measured."""
    file_name = os.path.basename(path)
    said = lambda figures: ", ".join(f"{f} {n}" for f, n in zip(figures, names))
    lines = []
    for key in sorted(found):
        figures = found[key]
        if key not in budget:
            lines.append(f"{key}: not in {file_name} ({said(figures)}; add it: --write)")
            continue
        most, number = budget[key]
        if any(f > m for f, m in zip(figures, most)):
            lines.append(f"{key}: {said(figures)}, over its budget of {said(most)} "
                         f"({file_name}:{number})")
    for key, (_, number) in sorted(budget.items(), key=lambda item: item[1][1]):
        if key not in found:
            lines.append(f"{file_name}:{number}: {key} is no longer measured")
    return lines


def planted_shortfall_reported(found, budget, path, names):
    """The check's own check, on the figures just measured: a budget one short."""
    key = min(k for k in budget if k in found)
    most, number = budget[key]
    planted = dict(budget)
    planted[key] = ((found[key][0] - 1,) + tuple(most[1:]), number)
    short = f"over its budget of {found[key][0] - 1} {names[0]}"
    if any(line.startswith(f"{key}:") and short in line
           for line in problems(found, planted, path, names)):
        print(f"self-test: a budget one short of {key}'s {names[0]} was reported")
        return True
    print(f"self-test: a budget one short for {key} was not reported")
    return False


def write(found, path, header):
    with open(path, "w") as out:
        out.write("".join(f"# {line}\n" for line in header))
        for key, figures in sorted(found.items()):
            out.write(f"{' '.join(str(figure) for figure in figures)} {key}\n")


def main(description, measure, path, names, header):
    """The command line above; `measure(build)` gives {key: figures}, empty where BUILD has no
    CUDA kernels."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("build")
    way = parser.add_mutually_exclusive_group(required=True)
    way.add_argument("--check", action="store_true")
    way.add_argument("--write", action="store_true")
    way.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    tool = os.path.basename(path)
    found = measure(args.build)
    if not found:
        print(f"{tool}: {args.build} has no CUDA kernels to measure: skipped")
        return SKIP
    if args.write:
        write(found, path, header)
        print(f"{tool}: {len(found)} lines written")
        return 0
    budget = read(path, len(names))
    if not planted_shortfall_reported(found, budget, path, names):
        return 1
    if args.self_test:
        return 0
    lines = problems(found, budget, path, names)
    for line in lines:
        print(line)
    under = sum(1 for key, figures in found.items()
                if key in budget and figures != budget[key][0] and
                not any(line.startswith(f"{key}:") for line in lines))
    print(f"{tool}: {len(found)} measured, {len(lines)} problem(s)" +
          (f"; {under} now under their budget (lower it: --write)" if under else ""))
    return 1 if lines else 0
