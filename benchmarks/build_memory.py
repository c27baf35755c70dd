"""Peak memory of `tfds build`, all its processes together, on one long video.

A 20-minute video (--quick: 1 minute), kept in benchmarks/out/memory. Samples the resident
memory of the build process and all its workers every 50 ms; checks every frame was written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time

import psutil

import builds
import timing
import video_sets

TARGET_BYTES = 2.5 * 2**30


def tree_rss(process: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (0 for those already gone)."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += member.memory_info().rss
    return total


def stored(data_dir: str) -> tuple[int, int, int]:
    """(examples, frames, JPEG bytes) of the built dataset, read back with its frames encoded."""
    import tensorflow_datasets as tfds

    from video_tfrecords import EncodedFrames

    dataset = tfds.load("video_tfrecords/memory", split="train", data_dir=data_dir,
                        decoders={"video": EncodedFrames()})  # fmt: skip
    examples = frames = size = 0
    for example in tfds.as_numpy(dataset):
        examples += 1
        frames += len(example["video"])
        size += sum(map(len, example["video"]))
    return examples, frames, size


def main() -> None:
    """Makes the video, builds it while sampling memory, prints the table."""
    args = timing.arguments(__doc__, "memory").parse_args()
    minutes = 1.0 if args.quick else 20.0
    height, width = 312, 416  # stored as is (short side 312): about 38 KB a q90 frame, 1.1 GB
    out = os.path.abspath(args.out)
    frames = round(minutes * 60 * 25)
    folder = os.path.join(out, f"{minutes:g}min_{width}x{height}")
    (video,) = video_sets.synthetic_videos(folder, 1, frames, height, width)
    manual_dir = video_sets.video_set(os.path.join(out, "manual"), [video]).manual_dir
    data_dir = os.path.join(out, "data")
    shutil.rmtree(data_dir, ignore_errors=True)
    config = {"name": "memory", "short_side": None}
    command = builds.cli_command(manual_dir, data_dir, config)
    timing.log(" ".join(command))
    start = time.perf_counter()
    log_path = os.path.join(out, "build.log")  # a file: a full pipe would stall the build
    with open(log_path, "wb") as log:
        env, quiet = builds.child_env(), subprocess.DEVNULL
        process = psutil.Popen(command, env=env, stdout=quiet, stderr=log)
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
    video = f"one {minutes:g}-minute video, {width}x{height}, 25 fps"
    written = (f"{frames} frames; stored {kept} frames in {examples} examples, "
               f"{jpeg / gib:.2f} GiB of JPEG; `tfds build` took {seconds:.0f} s")  # fmt: skip
    peak_rss = "peak RSS, build process + workers (sampled every 50 ms)"
    under = "PASS" if peak < TARGET_BYTES else "FAIL"
    rows = [
        ["Build memory", video, written, "every frame", "PASS" if kept == frames else "FAIL"],
        ["Build memory", peak_rss, f"{peak / gib:.2f} GiB", "< 2.5 GiB", under],
    ]
    print("\n".join(timing.table(["Benchmark", "Variant", "Result", "Target", "Status"], rows)))


if __name__ == "__main__":
    main()
