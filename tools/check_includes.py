#!/usr/bin/env python3
"""Fails when an #include points upward in zpp's layering (docs/architecture.md, "Layers").

A file may include headers of its own layer and of any layer below it. The order is the
numbered list in docs/architecture.md, lowest first; every source directory must appear in it, so
a new directory is placed on purpose. System headers (<...>) are not ours and are skipped.

  tools/check_includes.py [--root DIR]   check the tree (default: this repository)
  tools/check_includes.py --self-test    plant an upward include in a scratch tree, expect failure
"""
import os
import re
import sys
import tempfile

import tree_check

# The layers are docs/architecture.md's numbered list under "Layers", lowest first: the one list.
# An item names its directories in backticks before the colon; several on one item sit at the
# same height and never include each other.
LAYER_ITEM = re.compile(r"^\d+\. ((?:`[^`]+`(?:, )?)+):")
SOURCE_EXTENSIONS = (".h", ".cc", ".cu", ".cuh", ".cpp", ".hpp")
SKIP_DIRS = {".git", ".ci", "docs", "build"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_layers(root):
    """[[directory, ...], ...] lowest first, from docs/architecture.md's "Layers" list."""
    with open(os.path.join(root, "docs", "architecture.md")) as f:
        text = f.read()
    if "\n## Layers\n" not in text:
        raise SystemExit("check_includes: docs/architecture.md has no \"## Layers\" section")
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    layers = [re.findall(r"`([^`]+)`", match.group(1))
              for match in map(LAYER_ITEM.match, section.splitlines()) if match]
    if not layers:
        raise SystemExit("check_includes: docs/architecture.md's \"Layers\" lists no layer")
    return layers


def rank_of_path(layers, rel_path):
    """(rank, layer directory) of a repository-relative path, or (None, None)."""
    best = (None, None)
    for rank, layer in enumerate(layers):
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
    layers = read_layers(root)
    for rel_file in source_files(root):
        rank, layer = rank_of_path(layers, rel_file)
        if rank is None:
            top = rel_file.split("/")[0]
            sub = "/".join(rel_file.split("/")[:2])
            tops = {d.split("/")[0] for layer_of in layers for d in layer_of}
            if top in ("src", "include") or top in tops:
                problems.append(f"{rel_file}: its directory {sub} is in no layer: add it to "
                                "docs/architecture.md's \"Layers\"")
            continue
        with open(os.path.join(root, rel_file), errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = resolve(root, rel_file, match.group(1))
                if target is None:
                    continue
                target_rank, target_layer = rank_of_path(layers, target)
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

        write("docs/architecture.md",
              "# Architecture\n\n## Layers\n\n1. `include/zpp`: api\n2. `kernels/math`: math\n"
              "3. `kernels`: cuda\n4. `src/common`: results\n5. `src/codec`: codec\n"
              "6. `src/engine`: engine\n7. `tools`, `tests`: on top\n\n## Next\n")
        write("src/common/result.h", "#pragma once\n")
        write("src/engine/engine.h", '#pragma once\n#include "common/result.h"\n')
        write("kernels/math/hd.h", "#pragma once\n")
        write("kernels/quantize.cu", '#include "kernels/math/hd.h"\n#include "kernels/x.h"\n')
        write("kernels/x.h", "#pragma once\n")
        write("src/codec/codec.h", '#pragma once\n#include "kernels/x.h"\n')
        if check(root):
            print("self-test: a clean tree was reported:", *check(root), sep="\n  ")
            return 1
        write("src/common/text.h", '#pragma once\n#include "engine/engine.h"\n')
        write("kernels/dequantize.cu", '#include "kernels/x.h"\n#include "common/result.h"\n')
        write("kernels/math/block_math.h", '#pragma once\n#include "kernels/x.h"\n')
        write("src/newdir/a.h", "#pragma once\n")
        found = check(root)
        expected = ["kernels/dequantize.cu:2", "kernels/math/block_math.h:2", "src/common/text.h:2",
                    "src/newdir/a.h"]
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
