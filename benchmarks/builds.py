"""Builds, each in a process of its own: the datasets the benchmarks read, and the build
measurements of build_speed, resume and build_memory (the TFDS builder against its bound, OpenCV
decode + resize + JPEG encode). The parent side runs the `tfds build` command line, or this file
as the child side, which prints one JSON line:

    python benchmarks/builds.py build --manual_dir M --data_dir D --config default [--cpu N]
    python benchmarks/builds.py bound --short_side 256 --quality 90 [--cpu N] --videos V...
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass

from timing import ROOT, log, one_cpu, pin

CHILD = os.path.abspath(__file__)

# -- the parent side ------------------------------------------------------------------------------


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
    """The command line of one measurement of this file's child side."""
    return [sys.executable, CHILD, command, *args]


def json_child(command: list[str]) -> dict:
    """Runs a child process (quiet TF, the repo importable); the JSON of its last line."""
    done = subprocess.run(command, env=child_env(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[1:3])} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_child(command: str, *args: str) -> dict:
    """Runs one measurement of this file's child side; its JSON result."""
    return json_child(child_command(command, *args))


def build_args(manual_dir: str, data_dir: str, config: str | dict) -> list[str]:
    """The options of a build (child side or `tfds build`): a config name or JSON fields."""
    config = config if isinstance(config, str) else json.dumps(config)
    return [f"--manual_dir={manual_dir}", f"--data_dir={data_dir}", f"--config={config}"]


def build_dataset(
    manual_dir: str, data_dir: str, config: str | dict = "default", overwrite: bool = False
) -> dict:
    """Builds the videos of `manual_dir` (its train.txt) into `data_dir`, in a child process
    (`overwrite`: over the dataset there, as `tfds build --overwrite`); the build's timings."""
    options = build_args(manual_dir, data_dir, config) + (["--overwrite"] if overwrite else [])
    return run_child("build", *options)


def built_once(manual_dir: str, data_dir: str, config: str | dict = "default") -> str:
    """`data_dir`, where the config's build of `manual_dir` is made unless it is there."""
    name = config if isinstance(config, str) else config["name"]
    if not os.path.isdir(os.path.join(data_dir, "video_tfrecords", name)):
        log(f"building {manual_dir} ({name}) in {data_dir}")
        build_dataset(manual_dir, data_dir, config)
    return data_dir


def whole_video(path: str, config):
    """The build's task of one video, a text manifest's line."""
    from video_tfrecords.ingest import encoding, manifest

    entry = manifest.Entry("train.txt", 1, os.path.basename(path), "a")
    return encoding.Task("train", entry, 0, path, config, "")


def encoded(task) -> tuple[list[dict], dict]:
    """The build's whole work on a task's video in this process (`encoding.encode_video`): its
    examples, and what it says of the video (`parts`: each span's numbers)."""
    from video_tfrecords.ingest import encoding

    examples = []
    return examples, encoding.encode_video(task, examples.append)


def bound_args(videos: list[str], short_side: int, quality: int) -> list[str]:
    """The options of a bound measurement, OpenCV single-threaded (as the build's workers)."""
    options = ["--cv_threads=1", f"--short_side={short_side}", f"--quality={quality}"]
    return [*options, "--videos", *videos]


def bound_one_core(videos: list[str], short_side: int, quality: int) -> Rate:
    """Videos/s of the bound on one pinned core."""
    result = run_child("bound", f"--cpu={one_cpu()}", *bound_args(videos, short_side, quality))
    rate = result["videos"] / (result["end"] - result["start"])
    return Rate(rate, rate)


def bound_parallel(videos: list[str], short_side: int, quality: int, processes: int) -> Rate:
    """Videos/s of the bound in `processes` processes at once, each on its share of the videos."""
    children = [subprocess.Popen(child_command("bound", *bound_args(videos[i::processes],
                                 short_side, quality)), env=child_env(), stdout=subprocess.PIPE,
                                 text=True) for i in range(processes)]  # fmt: skip
    results = [json.loads(child.communicate()[0].strip().splitlines()[-1]) for child in children]
    wall = max(r["end"] for r in results) - min(r["start"] for r in results)
    return Rate(len(videos) / wall, len(videos) / wall)


