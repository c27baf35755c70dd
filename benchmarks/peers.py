"""The peer table: this project's clip readers against the mp4 readers people use instead.

Every reader (peer_readers.py) gets the frames the project plans; its first pass must match
FFmpeg's decode of the source (PSNR >= 30 dB, no better match among its +-2 neighbours).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import partial

import numpy as np

import builds
import peer_sources
import timing
from timing import HERE, ROOT, arguments, interleave, log, median, ratio, rounds_note, table

SEED = 20261123
OURS = ("tf", "tf_free")
MP4_READERS = ("pyav", "opencv", "decord", "torchcodec")
SHORT = {"tf": "ours TF", "tf_free": "ours TF-free", "pyav": "PyAV", "opencv": "OpenCV",
         "decord": "decord", "torchcodec": "TorchCodec"}  # fmt: skip
RECIPES = {"A": "64 consecutive frames", "B": "16 frames, stride 2",
           "C": "8 frames spread evenly (TSN)"}  # fmt: skip
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
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
            stderr=open(log_path, "w"),  # noqa: SIM115 - kept open for the worker's life
        )  # fmt: skip
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

    def per_clip(self, job: dict) -> tuple[float, float]:
        """One pass over the job's clips: CPU seconds per clip of decoding, and of resizing."""
        answer = self.request(op="run", job=job)
        return answer["cpu"] / answer["clips"], answer["resize_cpu"] / answer["clips"]

    def close(self) -> None:
        """Ends the worker (closing its stdin ends its loop)."""
        self.process.stdin.close()
        self.process.wait(timeout=60)


def add_torchcodec_python(parser) -> None:
    """--torchcodec_python: the Python that runs TorchCodec (and torchvision)."""
    parser.add_argument("--torchcodec_python", help="a Python whose TorchCodec works (default: "
                        "$TORCHCODEC_PYTHON, else this one)",
                        default=os.environ.get("TORCHCODEC_PYTHON") or sys.executable)  # fmt: skip


@contextlib.contextmanager
def started_workers(pythons: dict, cpu: int, logs: str):
    """A worker per reader (reader -> its Python), all on `cpu`, for the `with` block: those
    that started, and the reasons of those that did not."""
    os.makedirs(logs, exist_ok=True)
    workers, unavailable = {}, {}
    for reader, python in pythons.items():
        worker = Worker(reader, python, cpu, os.path.join(logs, f"{reader}.log"))
        if worker.error:
            unavailable[reader] = worker.error
            worker.close()
            log(f"{reader}: unavailable: {worker.error}")
        else:
            workers[reader] = worker
    try:
        yield workers, unavailable
    finally:
        for worker in workers.values():
            worker.close()


def build_datasets(sets, out: str) -> dict:
    """A data dir per source set (built with the `default` config unless already built)."""
    data_dirs = {s.name: os.path.join(out, "data", os.path.relpath(s.manual_dir, out))
                 for s in sets}  # fmt: skip
    for s in sets:
        if not built_version(data_dirs[s.name]):
            log(f"building {s.name}")
            shutil.rmtree(data_dirs[s.name], ignore_errors=True)
            builds.build_dataset(s.manual_dir, data_dirs[s.name])
    return data_dirs


def built_version(data_dir: str) -> str | None:
    """The version folder of the built `default` config in `data_dir`, if any."""
    found = glob.glob(os.path.join(data_dir, "video_tfrecords/default/*/dataset_info.json"))
    return os.path.basename(os.path.dirname(max(found))) if found else None


def plan_dataset(sources, data_dir: str, spec_of) -> Dataset:
    """Plans every recipe's clip of every stored video, as the readers' epoch 0 (one read of each
    record). `spec_of`: recipe -> function of a video's length giving its ClipDecoder arguments."""
    import cv2

    import video_tfrecords
    from video_tfrecords.clips.keys import epoch_seed
    from video_tfrecords.records.example_parser import parse_example

    version = built_version(data_dir)
    source = video_tfrecords.ClipSource("train", data_dir=data_dir, config="default",
                                        version=version, num_frames=1)  # fmt: skip
    names = [os.path.basename(p) for p in sources.paths]
    clips = {recipe: [] for recipe in spec_of}
    specs = {}
    for i in range(len(source)):
        example = parse_example(source.reader.read(i))
        frames = [bytes(f) for f in example["video"]]
        video = names.index(bytes(example["filename"][0]).decode())
        for recipe, spec in spec_of.items():
            specs[recipe] = spec(len(frames))
            seed = specs[recipe].get("seed")
            first_epoch = None if seed is None else epoch_seed(seed, 0)
            plan = video_tfrecords.ClipDecoder(**specs[recipe]).plan_np(frames, first_epoch)
            clips[recipe].append((video, [int(j) for j in plan["indices"].ravel()]))
    first = cv2.imdecode(np.frombuffer(frames[0], np.uint8), cv2.IMREAD_COLOR)
    return Dataset(sources, data_dir, version, tuple(first.shape[:2]), specs, clips)


