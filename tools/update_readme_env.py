#!/usr/bin/env python3
"""Regenerates the table of environment variables in docs/configuration.md (or any Markdown
file given) with `zpp-env --markdown`'s, between the markers

    <!-- env-table:begin (make readme-env) -->
    <!-- env-table:end -->

Usage: tools/update_readme_env.py docs/configuration.md build/bin/zpp-env
(`make readme-env` runs it so.) The file is rewritten only when the table changed;
tests/unit/env_doc_test.cc fails while it is out of date.
"""
import subprocess
import sys

BEGIN = "<!-- env-table:begin (make readme-env) -->\n"
END = "<!-- env-table:end -->"


def main(doc_path: str, zpp_env: str) -> int:
    table = subprocess.run([zpp_env, "--markdown"], check=True, capture_output=True, text=True).stdout
    with open(doc_path, encoding="utf-8") as f:
        doc = f.read()
    begin, end = doc.find(BEGIN), doc.find(END)
    if begin < 0 or end < begin:
        print(f"{doc_path}: markers {BEGIN.strip()} ... {END} not found", file=sys.stderr)
        return 1
    updated = doc[: begin + len(BEGIN)] + table + doc[end:]
    if updated != doc:
        with open(doc_path, "w", encoding="utf-8") as f:
            f.write(updated)
        print(f"{doc_path}: table of environment variables updated")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: tools/update_readme_env.py docs/configuration.md build/bin/zpp-env",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
