"""Resuming a killed build: the rerun's time against a full build of the same videos.

Each round builds the set in full (imports excluded), then again into a fresh data dir,
SIGKILLs that build once half the videos are in its cache and times the rerun.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import time

import builds
import timing
import video_sets

CONFIG = {"name": "resume", "num_workers": 0}


def cache_entries(data_dir: str) -> int:
    """Videos the build in `data_dir` has finished encoding into its cache."""
    root = pathlib.Path(data_dir) / "downloads" / "video_tfrecords_cache"
    return sum(1 for _ in root.rglob("done.json"))


def killed_at_half(manual_dir: str, data_dir: str, videos: int) -> int:
    """Starts a build, SIGKILLs it once half the videos are encoded; returns how many were."""
    options = builds.build_args(manual_dir, data_dir, CONFIG)
    command = builds.child_command("build", *options)
    process = subprocess.Popen(command, env=builds.child_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    while cache_entries(data_dir) < videos // 2:
        if process.poll() is not None:
            raise RuntimeError("the build ended before half its videos were encoded")
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return cache_entries(data_dir)


def main() -> None:
    """Builds, kills and resumes round after round; prints the table."""
    parser = timing.arguments(__doc__, "resume")
    parser.add_argument("--videos", type=int, default=24, help="videos in the set (480x360)")
    args = parser.parse_args()
    count, height, width, rounds = (6, 96, 128, 1) if args.quick else (args.videos, 360, 480, 3)
    out = os.path.abspath(args.out)
    frames = 250 if not args.quick else 50
    videos = video_sets.synthetic_videos(os.path.join(out, f"videos_{height}p"), count, frames,
                                         height, width)  # fmt: skip
    manual_dir = video_sets.video_set(os.path.join(out, "manual"), videos).manual_dir
    full, resumed, done = [], [], []
    for number in range(rounds):
        timing.log(f"round {number + 1}/{rounds}")
        data_dir = os.path.join(out, "data")
        shutil.rmtree(data_dir, ignore_errors=True)
        full.append(builds.build_dataset(manual_dir, data_dir, CONFIG))
        shutil.rmtree(data_dir, ignore_errors=True)
        done.append(killed_at_half(manual_dir, data_dir, count))
        resumed.append(builds.build_dataset(manual_dir, data_dir, CONFIG))
        shutil.rmtree(data_dir, ignore_errors=True)
    rows = []
    for name, results in (
        (f"full build of {count} videos ({width}x{height}, num_workers=0)", full),
        (f"rerun after a SIGKILL with {min(done)}-{max(done)} of {count} videos encoded", resumed),
    ):
        keys = ("seconds", "build_process_cpu", "workers_cpu")
        seconds, build_cpu, workers_cpu = (timing.median([r[k] for r in results]) for k in keys)
        cpu = f"CPU s: build process {build_cpu:.2f}, workers {workers_cpu:.2f}"
        rows.append(["Resume", name, f"{seconds:.2f} s ({cpu})", "", ""])
    rerun = timing.ratio([r["seconds"] for r in resumed], [r["seconds"] for r in full])
    rows.append(["Resume", "", "", f"rerun/full = {rerun}", "<= 0.6"])
    header = ["Benchmark", "Variant", "Result", "Ratio (median, min-max over rounds)", "Target"]
    print("\n".join(timing.table(header, rows)))


if __name__ == "__main__":
    main()