def job_for(dataset: Dataset, recipe: str, reader: str, resize: bool, **extra) -> dict:
    """What a worker needs to read one recipe's clips of one dataset."""
    key = f"{dataset.sources.name}/{recipe}"
    if reader in OURS:
        return {"key": key, "data_dir": dataset.data_dir, "config": "default",
                "version": dataset.version, "spec": dataset.specs[recipe],
                "count": len(dataset.clips[recipe])}  # fmt: skip
    return {"key": key, "paths": list(dataset.sources.paths), "clips": dataset.clips[recipe],
            "resize": list(dataset.stored_size) if resize else None, **extra}  # fmt: skip


def psnr_to(frame: np.ndarray, reference: np.ndarray) -> float:
    """PSNR of a decoded frame to a reference frame, area-resized to the frame's size first."""
    import cv2

    if reference.shape != frame.shape:
        size = (frame.shape[1], frame.shape[0])
        reference = cv2.resize(reference, size, interpolation=cv2.INTER_AREA)
    return cv2.PSNR(np.ascontiguousarray(frame), reference)


def references(dataset: Dataset, recipe: str) -> dict[str, dict[int, np.ndarray]]:
    """Per video file name, FFmpeg's own decode (PyAV, every frame in order) of its clip's
    frames and their +-2 neighbours, RGB."""
    import av

    found = {}
    for video, indices in dataset.clips[recipe]:
        path = dataset.sources.paths[video]
        wanted = {j for i in indices for j in range(i - 2, i + 3)}
        frames = found[os.path.basename(path)] = {}
        with av.open(path) as container:
            for index, frame in enumerate(container.decode(video=0)):
                if index in wanted:
                    frames[index] = frame.to_ndarray(format="rgb24")
    return found


def check_clips(dataset: Dataset, recipe: str, folder: str, reference: dict) -> float:
    """Min PSNR of saved clips to their planned frames; raises if a frame is not the planned one:
    under MIN_PSNR, or a neighbour (+-2 frames) matches it better by more than 0.5 dB."""
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
                raise RuntimeError(f"{folder}: frame {index} of {name} has PSNR {own:.1f} dB to "
                                   f"the planned frame, {best:.1f} dB to a neighbour")  # fmt: skip
            worst = min(worst, own)
    return worst


@dataclass
class Measured:
    """Per-round CPU seconds per clip of every reader, for one dataset and recipe."""

    decode: dict  # reader -> [seconds per clip, per round]
    resize: dict  # reader -> [seconds per clip, per round] (720p mp4 readers)
    startup: dict  # reader -> CPU seconds of open (per video for mp4 readers)
    psnr: dict  # reader -> min PSNR of its checked clips


def measure(dataset: Dataset, recipe: str, workers: dict, rounds: int, tmp: str | None,
            **extra) -> Measured:
    """Opens, checks (given a `tmp` folder), then times `rounds` interleaved passes of every
    reader; `extra`: what the mp4 readers' jobs add (a torchvision `transform`)."""
    result = Measured({}, {}, {}, {})
    reference = references(dataset, recipe) if tmp else None
    jobs = {}
    for reader, worker in workers.items():
        jobs[reader] = job_for(dataset, recipe, reader, dataset.large, **extra)
        opened = worker.request(op="open", job=jobs[reader])["cpu"]
        result.startup[reader] = opened / (1 if reader in OURS else len(dataset.sources.paths))
        if tmp is None:
            worker.request(op="run", job=jobs[reader])  # the warm-up pass
            continue
        folder = os.path.join(tmp, reader)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        unresized = job_for(dataset, recipe, reader, resize=False, **extra)
        worker.request(op="run", job=unresized, save=folder)  # also the warm-up pass
        result.psnr[reader] = check_clips(dataset, recipe, folder, reference)
        shutil.rmtree(folder)
    log(f"{dataset.sources.name}, recipe {recipe}")
    measures = {reader: partial(workers[reader].per_clip, job) for reader, job in jobs.items()}
    for reader, passes in interleave(measures, rounds).items():
        result.decode[reader] = [decode for decode, _ in passes]
        result.resize[reader] = [resize for _, resize in passes]
    return result  # fmt: skip


def against_best(times: dict) -> dict:
    """Each of ours measured -> (round by round) the fastest mp4 reader's time / its own; `times`:
    reader -> per-round seconds per clip."""
    best = [min(values) for values in zip(*(times[r] for r in MP4_READERS if r in times))]
    return {r: ratio(best, times[r]) for r in OURS if r in times and best}


def cell(seconds: list[float]) -> str:
    """`ms per clip (clips/s per core)` from per-round seconds per clip."""
    ms = median(seconds) * 1e3
    return f"{ms:.1f} ({1e3 / ms:.0f}/s)"


