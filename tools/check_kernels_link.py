#!/usr/bin/env python3
"""Fails when the kernels' library needs a zpp symbol it does not define itself.

`kernels/` depends on include/ and on itself alone (docs/architecture.md, "Layers"). The include
check sees headers; this sees the link: every `zpp::` symbol that libzpp_kernels.a leaves
undefined must be defined by another of its own objects, so no call reaches back into src/ (a
log line, a check, a result name) even through a declaration written by hand.

  tools/check_kernels_link.py BUILD      check BUILD/lib/libzpp_kernels.a (nm, demangled)
  tools/check_kernels_link.py --self-test  plant a call into src/ in nm's output, expect it named
"""
import os
import re
import subprocess
import sys

# nm's line: an address (blank for an undefined symbol), the type letter, the demangled name
# (which may hold spaces).
NM_LINE = re.compile(r"^[0-9a-fA-F]*\s+([A-Za-z?-])\s+(.+)$")


def symbols(nm_lines):
    """(defined, undefined): the `zpp::` symbols of nm's lines ("[address] TYPE name")."""
    defined, undefined = set(), set()
    for line in nm_lines:
        match = NM_LINE.match(line)  # None for an archive member's header or a blank line
        if match is None or not match.group(2).startswith("zpp::"):
            continue
        (undefined if match.group(1) == "U" else defined).add(match.group(2))
    return defined, undefined


def foreign(nm_lines):
    """The zpp symbols the archive needs and does not define, sorted."""
    defined, undefined = symbols(nm_lines)
    return sorted(undefined - defined)


def check(build):
    archive = os.path.join(build, "lib", "libzpp_kernels.a")
    if not os.path.isfile(archive):
        print(f"check_kernels_link: {archive} is not built (a CUDA build makes it); skipped")
        return 77
    out = subprocess.run(["nm", "-C", archive], check=True, capture_output=True, text=True).stdout
    missing = foreign(out.splitlines())
    for name in missing:
        print(f"libzpp_kernels.a needs {name}, defined outside kernels/: move it into kernels/ "
              "or do the work in src/codec_gpu")
    if missing:
        return 1
    print("libzpp_kernels.a needs no zpp symbol from outside kernels/")
    return 0


def self_test():
    clean = ["", "quantize.cu.o:", "0000000000000000 T zpp::codec::gpu::LaunchQuantizeBatch()",
             "                 U zpp::codec::gpu::detail::LoadCopyBatchKernels()",
             "copy_batch.cu.o:",
             "0000000000000010 T zpp::codec::gpu::detail::LoadCopyBatchKernels()",
             "                 U cudaGetLastError"]
    if foreign(clean):
        print("self-test: a clean archive was reported:", foreign(clean))
        return 1
    planted = clean + ["                 U zpp::ResultName(ncclResult_t)",
                       "                 U zpp::codec::CheckCount(char const*, unsigned long)"]
    if foreign(planted) != ["zpp::ResultName(ncclResult_t)",
                            "zpp::codec::CheckCount(char const*, unsigned long)"]:
        print("self-test: the planted call into src/ was not reported:", foreign(planted))
        return 1
    print("self-test: the planted call into src/ was reported")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(check(sys.argv[1]))
