#!/usr/bin/env python3
"""No function outside the tests longer than 80 lines (issue 47): a reader holds a function in
one screen. Lengths are lizard's (blank and comment lines inside the function included), run with
the python that tools/install-lint.sh prints.

    tools/check_function_length.py [--root DIR]   exit 1 naming each function over the limit
    tools/check_function_length.py --self-test    plant a long function, expect it reported

None is exempt: split a function that grows past the limit.
"""
import os
import sys
import tempfile

import lizard

import tree_check  # tools/tree_check.py: the tree checks' shared command line

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
LIMIT = 80
FOLDERS = ("src", "plugin", "kernels", "include", "tools", "bench")
EXTENSIONS = (".cc", ".h", ".cu", ".cuh", ".py")


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


def problems(root):
    return [f"{path}: {name} is {length} lines, over {LIMIT}: split it"
            for (path, name), length in sorted(lengths(root).items())]


def self_test():
    with tempfile.TemporaryDirectory() as scratch:
        os.makedirs(os.path.join(scratch, "src"))
        body = "".join(f"  x += {i};\n" for i in range(LIMIT))
        with open(os.path.join(scratch, "src", "planted.cc"), "w") as out:
            out.write(f"int Planted(int x) {{\n{body}  return x;\n}}\n")
        reported = problems(scratch)
        if not any("Planted is" in line for line in reported):
            print(f"self-test: a planted {LIMIT + 3}-line function was not reported: {reported}")
            return 1
    print(f"self-test: a planted {LIMIT + 3}-line function was reported")
    return 0


def main():
    return tree_check.run(
        __doc__.split("\n\n")[0], problems, self_test,
        lambda lines: f"function lengths: {len(lines)} function(s) over {LIMIT} lines outside the "
        "tests",
        lambda root: f"function lengths: no function over {LIMIT} lines outside the tests")


if __name__ == "__main__":
    sys.exit(main())