def build_rate(manual_dir: str, data_dir: str, config: dict, videos: int, one_core: bool) -> Rate:
    """Videos/s of `download_and_prepare` into a fresh data dir (pinned to one core if asked).
    Steady state: videos done between the first and the last video's result, over that time. With w
    workers, w videos are under way at the first result, so about `videos - w` videos of work fill
    that time."""
    shutil.rmtree(data_dir, ignore_errors=True)
    pinning = [f"--cpu={one_cpu()}", "--cv_threads=1"] if one_core else []
    result = run_child("build", *build_args(manual_dir, data_dir, config), *pinning)
    shutil.rmtree(data_dir, ignore_errors=True)
    if result["examples"] != videos:
        raise RuntimeError(f"built {result['examples']} examples of {videos} videos")
    workers = 1 if config["num_workers"] == 1 else (config["num_workers"] or os.cpu_count())
    steady = (videos - workers) / (result["last_done"] - result["first_done"])
    return Rate(videos / result["seconds"], steady)


def cli_command(manual_dir: str, data_dir: str, config: str | dict) -> list[str]:
    """The `tfds build` command line (the `tfds` beside this Python) of a build."""
    tfds_cli = os.path.join(os.path.dirname(sys.executable), "tfds")
    command = [tfds_cli, "build", "video_tfrecords", "--imports=video_tfrecords"]
    return command + build_args(manual_dir, data_dir, config)


# -- the child side -------------------------------------------------------------------------------


def build(manual_dir: str, data_dir: str, config: str | dict, overwrite: bool = False) -> dict:
    """Times `builder.download_and_prepare` (imports excluded) of a named or custom config. Also
    stamps each video as the build process takes its result, to tell start-up and wrap-up from
    steady work."""
    import tensorflow_datasets as tfds

    import video_tfrecords
    from video_tfrecords.ingest import encoding

    tfds.disable_progress_bar()
    if isinstance(config, dict):
        config = video_tfrecords.VideoConfig(**config)
    builder = tfds.builder("video_tfrecords", data_dir=data_dir, config=config)
    done, report = [], encoding.report

    def stamped(*args, **kwargs):
        done.append(time.perf_counter())
        return report(*args, **kwargs)

    encoding.report = stamped
    cpu_before = cpu_seconds()
    start = time.perf_counter()
    mode = tfds.GenerateMode.FORCE_REDOWNLOAD if overwrite else None
    mode = mode or tfds.GenerateMode.REUSE_DATASET_IF_EXISTS
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=manual_dir, download_mode=mode))
    seconds = time.perf_counter() - start
    cpu_after = cpu_seconds()
    return {
        "seconds": seconds,
        "examples": sum(split.num_examples for split in builder.info.splits.values()),
        "first_done": done[0] - start if done else None,  # none: up to date, nothing built
        "last_done": done[-1] - start if done else None,
        "build_process_cpu": cpu_after[0] - cpu_before[0],
        "workers_cpu": cpu_after[1] - cpu_before[1],
    }


def cpu_seconds() -> tuple[float, float]:
    """(this process's, its finished children's) user + system CPU seconds."""
    own, children = map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


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


def main() -> None:
    """Parses the command line, runs one command, prints its JSON result."""
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["build", "bound"])
    for name in ("--manual_dir", "--data_dir", "--config"):  # config: a name or JSON fields
        parser.add_argument(name, default="default" if name == "--config" else None)
    for name, default in (("--cpu", None), ("--cv_threads", None), ("--short_side", 256),
                          ("--quality", 90)):  # fmt: skip
        parser.add_argument(name, type=int, default=default)
    parser.add_argument("--videos", nargs="*", default=[])
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args()
    if args.cpu is not None:
        pin({args.cpu})
    if args.cv_threads is not None:
        import cv2

        cv2.setNumThreads(args.cv_threads)
    if args.command == "build":
        config = json.loads(args.config) if args.config.startswith("{") else args.config
        result = build(args.manual_dir, args.data_dir, config, args.overwrite)
    else:
        result = bound(args.videos, args.short_side, args.quality)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
