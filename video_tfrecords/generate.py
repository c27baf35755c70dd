"""Turns manifest entries into TFDS examples, or into records of why not.

One entry becomes one example (or several, for long videos cut into segments),
or a skip record `{split, path, reason}`: nothing is dropped without a trace.
This module is what build worker processes and Beam workers run; like
`video_io` it does not import TensorFlow.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import logging
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from typing import Self

from video_tfrecords import manifest, serialize, video_io

# The standard library's logger, not absl's: a build worker imports this module,
# and absl.logging would add 25 ms to its start. (TFDS's absl handler shows it.)
log = logging.getLogger(__name__)

# Protobuf refuses messages over 2 GiB; stay well clear of it.
MAX_EXAMPLE_BYTES = 1 << 30


class VideoBuildError(RuntimeError):
    """A bad video stopped a strict build (or left a split empty); the message names it."""


@dataclasses.dataclass(frozen=True)
class Task:
    """Everything a worker needs to turn one manifest entry into examples."""

    split: str
    entry: manifest.Entry
    label: int
    video_path: str  # resolved, for OpenCV
    options: video_io.EncodeOptions
    segment_frames: int | None = None


@dataclasses.dataclass
class Outcome:
    """What one task produced: examples, or a skip record; maybe a note."""

    task: Task
    examples: list[tuple[str, serialize.Spooled | bytes | dict]] = dataclasses.field(
        default_factory=list
    )
    skipped: dict | None = None  # {split, path, reason}
    note: dict | None = None  # kept, but worth knowing (e.g. truncated)

    @property
    def where(self) -> str:
        return f"{self.task.entry.where}: {self.task.entry.path}"


def report(outcome: Outcome, strict: bool) -> Outcome:
    """Warns of a skipped or noted video; a strict build raises for a skipped one."""
    if outcome.skipped and strict:
        raise VideoBuildError(
            f"{outcome.where}: {outcome.skipped['reason']} (strict build stops here)"
        )
    if outcome.skipped:
        log.warning("Skipping %s: %s", outcome.where, outcome.skipped["reason"])
    if outcome.note:
        log.warning("Keeping %s: %s", outcome.where, outcome.note["reason"])
    return outcome


def examples_of(outcome: Outcome) -> list[tuple[str, serialize.Spooled | bytes | dict]]:
    return outcome.examples


def records_of(outcome: Outcome) -> list[str]:
    """The outcome's skip record and note as JSON lines tagged by kind (for Beam)."""
    tagged = [("skipped", outcome.skipped), ("notes", outcome.note)]
    return [json.dumps({"kind": kind, **record}) for kind, record in tagged if record]


def segment_bounds(num_frames: int, segment_frames: int | None) -> list[tuple[int, int]]:
    """[start, end) frame ranges of the examples a video is stored as."""
    step = segment_frames or num_frames
    return [(start, min(start + step, num_frames)) for start in range(0, num_frames, step)]


def human_bytes(size: float) -> str:
    """1536 -> '1.5 KiB', for messages."""
    unit = "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            break
        size /= 1024
    return f"{size:.1f} {unit}"


class SegmentSpools:
    """Where `encode_video` puts the frames of a build: serialized as they come,
    one `serialize.FrameSpool` per segment in a temp file, and held to the
    size limit as they grow rather than after the whole video is encoded.

    Used as a context manager: on the way out every spool is closed, and if
    the video failed, its files are removed. The files of finished examples
    belong to their `serialize.Spooled`, whose `take` removes them.
    """

    def __init__(self, segment_frames: int | None):
        self.segment_frames = segment_frames
        self.spools: list[serialize.FrameSpool] = []
        self.num_frames = 0

    def append(self, frame: bytes) -> None:
        if not self.spools or self.spools[-1].num_frames == self.segment_frames:
            if self.spools:
                self.spools[-1].seal()
            descriptor, path = tempfile.mkstemp(prefix="video_tfrecords-", suffix=".spool")
            os.close(descriptor)
            self.spools.append(serialize.FrameSpool(path))
        self.spools[-1].append(frame)
        self.num_frames += 1
        check_example_size(self.spools[-1].jpeg_bytes)

    def __len__(self) -> int:
        return self.num_frames

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, *exc_info) -> None:
        for spool in self.spools:
            spool.seal()
            if exc_type is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(spool.path)


def check_example_size(size: int) -> None:
    if size > MAX_EXAMPLE_BYTES:
        raise video_io.VideoError(
            f"an example's JPEG frames would go over the {human_bytes(MAX_EXAMPLE_BYTES)} limit "
            "(protobuf's hard limit is 2 GiB): set segment_frames to store it as several examples"
        )


def to_examples(
    task: Task, video: video_io.EncodedVideo
) -> list[tuple[str, serialize.Spooled | dict]]:
    """The (key, example) pairs that store `video`, one per segment.

    Frames spooled by `SegmentSpools` give serialized examples, left in their
    spool files (`serialize.Spooled`); a list of frames gives example dicts,
    for TFDS to encode and serialize.
    """
    examples = []
    for segment, (start, end) in enumerate(segment_bounds(len(video.frames), task.segment_frames)):
        scalars = {
            "label": task.label,
            "filename": task.entry.path,
            "fps": video.fps,
            "source_height": video.source_height,
            "source_width": video.source_width,
            "source_num_frames": video.source_num_frames,
            "segment": segment,
            "start_frame": start,
        }
        if isinstance(video.frames, SegmentSpools):
            example = video.frames.spools[segment].finish(scalars)
        else:
            frames = video.frames[start:end]
            check_example_size(sum(map(len, frames)))
            example = {"video": frames, **scalars}
        examples.append((f"{task.entry.path}#{segment}", example))
    return examples


