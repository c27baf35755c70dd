"""Every benchmark runs, at its smallest size, so that none can rot. No timing is asserted:
the numbers come from full runs on a quiet machine (docs/performance.md)."""

import os
import pathlib
import subprocess
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"

SMALL_RUNS = {
    "clip_cost": ["--quick"],
    "decode_backends": ["--quick"],
    "read_resize": ["--quick", "--synthetic"],
    "clip_source_speed": ["--quick", "--clips", "16"],
    "loader_allocator": ["--quick", "--clips", "16"],
    "storage_quality": ["--quick"],
    "peers": ["--quick"],
    "resume": ["--quick"],
    "build_memory": ["--quick"],
    "run": ["--quick"],
}


@pytest.mark.parametrize("name", sorted(SMALL_RUNS))
def test_benchmark_runs_and_prints_its_table(name, tmp_path):
    args = list(SMALL_RUNS[name])
    if name in ("decode_backends", "peers", "resume", "build_memory", "run"):
        args += ["--out", str(tmp_path / "out")]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), *args],
        cwd=BENCHMARKS,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,  # the assert below shows stderr
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "| ---" in done.stdout, done.stdout[-2000:]  # a markdown table came out
