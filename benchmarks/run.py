"""The benchmarks' one entry point: lists them, and runs one by name.

    python benchmarks/run.py --list              # every benchmark, with what it measures
    python benchmarks/run.py NAME [ARGS...]      # e.g. peers --quick; NAME --help for its ARGS

Each benchmark is a script of this folder, run as it is (markdown on stdout, progress on
stderr); its description is its docstring's first line. Results: docs/performance.md.
"""

from __future__ import annotations

import ast
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = {  # name: script
    "peers": "peers.py",
    "clip_dataset": "clip_dataset_speed.py",
    "checkpoint": "checkpoint_cost.py",
    "recipes": "recipe_speed.py",
    "build_speed": "build_speed.py",
    "build_memory": "build_memory.py",
    "resume": "resume.py",
    "storage_quality": "storage_quality.py",
    "deinterlace": "deinterlace_cost.py",
    "spark": "spark_scaling.py",
    "audio": "audio_cost.py",
    "manifest_scan": "manifest_scan.py",
    "imports": "import_cost.py",
    "span": "span_cost.py",
    "rebuild": "rebuild.py",
    "checks": "check_cost.py",
}


def listing() -> str:
    """One line per benchmark: its name and what it measures (its script's docstring's first
    line, read without importing the script)."""
    width, lines = max(map(len, BENCHMARKS)), []
    for name, script in BENCHMARKS.items():
        with open(os.path.join(HERE, script)) as f:
            doc = ast.get_docstring(ast.parse(f.read())) or ""
        lines.append(f"{name:<{width}}  {doc.splitlines()[0] if doc else ''}")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """Lists the benchmarks, or replaces this process with the one asked for."""
    if argv[:1] == ["--list"]:
        print(listing())
    elif not argv or argv[0] in ("-h", "--help"):
        print(f"{__doc__}\n{listing()}")
    elif argv[0] not in BENCHMARKS:
        sys.exit(f"unknown benchmark {argv[0]!r}; one of: {', '.join(BENCHMARKS)}")
    else:
        script = os.path.join(HERE, BENCHMARKS[argv[0]])
        os.execv(sys.executable, [sys.executable, script, *argv[1:]])


if __name__ == "__main__":
    main(sys.argv[1:])
