#!/usr/bin/env python3
"""Fails when the README or a page under docs/ names something that does not exist.

Checked in README.md and docs/**/*.md:
  - every ZPP_* name appears in the tree's code, scripts or build files (a variable, a macro, a
    CMake option): a renamed or removed variable leaves no stale name behind;
  - every `make <target>` in code is a target of the Makefile;
  - every repository path in code or in a link (src/..., tools/..., docs/..., README.md, ...)
    exists; globs must match something; build outputs (build/...) are not checked;
  - nothing points outside the repository (a user who clones it has nothing beside it);
  - every result table between markers shows what its files under bench/results/ make
    (tools/results_tables.py), where the tree has those files.

  tools/check_docs.py [--root DIR]   check the docs (default: this repository)
  tools/check_docs.py --self-test    plant one mistake of each kind, expect each reported
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import results_tables
import tree_check

PATH_ROOTS = ("src/", "include/", "kernels/", "plugin/", "tools/", "bench/", "tests/", "docs/",
              ".ci/")
ROOT_FILES = ("README.md", "Makefile", "CMakeLists.txt")
ZPP_NAME = re.compile(r"\bZPP_[A-Z0-9_]*[A-Z0-9](?:_\*)?|\bZPP_[A-Z0-9_]*\*")
INLINE_CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
MAKE = re.compile(r"(?:^|[\s;&|(])make\s+((?:[A-Z_]+=\S*\s+|-\S+\s+)*)([a-z][a-z0-9_-]*)")
OUTSIDE = re.compile(r"\.\./shared\b|/work/|\bDESIGN\.md\b|KERNEL-ROOFLINE\.md")


def doc_files(root):
    files = [os.path.join(root, "README.md")] if os.path.isfile(os.path.join(root, "README.md")) else []
    files += sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    return files


def tree_files(root):
    """The files a name may be defined in: everything but the docs and recorded results."""
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                                check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        listed = [os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs if "/.git" not in d]
    return [f for f in listed
            if not f.endswith(".md") and not f.startswith(("bench/results/", "docs/"))
            and os.path.isfile(os.path.join(root, f))]


def known_zpp_names(root):
    names = set()
    for rel in tree_files(root):
        try:
            with open(os.path.join(root, rel), errors="ignore") as f:
                names.update(re.findall(r"\bZPP_[A-Z0-9_]*[A-Z0-9]", f.read()))
        except OSError:
            pass
    return names


def make_targets(root):
    targets = set()
    try:
        with open(os.path.join(root, "Makefile")) as f:
            for line in f:
                match = re.match(r"^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:(?!=)", line)
                if match:
                    targets.update(match.group(1).split())
    except OSError:
        pass
    return targets


def code_texts(text):
    """Inline code spans and the lines of fenced blocks: where names, paths and commands live."""
    pieces, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            pieces.append(line)
        else:
            pieces.extend(INLINE_CODE.findall(line))
    return pieces


def path_exists(root, candidate):
    candidate = candidate.rstrip(".,;:)'\"")
    candidate = re.sub(r":\d+(-\d+)?$", "", candidate).split("#")[0]
    if not candidate:
        return True
    if "{" in candidate or "<" in candidate or "$" in candidate:
        return True  # a pattern for the reader (bench/results/netbench_cpu.{json,md}, <name>)
    if any(c in candidate for c in "*?["):
        return bool(glob.glob(os.path.join(root, candidate)))
    return os.path.exists(os.path.join(root, candidate))


def repository_paths(piece):
    for token in re.split(r"[\s=,'\"(]+", piece):
        token = token.strip("`")
        if token.startswith("./"):
            token = token[2:]
        if token.startswith(PATH_ROOTS) or token in ROOT_FILES:
            yield token


def check(root):
    problems = []
    names = known_zpp_names(root)
    targets = make_targets(root)
    root_abs = os.path.realpath(root)
    for doc in doc_files(root):
        rel_doc = os.path.relpath(doc, root)
        with open(doc, errors="replace") as f:
            text = f.read()
        lines = text.splitlines()

        def where(needle):
            for number, line in enumerate(lines, 1):
                if needle in line:
                    return f"{rel_doc}:{number}"
            return rel_doc

        for match in OUTSIDE.finditer(text):
            problems.append(f"{where(match.group(0))}: points outside the repository "
                            f"({match.group(0)}): bring what it says into docs/")
        for name in sorted(set(ZPP_NAME.findall(text))):
            if name.endswith("*"):
                prefix = name.rstrip("*")
                if not any(n.startswith(prefix) for n in names):
                    problems.append(f"{where(name)}: no variable matches {name}")
            elif name not in names:
                problems.append(f"{where(name)}: {name} is named nowhere in the code: a variable "
                                "renamed or removed? (src/config/env_vars.def declares them)")
        for piece in code_texts(text):
            for match in MAKE.finditer(piece):
                if match.group(2) not in targets:
                    problems.append(f"{where(piece)}: `make {match.group(2)}` is not a target of "
                                    "the Makefile")
            for path in repository_paths(piece):
                if not path_exists(root, path):
                    problems.append(f"{where(path)}: {path} does not exist")
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            resolved = os.path.realpath(os.path.join(os.path.dirname(doc), target.split("#")[0]))
            if resolved != root_abs and not resolved.startswith(root_abs + os.sep):
                problems.append(f"{where(target)}: the link {target} leaves the repository")
            elif not os.path.exists(resolved):
                problems.append(f"{where(target)}: the link {target} leads nowhere")
    if os.path.isdir(os.path.join(root, "bench", "results")):
        problems += results_tables.check(root)
    return sorted(set(problems))


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)) or root, exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)

        write("Makefile", "demo: build\n\t@true\ntest: build\n")
        write("src/config/env_vars.def", 'ZPP_ENV_NUM(qwz, "ZPP_QWZ", Bool, 0, 0, 1, "qwZ")\n')
        write("tools/zpp-run", "#!/bin/sh\n")
        write("docs/plugin.md", "# Plugin\n")
        clean = ("# zpp\n\n`make demo` then `ZPP_QWZ=1 tools/zpp-run`; see [plugin](docs/plugin.md)"
                 " and `ZPP_QWZ*`.\n\n```sh\nmake test\n```\n")
        write("README.md", clean)
        if check(root):
            print("self-test: clean docs were reported:", *check(root), sep="\n  ")
            return 1
        plants = {
            "a variable that does not exist": "Set `ZPP_QWZ_TYPO=1`.\n",
            "a make target that does not exist": "```sh\nmake benchmarks\n```\n",
            "a file that does not exist": "Run `tools/zpp-walk --help`.\n",
            "a link that leads nowhere": "See [the design](docs/design.md).\n",
            "a link out of the repository": "See [the design](../shared/notes.md).\n",
            "a path outside the repository": "As ../shared/DESIGN.md says.\n",
        }
        for what, line in plants.items():
            write("README.md", clean + line)
            if not check(root):
                print(f"self-test: {what} was not reported")
                return 1
    print(f"self-test: each of {len(plants)} planted mistakes was reported")
    return 0


def main():
    return tree_check.run(__doc__.splitlines()[0], check, self_test,
                          lambda problems: f"{len(problems)} problem(s) in the docs",
                          lambda root: f"the docs name only what exists: {len(doc_files(root))} files")


if __name__ == "__main__":
    sys.exit(main())
