"""Build measurements that need a process of their own (overview, resume); each prints one
JSON line.

    python benchmarks/build_child.py build --manual_dir M --data_dir D --config default [--cpu N]
    python benchmarks/build_child.py bound --short_side 256 --quality 90 [--cpu N] --videos VIDEO...
    python benchmarks/build_child.py pool_start --workers 2

Heavy imports happen inside the commands, so that a command pays only for what it uses.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time


def pin(cpu: int | None, cv_threads: int | None) -> None:
    """Pins this process (and the threads it will start) to one CPU; caps OpenCV's threads."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    if cv_threads is not None:
        import cv2

        cv2.setNumThreads(cv_threads)


def build(manual_dir: str, data_dir: str, config: str | dict) -> dict:
    """Times `builder.download_and_prepare` (imports excluded) of a named or custom config.

    Also stamps each video as the build process takes its result, to tell
    start-up and wrap-up from steady work.
    """
    import tensorflow_datasets as tfds

    import video_tfrecords
    from video_tfrecords import examples

    tfds.disable_progress_bar()
    if isinstance(config, dict):
        config = video_tfrecords.VideoConfig(**config)
    builder = tfds.builder("video_tfrecords", data_dir=data_dir, config=config)
    done = []
    examples.report = stamped(examples.report, done)
    cpu_before = cpu_seconds()
    start = time.perf_counter()
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=manual_dir)
    )
    seconds = time.perf_counter() - start
    cpu_after = cpu_seconds()
    examples = sum(split.num_examples for split in builder.info.splits.values())
    return {
        "seconds": seconds,
        "examples": examples,
        "first_done": done[0] - start,
        "last_done": done[-1] - start,
        "build_process_cpu": cpu_after[0] - cpu_before[0],
        "workers_cpu": cpu_after[1] - cpu_before[1],
    }


def cpu_seconds() -> tuple[float, float]:
    """(this process's, its finished children's) user + system CPU seconds."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def stamped(function, stamps: list):
    """`function`, appending time.perf_counter() to `stamps` at each call."""

    def wrapper(*args, **kwargs):
        """Stamps, then calls."""
        stamps.append(time.perf_counter())
        return function(*args, **kwargs)

    return wrapper


def bound(videos: list[str], short_side: int, quality: int) -> dict:
    """OpenCV decode + resize + JPEG encode of every frame, nothing else; wall-clock stamps."""
    import cv2

    start, frames = time.time(), 0
    for path in videos:
        capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            frame = shrink(frame, short_side)
            cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, quality])
            frames += 1
        capture.release()
    return {"start": start, "end": time.time(), "frames": frames, "videos": len(videos)}


def shrink(frame, short_side: int | None):
    """`frame` with its short side brought down to `short_side` (the bound's resize)."""
    if short_side is None:
        return frame
    size = stored_size(frame.shape[0], frame.shape[1], short_side)
    return frame if size == frame.shape[:2] else resize(frame, size)


def resize(frame, size: tuple[int, int], dst=None):
    """`frame` brought to (h, w) = `size` with the filter the builder's OpenCV path picked: area
    averaging for a 2x or larger reduction, else bilinear."""
    import cv2

    strong = size[0] * 2 <= frame.shape[0] or size[1] * 2 <= frame.shape[1]
    interpolation = cv2.INTER_AREA if strong else cv2.INTER_LINEAR
    return cv2.resize(frame, tuple(size[::-1]), dst=dst, interpolation=interpolation)


def stored_size(height: int, width: int, short_side: int) -> tuple[int, int]:
    """(height, width) with the short side brought down to `short_side` (never up)."""
    short = min(height, width)
    if short <= short_side:
        return height, width
    return round(height * short_side / short), round(width * short_side / short)


def pool_start(workers: int) -> dict:
    """Seconds to start the builder's worker processes and get a first result back from each."""
    from video_tfrecords import examples, parallel

    start = time.perf_counter()
    results = parallel.ordered_map(
        examples.encode,
        [_probe_task() for _ in range(workers)],
        num_workers=workers,
        on_death=examples.on_worker_death,
        initializer=examples.init_worker,
    )
    list(results)
    return {"seconds": time.perf_counter() - start}


def _probe_task():
    """A task for a file that does not exist: the worker answers at once with a skip record."""
    import video_tfrecords
    from video_tfrecords import examples, manifest

    entry = manifest.Entry(manifest="probe", line=1, path="missing.mp4", label="x")
    config = video_tfrecords.VideoConfig(name="probe")
    return examples.Task("train", entry, 0, "/nonexistent/missing.mp4", config, "/nonexistent")


def main() -> None:
    """Parses the command line, runs one command, prints its JSON result."""
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["build", "bound", "pool_start"])
    parser.add_argument("--manual_dir")
    parser.add_argument("--data_dir")
    parser.add_argument("--config", default="default", help="a config name or JSON fields")
    parser.add_argument("--cpu", type=int)
    parser.add_argument("--cv_threads", type=int)
    parser.add_argument("--short_side", type=int, default=256)
    parser.add_argument("--quality", type=int, default=90)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--videos", nargs="*", default=[])
    args = parser.parse_args()
    pin(args.cpu, args.cv_threads)
    if args.command == "build":
        config = json.loads(args.config) if args.config.startswith("{") else args.config
        result = build(args.manual_dir, args.data_dir, config)
    elif args.command == "bound":
        result = bound(args.videos, args.short_side, args.quality)
    else:
        result = pool_start(args.workers)
    print(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
