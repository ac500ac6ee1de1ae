#!/usr/bin/env python3
"""Holds the torch package's copies of C definitions to the headers they copy, with the compiler
as the only parser: every name and value in plugin/torch/zpp_torch/_c_constants.py becomes a
static_assert against nccl.h and include/zpp, and zppStats_t's ctypes mirror (_stats.py) a
static_assert per field offset and size.

Usage: tools/check_python_constants.py [--cxx c++] [--include DIR]... [--self-test]
--self-test plants a wrong value and a wrong field and expects both to be caught."""
import argparse
import ctypes
import importlib.util
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "plugin", "torch", "zpp_torch")
HEADERS = ("nccl.h", "zpp/zpp.h", "zpp/zpp_cpu.h")


def load(name):
    """A module of the package by path, alone (both files import nothing of the package)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(PACKAGE, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def constants():
    module = load("_c_constants")
    return {name: value for name, value in vars(module).items()
            if isinstance(value, int) and name.startswith(("nccl", "zpp"))}


def stats_fields():
    """(field, offset, size) of the ctypes zppStats_t, and its total size."""
    stats = load("_stats").Stats
    fields = [(name, getattr(stats, name).offset, getattr(stats, name).size)
              for name, _ in stats._fields_]
    return fields, ctypes.sizeof(stats)


def program(values, fields, total):
    lines = ["#include <cstddef>"] + [f"#include <{header}>" for header in HEADERS]
    lines += [f'static_assert({name} == {value}, "_c_constants.py: {name} is not {value}");'
              for name, value in sorted(values.items())]
    for name, offset, size in fields:
        lines.append(f"static_assert(offsetof(zppStats_t, {name}) == {offset} && "
                     f"sizeof(zppStats_t::{name}) == {size}, \"_stats.py: field {name}\");")
    lines.append(f'static_assert(sizeof(zppStats_t) == {total}, "_stats.py: zppStats_t size");')
    return "\n".join(lines) + "\n"


def compiles(source, cxx, includes):
    with tempfile.NamedTemporaryFile("w", suffix=".cc", delete=False) as handle:
        handle.write(source)
        path = handle.name
    try:
        command = [cxx, "-std=c++20", "-fsyntax-only", "-I", os.path.join(ROOT, "include")]
        for directory in includes:
            command += ["-I", directory]
        done = subprocess.run(command + [path], capture_output=True, text=True)
        return done.returncode == 0, done.stderr
    finally:
        os.unlink(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    parser.add_argument("--include", action="append", default=["/usr/local/cuda/include"],
                        help="where nccl.h is (default /usr/local/cuda/include)")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    values = constants()
    fields, total = stats_fields()
    if args.self_test:
        wrong_value = dict(values, ncclFloat32=values["ncclFloat32"] + 1)
        name, offset, size = fields[-1]
        wrong_field = fields[:-1] + [(name, offset + 8, size)]
        caught = [not compiles(program(wrong_value, fields, total), args.cxx, args.include)[0],
                  not compiles(program(values, wrong_field, total), args.cxx, args.include)[0]]
        if not all(caught):
            sys.exit(f"check_python_constants: a planted drift was not caught: {caught}")
        print("check_python_constants: both planted drifts caught")
        return
    ok, errors = compiles(program(values, fields, total), args.cxx, args.include)
    if not ok:
        sys.exit("check_python_constants: the torch package's copies differ from the headers:\n"
                 + errors)
    print(f"check_python_constants: {len(values)} constants and {len(fields)} zppStats_t fields "
          "match the headers")


if __name__ == "__main__":
    main()
