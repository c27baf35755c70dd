"""Peak memory of `tfds build`, all its processes together, on one long video.

    python benchmarks/run.py build_memory              # a 20-minute video (~1.1 GB of JPEG frames)
    python benchmarks/run.py build_memory --quick      # a 1-minute video (CI: no assertion on memory)

Makes the video once (kept in benchmarks/out/memory), runs the `tfds build`
command line on it with the default segments, samples the resident memory of
the build process and of every worker it starts every 50 ms, and reports the
largest sum, against the JPEG bytes the build stores; it also checks that
every frame was written.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import time

import psutil

import build_runs
import timing
import video_sets

TARGET_BYTES = 2.5 * 2**30


def tree_rss(process: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (0 for those already gone)."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            pass
    return total


def stored(data_dir: str) -> tuple[int, int, int]:
    """(examples, frames, JPEG bytes) of the built dataset, read back with its frames encoded."""
    import tensorflow_datasets as tfds

    from video_tfrecords import EncodedFrames

    dataset = tfds.load(
        "video_tfrecords/memory",
        split="train",
        data_dir=data_dir,
        decoders={"video": EncodedFrames()},
    )
    examples = frames = size = 0
    for example in tfds.as_numpy(dataset):
        examples += 1
        frames += len(example["video"])
        size += sum(map(len, example["video"]))
    return examples, frames, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "out", "memory"))
    args = parser.parse_args()
    minutes = 1.0 if args.quick else args.minutes
    height, width = 312, 416  # stored as is (short side 312): about 38 KB a q90 frame, 1.1 GB
    out = os.path.abspath(args.out)
    frames = round(minutes * 60 * 25)
    (video,) = video_sets.synthetic_videos(
        os.path.join(out, f"{minutes:g}min_{width}x{height}"), 1, frames, height, width
    )
    manual_dir = video_sets.video_set(os.path.join(out, "manual"), [video]).manual_dir
    data_dir = os.path.join(out, "data")
    shutil.rmtree(data_dir, ignore_errors=True)
    config = {"name": "memory", "short_side": None}
    command = build_runs.cli_command(manual_dir, data_dir, config)
    timing.log(" ".join(command))
    start = time.perf_counter()
    log_path = os.path.join(out, "build.log")  # a file: a full pipe would stall the build
    with open(log_path, "wb") as log:
        process = psutil.Popen(
            command, env=build_runs.child_env(), stdout=subprocess.DEVNULL, stderr=log
        )
        peak = 0
        while process.poll() is None:
            peak = max(peak, tree_rss(process))
            time.sleep(0.05)
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        with open(log_path, "rb") as log:
            raise RuntimeError(log.read().decode()[-3000:])
    examples, kept, jpeg = stored(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)
    gib = 2**30
    print("| Benchmark | Variant | Result | Target | Status |")
    print("| --- | --- | --- | --- | --- |")
    print(
        f"| Build memory | one {minutes:g}-minute video, {width}x{height}, 25 fps | "
        f"{frames} frames; stored {kept} frames in {examples} examples, "
        f"{jpeg / gib:.2f} GiB of JPEG; `tfds build` took {seconds:.0f} s | every frame | "
        f"{'PASS' if kept == frames else 'FAIL'} |"
    )
    print(
        f"| Build memory | peak RSS, build process + workers (sampled every 50 ms) | "
        f"{peak / gib:.2f} GiB | < 2.5 GiB | {'PASS' if peak < TARGET_BYTES else 'FAIL'} |"
    )


if __name__ == "__main__":
    main()
