#!/usr/bin/env python3
"""Fails when an #include points upward in zpp's layering (docs/architecture.md, "Layers").

A file may include headers of its own layer and of any layer below it. The order is the list
below, lowest first; every source directory must appear in it, so a new directory is placed on
purpose. System headers (<...>) are not ours and are skipped.

  tools/check_includes.py [--root DIR]   check the tree (default: this repository)
  tools/check_includes.py --self-test    plant an upward include in a scratch tree, expect failure
"""
import os
import re
import sys
import tempfile

import tree_check

# Lowest first. A layer is one directory or several that sit at the same height and never include
# each other.
LAYERS = [
    ["include/zpp"],  # the public C API and the wire formats
    ["src/common"],  # result codes, text, NCCL types
    ["src/log"],  # logging and the ZPP_CHECK macros
    ["src/config"],  # every environment variable, parsed once; configures the logger
    ["src/codec"],  # the CPU reference codec and (src/codec/math) the math CUDA shares
    ["src/plan"],  # what one collective does
    ["src/stats"],
    ["src/epoch"],
    ["src/topology"],  # discovery, grouping, agreed set-up outcomes
    ["src/backend"],  # the device operations an engine needs
    ["src/fence"],  # the epoch fence and the buffer pool
    ["src/transport"],  # bytes between processes
    ["src/sim"],  # the CPU simulation backend
    ["src/costmodel"],
    ["src/tune"],
    ["src/engine"],  # the collective engine
    ["src/step"],  # the training-step model
    ["kernels"],  # CUDA kernels and their launchers
    ["src/nccl_runtime"],
    ["src/cuda_nccl"],  # the GPU backend
    ["src/cpu_comm"],  # the CPU communicator behind the torch backend
    ["plugin"],  # the exported nccl* hooks, the torch backend
    ["tools", "bench", "tests"],  # programs and tests: may include anything
]
SOURCE_EXTENSIONS = (".h", ".cc", ".cu", ".cuh", ".cpp", ".hpp")
SKIP_DIRS = {".git", ".ci", "docs", "build"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_dirs():
    return [d for layer in LAYERS for d in layer]


def rank_of_path(rel_path):
    """(rank, layer directory) of a repository-relative path, or (None, None)."""
    best = (None, None)
    for rank, layer in enumerate(LAYERS):
        for d in layer:
            if (rel_path == d or rel_path.startswith(d + "/")) and (
                    best[1] is None or len(d) > len(best[1])):
                best = (rank, d)
    return best


def resolve(root, rel_file, included):
    """The repository-relative path an include names, or None when it is not in the tree."""
    here = os.path.dirname(rel_file)
    candidates = [os.path.join(here, included), os.path.join("src", included),
                  os.path.join("include", included), included]
    for candidate in candidates:
        candidate = os.path.normpath(candidate)
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def source_files(root):
    for top in sorted(os.listdir(root)):
        if top in SKIP_DIRS or top.startswith("build") or not os.path.isdir(os.path.join(root, top)):
            continue
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXTENSIONS):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def check(root):
    """Returns the list of problems, one line each."""
    problems = []
    for rel_file in source_files(root):
        rank, layer = rank_of_path(rel_file)
        if rank is None:
            top = rel_file.split("/")[0]
            sub = "/".join(rel_file.split("/")[:2])
            if top in ("src", "include") or top in {d.split("/")[0] for d in layer_dirs()}:
                problems.append(f"{rel_file}: its directory {sub} is in no layer: add it to "
                                "LAYERS in tools/check_includes.py and to docs/architecture.md")
            continue
        with open(os.path.join(root, rel_file), errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = resolve(root, rel_file, match.group(1))
                if target is None:
                    continue
                target_rank, target_layer = rank_of_path(target)
                if target_rank is not None and target_rank > rank:
                    problems.append(
                        f"{rel_file}:{number}: includes \"{match.group(1)}\" ({target_layer}), "
                        f"a layer above {layer}: move the code to the layer that owns it, or "
                        "invert the dependency")
    return problems


def self_test():
    """The check must fail on a planted upward include and pass on a downward one."""
    with tempfile.TemporaryDirectory() as root:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)

        write("src/common/result.h", "#pragma once\n")
        write("src/engine/engine.h", '#pragma once\n#include "common/result.h"\n')
        write("src/codec/math/hd.h", "#pragma once\n")
        write("kernels/quantize.cu", '#include "codec/math/hd.h"\n#include "kernels/x.h"\n')
        write("kernels/x.h", "#pragma once\n")
        if check(root):
            print("self-test: a clean tree was reported:", *check(root), sep="\n  ")
            return 1
        write("src/common/text.h", '#pragma once\n#include "engine/engine.h"\n')
        write("src/codec/math/block_math.h", '#pragma once\n#include "kernels/x.h"\n')
        write("src/newdir/a.h", "#pragma once\n")
        found = check(root)
        expected = ["src/codec/math/block_math.h:2", "src/common/text.h:2", "src/newdir/a.h"]
        for prefix in expected:
            if not any(p.startswith(prefix) for p in found):
                print(f"self-test: the planted mistake at {prefix} was not reported; got:",
                      *found, sep="\n  ")
                return 1
        if len(found) != len(expected):
            print("self-test: unexpected reports:", *found, sep="\n  ")
            return 1
    print("self-test: the planted upward includes and the unlisted directory were reported")
    return 0


def main():
    return tree_check.run(__doc__.splitlines()[0], check, self_test,
                          lambda problems: (f"{len(problems)} include(s) against the layering "
                                         "(docs/architecture.md, \"Layers\")"),
                          lambda root: f"includes follow the layering: {len(list(source_files(root)))} files")


if __name__ == "__main__":
    sys.exit(main())
