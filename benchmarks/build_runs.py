"""Builds in child processes (build_child.py, or the `tfds build` CLI): the datasets the
benchmarks read, and the build measurements of overview, resume and build_memory (the TFDS
builder against OpenCV decode + resize + JPEG encode)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

from timing import HERE, ROOT, one_cpu

CHILD = os.path.join(HERE, "build_child.py")


@dataclass(frozen=True)
class Rate:
    """Videos/s end to end, and in steady state (start-up and wrap-up excluded)."""

    total: float
    steady: float

    def __str__(self) -> str:
        """For the progress log."""
        return f"{self.total:.3g} videos/s (steady {self.steady:.3g})"


def child_env() -> dict:
    """Child processes' environment: quiet TensorFlow, the repo importable after PYTHONPATH."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), ROOT) if p)
    return env


def child_command(command: str, *args: str) -> list[str]:
    """The command line of one `build_child.py` measurement."""
    return [sys.executable, CHILD, command, *args]


def run_child(command: str, *args: str) -> dict:
    """Runs one `build_child.py` measurement and returns its JSON result."""
    done = subprocess.run(
        child_command(command, *args), env=child_env(), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"build_child.py {command} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def build_args(manual_dir: str, data_dir: str, config: str | dict) -> list[str]:
    """The options of a build (build_child.py or `tfds build`): a config name or JSON fields."""
    config = config if isinstance(config, str) else json.dumps(config)
    return [f"--manual_dir={manual_dir}", f"--data_dir={data_dir}", f"--config={config}"]


def build_dataset(manual_dir: str, data_dir: str, config: str | dict = "default") -> dict:
    """Builds the videos of `manual_dir` (its train.txt) into `data_dir`, in a child process;
    the build's timings (build_child.py `build`)."""
    return run_child("build", *build_args(manual_dir, data_dir, config))


def bound_one_core(videos: list[str], short_side: int, quality: int) -> Rate:
    """Videos/s of the bound on one pinned core, OpenCV single-threaded."""
    result = run_child(
        "bound",
        f"--cpu={one_cpu()}",
        "--cv_threads=1",
        f"--short_side={short_side}",
        f"--quality={quality}",
        "--videos",
        *videos,
    )
    rate = result["videos"] / (result["end"] - result["start"])
    return Rate(rate, rate)


def bound_parallel(videos: list[str], short_side: int, quality: int, processes: int) -> Rate:
    """Videos/s of the bound in `processes` processes at once, each on its share of the videos."""
    shares = [videos[i::processes] for i in range(processes)]
    children = [
        subprocess.Popen(
            child_command(
                "bound",
                "--cv_threads=1",  # as the build's workers
                f"--short_side={short_side}",
                f"--quality={quality}",
                "--videos",
                *share,
            ),
            env=child_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        for share in shares
    ]
    results = [json.loads(child.communicate()[0].strip().splitlines()[-1]) for child in children]
    wall = max(r["end"] for r in results) - min(r["start"] for r in results)
    return Rate(len(videos) / wall, len(videos) / wall)


def build_rate(manual_dir: str, data_dir: str, config: dict, videos: int, one_core: bool) -> Rate:
    """Videos/s of `download_and_prepare` into a fresh data dir (pinned to one core if asked).

    Steady state: videos done between the first and the last video's result,
    over that time. With w workers, w videos are under way at the first
    result, so about `videos - w` videos of work fill that time.
    """
    shutil.rmtree(data_dir, ignore_errors=True)
    pinning = [f"--cpu={one_cpu()}", "--cv_threads=1"] if one_core else []
    result = run_child("build", *build_args(manual_dir, data_dir, config), *pinning)
    shutil.rmtree(data_dir, ignore_errors=True)
    if result["examples"] != videos:
        raise RuntimeError(f"built {result['examples']} examples of {videos} videos")
    workers = 1 if config["num_workers"] == 1 else (config["num_workers"] or os.cpu_count())
    steady = (videos - workers) / (result["last_done"] - result["first_done"])
    return Rate(videos / result["seconds"], steady)


def pool_start_seconds(workers: int) -> float:
    """Seconds for the builder's worker processes to start and answer a first task."""
    return run_child("pool_start", f"--workers={workers}")["seconds"]


def cli_command(manual_dir: str, data_dir: str, config: str | dict) -> list[str]:
    """The `tfds build` command line (the `tfds` beside this Python) of a build."""
    tfds_cli = os.path.join(os.path.dirname(sys.executable), "tfds")
    command = [tfds_cli, "build", "video_tfrecords", "--imports=video_tfrecords"]
    return command + build_args(manual_dir, data_dir, config)


def cli_build_seconds(manual_dir: str, data_dir: str, config: dict) -> float:
    """Wall-clock seconds of `tfds build` from the command line, start-up and imports included."""
    shutil.rmtree(data_dir, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(
        cli_command(manual_dir, data_dir, config), env=child_env(), capture_output=True, check=True
    )
    seconds = time.perf_counter() - start
    shutil.rmtree(data_dir, ignore_errors=True)
    return seconds
