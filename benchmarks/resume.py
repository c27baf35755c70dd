"""Resuming a killed build: the rerun's time against a full build of the same videos.

    python benchmarks/run.py resume            # 24 videos of 480x360, 3 rounds (~3 min)
    python benchmarks/run.py resume --videos 96   # a larger build: fixed costs weigh less
    python benchmarks/run.py resume --quick    # 6 small videos, 1 round (CI: no timing assertion)

Each round builds the set in full (`download_and_prepare` in a child process,
imports excluded), then builds it again into a fresh data dir, SIGKILLs that
build once half the videos are in its cache, and times the rerun, which
finishes the dataset. Rounds alternate, and the ratio rerun/full is the
median of the per-round ratios (with min-max).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import signal
import subprocess
import time

import build_runs
import timing
import video_sets

CONFIG = {"name": "resume", "num_workers": 0}


def cache_entries(data_dir: str) -> int:
    """Videos the build in `data_dir` has finished encoding into its cache."""
    root = pathlib.Path(data_dir) / "downloads" / "video_tfrecords_cache"
    return sum(1 for _ in root.rglob("done.json"))


def killed_at_half(manual_dir: str, data_dir: str, videos: int) -> int:
    """Starts a build, SIGKILLs it once half the videos are encoded; returns how many were."""
    command = build_runs.child_command(
        "build",
        f"--manual_dir={manual_dir}",
        f"--data_dir={data_dir}",
        f"--config={json.dumps(CONFIG)}",
    )
    process = subprocess.Popen(
        command, env=build_runs.child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    while cache_entries(data_dir) < videos // 2:
        if process.poll() is not None:
            raise RuntimeError("the build ended before half its videos were encoded")
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return cache_entries(data_dir)


def build_result(manual_dir: str, data_dir: str) -> dict:
    """A timed build: seconds, and CPU seconds of the build process and of its workers."""
    return build_runs.run_child(
        "build",
        f"--manual_dir={manual_dir}",
        f"--data_dir={data_dir}",
        f"--config={json.dumps(CONFIG)}",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--videos", type=int, default=24, help="videos in the set (480x360)")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "out", "resume"))
    args = parser.parse_args()
    count, height, width, rounds = (6, 96, 128, 1) if args.quick else (args.videos, 360, 480, 3)
    out = os.path.abspath(args.out)
    videos = video_sets.synthetic_videos(
        os.path.join(out, f"videos_{height}p"), count, 250 if not args.quick else 50, height, width
    )
    manual_dir = video_sets.video_set(os.path.join(out, "manual"), videos).manual_dir
    full, resumed, done = [], [], []
    for number in range(rounds):
        timing.log(f"round {number + 1}/{rounds}")
        data_dir = os.path.join(out, "data")
        shutil.rmtree(data_dir, ignore_errors=True)
        full.append(build_result(manual_dir, data_dir))
        shutil.rmtree(data_dir, ignore_errors=True)
        done.append(killed_at_half(manual_dir, data_dir, count))
        resumed.append(build_result(manual_dir, data_dir))
        shutil.rmtree(data_dir, ignore_errors=True)
    print("| Benchmark | Variant | Result | Ratio (median, min-max over rounds) | Target |")
    print("| --- | --- | --- | --- | --- |")
    for name, results in (
        (f"full build of {count} videos ({width}x{height}, num_workers=0)", full),
        (f"rerun after a SIGKILL with {min(done)}-{max(done)} of {count} videos encoded", resumed),
    ):
        seconds, build_cpu, workers_cpu = (
            timing.median([r[key] for r in results])
            for key in ("seconds", "build_process_cpu", "workers_cpu")
        )
        print(
            f"| Resume | {name} | {seconds:.2f} s (CPU s: build process {build_cpu:.2f}, "
            f"workers {workers_cpu:.2f}) |  |  |"
        )
    seconds = lambda results: [r["seconds"] for r in results]
    print(
        f"| Resume |  |  | rerun/full = {timing.ratio(seconds(resumed), seconds(full))} | <= 0.6 |"
    )


if __name__ == "__main__":
    main()
