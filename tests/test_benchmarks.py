"""Every benchmark runs through the entry point, at its smallest size, so that none can rot. No
timing is asserted: the numbers come from full runs on a quiet machine (docs/performance.md)."""

import os
import pathlib
import subprocess
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import run  # benchmarks/run.py, the registry

# Each benchmark writes to a temporary --out, but storage_quality and deinterlace: they read the
# real clips they fetch with pip into benchmarks/out/real, kept between runs.
KEEPS_ITS_OUT = ("storage_quality", "deinterlace")


def entry_point(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """`python benchmarks/run.py ARGS...`, quiet TensorFlow, `tfds` beside this Python."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PATH"] = os.pathsep.join((os.path.dirname(sys.executable), env.get("PATH", "")))
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), *args],
        cwd=BENCHMARKS,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,  # the asserts show stderr
    )


def test_list_names_every_benchmark_with_its_description():
    done = entry_point("--list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(run.BENCHMARKS)
    for line in lines:
        assert len(line.split(maxsplit=1)) == 2, f"no description: {line!r}"
    for name, script in run.BENCHMARKS.items():
        assert (BENCHMARKS / script).is_file(), name


def test_an_unknown_name_is_refused_with_the_known_ones():
    done = entry_point("no_such_benchmark")
    assert done.returncode != 0
    assert "build_speed" in done.stderr


@pytest.mark.parametrize("name", list(run.BENCHMARKS))
def test_benchmark_runs_small_and_prints_a_table(name, tmp_path_factory):
    args = ["--quick"]
    if name not in KEEPS_ITS_OUT:
        # peers and recipes share their sources and datasets, as they do by default
        folder = "peers" if name in ("peers", "recipes") else name
        args += ["--out", str(tmp_path_factory.getbasetemp() / "benchmarks" / folder)]
    done = entry_point(name, *args)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "| ---" in done.stdout, done.stdout[-2000:]  # a markdown table came out
