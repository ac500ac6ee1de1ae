#!/usr/bin/env bash
# Fails when a tracked C++/CUDA source differs from clang-format's output (make format fixes it).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cc' '*.cu' '*.cuh')
if ((${#files[@]} == 0)); then echo "check_format: no files"; exit 1; fi
clang-format --dry-run -Werror "${files[@]}"
echo "check_format: ${#files[@]} files formatted"
