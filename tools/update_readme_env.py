#!/usr/bin/env python3
"""Replaces the README's table of environment variables with `zpp-env --markdown`'s."""
import subprocess
import sys

BEGIN = "<!-- env-table:begin (make readme-env) -->\n"
END = "<!-- env-table:end -->"


def main(readme_path: str, zpp_env: str) -> int:
    table = subprocess.run([zpp_env, "--markdown"], check=True, capture_output=True, text=True).stdout
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read()
    begin, end = readme.find(BEGIN), readme.find(END)
    if begin < 0 or end < begin:
        print(f"{readme_path}: markers {BEGIN.strip()} ... {END} not found", file=sys.stderr)
        return 1
    updated = readme[: begin + len(BEGIN)] + table + readme[end:]
    if updated != readme:
        with open(readme_path, "w", encoding="utf-8") as f:
            f.write(updated)
        print(f"{readme_path}: table of environment variables updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