def run(task: Task, serialized: bool = True) -> Outcome:
    """Encodes one video; a bad video becomes a skip record instead of an error.

    Examples come serialized and left in spool files, for `take` to read
    (`serialize`), or as dicts if not `serialized` (for Beam, whose writer
    TFDS drives).
    """
    frames = SegmentSpools(task.segment_frames) if serialized else contextlib.nullcontext([])
    try:
        with frames as sink:
            video = video_io.encode_video(task.video_path, task.options, sink)
            outcome = Outcome(task, examples=to_examples(task, video))
    except (video_io.VideoError, OSError) as e:
        return Outcome(task, skipped=skip_record(task, str(e)))
    if video.truncated:
        outcome.note = skip_record(
            task,
            f"truncated: kept the {video.source_num_frames} frames that decode; "
            f"the container claims {video.reported_num_frames}",
        )
    return outcome


def take(outcome: Outcome) -> Outcome:
    """`outcome`, its spooled examples read into bytes (and their spool files removed)."""
    outcome.examples = [
        (key, example.take() if isinstance(example, serialize.Spooled) else example)
        for key, example in outcome.examples
    ]
    return outcome


def skip_record(task: Task, reason: str) -> dict:
    return {"split": task.split, "path": task.entry.path, "reason": reason}


class Workers:
    """Processes that encode videos for every split of one build, in manifest order.

    Each is a fresh interpreter running `video_tfrecords.worker` (never a fork:
    the parent may be running TensorFlow's threads), started once per build.
    Tasks go out round-robin and results come back in manifest order; at most
    two videos per worker are in flight, so memory stays bounded whatever the
    manifest's length. A worker leaves its examples serialized in spool files
    and sends their places (`serialize.Spooled`), which a thread per worker
    takes as soon as they come, so a worker starts its next video while the
    parent is still writing another worker's; the parent reads each example
    once, when it yields it. A worker that crashes (FFmpeg on a hostile file)
    costs only that video, which is recorded as skipped, and is restarted.
    """

    def __init__(self, num_workers: int = 0):
        self.num_workers = num_workers or os.cpu_count() or 1
        self._workers: list[tuple[subprocess.Popen, queue.SimpleQueue]] = []
        self._scratch: tempfile.TemporaryDirectory | None = None

    def run_all(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        if self.num_workers == 1:
            yield from (take(run(task)) for task in tasks)
            return
        if not self._workers:
            # The workers' TMPDIR, for their spools: removed by close(), even
            # where a worker was killed in the middle of a video.
            self._scratch = tempfile.TemporaryDirectory(prefix="video_tfrecords-workers-")
            self._workers = [self._start_worker() for _ in range(self.num_workers)]
        in_flight = collections.deque()  # (worker index, task), in manifest order
        for number, task in enumerate(tasks):
            worker = number % self.num_workers
            self._send(worker, task)
            in_flight.append((worker, task))
            if len(in_flight) >= 2 * self.num_workers:
                yield self._receive(*in_flight.popleft(), in_flight)
        while in_flight:
            yield self._receive(*in_flight.popleft(), in_flight)

    def _send(self, worker: int, task: Task) -> None:
        pipe = self._workers[worker][0].stdin
        pickle.dump(task, pipe, protocol=pickle.HIGHEST_PROTOCOL)
        pipe.flush()

    def _receive(self, worker: int, task: Task, in_flight: collections.deque) -> Outcome:
        """The worker's next outcome; if it died, a skip record and a new worker."""
        process, results = self._workers[worker]
        outcome = results.get()
        if outcome is not None:
            return take(outcome)
        code = process.wait()
        self._workers[worker] = self._start_worker()
        for other, pending in in_flight:  # what the dead worker had not done yet
            if other == worker:
                self._send(worker, pending)
        return Outcome(task, skipped=skip_record(task, f"the decoder crashed (exit code {code})"))

    def close(self) -> None:
        for process, _ in self._workers:
            process.stdin.close()
            process.kill()
            process.wait()
            process.stdout.close()
        self._workers = []
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def _start_worker(self) -> tuple[subprocess.Popen, queue.SimpleQueue]:
        """A fresh interpreter running `worker.main` on this very package's files,
        and the queue that a thread fills with its outcomes."""
        package_dir = os.path.dirname(os.path.abspath(__file__))
        process = subprocess.Popen(
            [sys.executable, "-c", _WORKER_BOOTSTRAP, package_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "TMPDIR": self._scratch.name},
        )
        results = queue.SimpleQueue()
        threading.Thread(target=_collect, args=(process, results), daemon=True).start()
        return process, results

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _collect(process: subprocess.Popen, results: queue.SimpleQueue) -> None:
    """Puts each outcome the worker writes into `results`, then None when it ends."""
    try:
        while True:
            results.put(pickle.load(process.stdout))
    except (EOFError, pickle.UnpicklingError, OSError, ValueError):
        results.put(None)


# Imports video_tfrecords.worker under a bare package object, so that the
# package's __init__, which registers the TFDS builder and so imports TFDS
# (0.3 s and 16 MB a worker), never runs in a worker.
_WORKER_BOOTSTRAP = (
    "import sys, types; "
    "package = types.ModuleType('video_tfrecords'); package.__path__ = [sys.argv[1]]; "
    "sys.modules['video_tfrecords'] = package; "
    "from video_tfrecords import worker; worker.main()"
)
