#!/usr/bin/env python3
"""No function outside the tests longer than 80 lines (issue 47): a reader holds a function in
one screen. Lengths are lizard's (blank and comment lines inside the function included), run with
the python that tools/install-lint.sh prints.

    tools/check_function_length.py [--root DIR]   exit 1 naming each function over the limit
    tools/check_function_length.py --self-test    plant a long function, expect it reported

LONG holds the functions still over the limit when this check came, each with its length then:
one that grows, or a new one over the limit, fails; one that shrinks under the limit must leave
the list (the check says so), so the list only gets shorter.
"""
import argparse
import os
import sys
import tempfile

import lizard

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
LIMIT = 80
FOLDERS = ("src", "plugin", "kernels", "include", "tools", "bench")
EXTENSIONS = (".cc", ".h", ".cu", ".cuh", ".py")
# (file, function): its length when the check came in. Shorten, then delete the line.
LONG = {
    ("bench/fsdp/train_fsdp2.py", "main"): 95,
}


def sources(root):
    for folder in FOLDERS:
        for directory, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if name.endswith(EXTENSIONS):
                    yield os.path.join(directory, name)


def lengths(root):
    """{(file relative to root, function): length} of every function over LIMIT lines."""
    found = {}
    for path in sources(root):
        for function in lizard.analyze_file(path).function_list:
            if function.length > LIMIT:
                found[(os.path.relpath(path, root), function.name)] = function.length
    return found


def problems(root, known):
    found = lengths(root)
    lines = []
    for key, length in sorted(found.items()):
        if key not in known:
            lines.append(f"{key[0]}: {key[1]} is {length} lines, over {LIMIT}: split it")
        elif length > known[key]:
            lines.append(f"{key[0]}: {key[1]} grew to {length} lines from {known[key]}, over "
                         f"{LIMIT}: split it")
    for key in sorted(set(known) - set(found)):
        lines.append(f"{key[0]}: {key[1]} is no longer over {LIMIT} lines: delete its line in "
                     "tools/check_function_length.py's LONG")
    return lines


def self_test():
    with tempfile.TemporaryDirectory() as scratch:
        os.makedirs(os.path.join(scratch, "src"))
        body = "".join(f"  x += {i};\n" for i in range(LIMIT))
        with open(os.path.join(scratch, "src", "planted.cc"), "w") as out:
            out.write(f"int Planted(int x) {{\n{body}  return x;\n}}\n")
        reported = problems(scratch, {})
        if not any("Planted is" in line for line in reported):
            print(f"self-test: a planted {LIMIT + 3}-line function was not reported: {reported}")
            return 1
    print(f"self-test: a planted {LIMIT + 3}-line function was reported")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=ROOT)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    lines = problems(args.root, LONG)
    for line in lines:
        print(line)
    print(f"function lengths: {len(lines)} problem(s); {len(LONG)} known functions still over "
          f"{LIMIT} lines")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