def table_rows(dataset: Dataset, results: dict, readers: list[str]) -> list[list[str]]:
    """Rows of one source set, one per recipe; from larger sources than stored, the mp4 readers'
    frames are brought to the stored size, their resize counted."""
    rows, source = [], dataset.sources.name
    if dataset.large:
        source += f", mp4 resized to {dataset.stored_size[1]}x{dataset.stored_size[0]}"
    for recipe, result in results.items():
        times = dict(result.decode)
        if dataset.large:
            times.update({r: [d + z for d, z in zip(times[r], result.resize[r])]
                          for r in MP4_READERS if r in times})  # fmt: skip
        cells = [cell(times[r]) if r in times else "n/a" for r in readers]
        ours, verdict = against_best(times), ""
        target = TARGETS.get(("large" if dataset.large else "small", recipe))
        if target and ours:
            reached = max(x.median for x in ours.values())
            verdict = f">= {target}: {'yes' if reached >= target else 'no'}"
        ratios = [str(ours.get(r, "n/a")) for r in OURS]
        rows.append([source, f"{recipe}: {RECIPES[recipe]}", *cells, *ratios, verdict])
    return rows


def startup_row(dataset: Dataset, results: dict, readers: list[str]) -> list[str]:
    """Start-up costs of one source set: per video for mp4 readers, per pipeline for ours
    (median over recipes)."""
    first = next(iter(results.values()))
    cells = [
        "n/a" if reader not in first.startup
        else f"{median([r.startup[reader] * 1e3 for r in results.values()]):.0f}" if reader in OURS
        else f"{first.startup[reader] * 1e3:.1f}" for reader in readers
    ]  # fmt: skip
    return [dataset.sources.name, *cells]


def report(datasets, all_results, readers, unavailable, rounds: int) -> list[str]:
    """The markdown tables and notes."""
    names = [SHORT[r] for r in readers]
    ratios = ["best mp4 / ours TF", "best mp4 / ours TF-free", "target (faster of ours)"]
    psnr = [f"{SHORT[r]} {min(m.psnr[r] for res in all_results.values() for m in res.values()):.1f}"
            for r in readers if r not in unavailable]  # fmt: skip
    rows = [row for d in datasets for row in table_rows(d, all_results[d.sources.name], readers)]
    startup = [startup_row(d, all_results[d.sources.name], readers) for d in datasets]
    return [
        f"CPU ms per clip, one core (clips/s per core); {rounds_note(rounds)} of the best mp4 "
        "reader's time to ours.", "", *table(["source", "recipe", *names, *ratios], rows), "",
        "Start-up, CPU ms: mp4 readers, opening and indexing one video; ours, creating the "
        "pipeline and reading its first clip (TF: tracing the decoder), median over recipes.",
        "", *table(["source", *names], startup), "",
        "Same frames: every reader's clips matched FFmpeg's own decode of the planned frames "
        "(min PSNR over all clips, dB; mp4 readers at source size, ours against the source "
        f"frame area-resized to the stored size): {', '.join(psnr)}.",
        *(f"- {SHORT[reader]}: not measured: {why}" for reader, why in unavailable.items()),
    ]


def main() -> None:
    """Makes the sources and datasets, plans the clips, measures every reader, prints tables."""
    parser = arguments(__doc__, "peers", rounds=5, quick_folder=True)
    parser.add_argument("--real", action="store_true", help="real footage instead of generated")
    parser.add_argument("--videos", type=int, help="videos per source set (default 6)")
    parser.add_argument("--readers", nargs="*", default=list(OURS + MP4_READERS))
    add_torchcodec_python(parser)
    args = parser.parse_args()
    videos = args.videos or (2 if args.quick else 6)
    full = [(h, w, g) for h, w in ((256, 340), (720, 1280)) for g in (32, 250)]
    quick = [(128, 170, 80), (288, 512, 16)]  # one GOP per size: every path in < 1 min
    layouts, frames = (quick, 80) if args.quick else (full, 250)
    sets = peer_sources.make_sets(args.out, layouts, videos, frames, args.real)
    data_dirs = build_datasets(sets, args.out)
    spec_of = {recipe: partial(recipe_spec, recipe) for recipe in RECIPES}
    datasets = [plan_dataset(s, data_dirs[s.name], spec_of) for s in sets]
    pythons = {reader: args.torchcodec_python if reader == "torchcodec" else sys.executable
               for reader in args.readers}  # fmt: skip
    logs, check = os.path.join(args.out, "logs"), os.path.join(args.out, "check")
    with started_workers(pythons, args.cpu, logs) as (workers, unavailable):
        all_results = {d.sources.name: {r: measure(d, r, workers, args.rounds, check)
                                        for r in RECIPES} for d in datasets}  # fmt: skip
    print("\n".join(report(datasets, all_results, args.readers, unavailable, args.rounds)))


if __name__ == "__main__":
    timing.main(main)
