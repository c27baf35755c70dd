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

# Where each benchmark writes (a temporary folder); storage_quality reads the real clips it
# fetches with pip into benchmarks/out/real, kept between runs.
OUT_FLAG = {"clip_dataset": "--work_dir", "storage_quality": None}
# recipes' peer part needs torchvision in the readers' Python (a side venv, benchmarks/README.md)
EXTRA_ARGS = {"recipes": ["--part", "cost"]}


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
    assert "overview" in done.stderr


@pytest.mark.parametrize("name", list(run.BENCHMARKS))
def test_benchmark_runs_small_and_prints_a_table(name, tmp_path_factory):
    args = ["--quick", *EXTRA_ARGS.get(name, [])]
    flag = OUT_FLAG.get(name, "--out")
    if flag:
        # peers and recipes share their sources and datasets, as they do by default
        folder = "peers" if name in ("peers", "recipes") else name
        base = tmp_path_factory.getbasetemp() / "benchmarks" / folder
        args += [flag, str(base)]
    done = entry_point(name, *args)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "| ---" in done.stdout, done.stdout[-2000:]  # a markdown table came out
