"""One manifest entry -> the examples that store its video, or a record of why not.

`encode` runs where the video is decoded (a build worker, a Beam worker or the
build process itself). `encode_video` picks the frames to keep, resizes and
JPEG-encodes them one at a time, handing out each segment as it is made; `encode`
wraps it in the build cache (`cache.cached`), which stores a file per segment, so
memory holds one segment's JPEG bytes, never a video's raw frames, and a resumed
build reads back what it had encoded. `examples_of` then reads the examples back
for TFDS's writer. A bad video becomes a skip record
`{split, path, reason}`: nothing is dropped without a trace. Like `video_io`,
this module does not import TensorFlow.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections.abc import Callable, Iterator

import cv2
import numpy as np
from awscrt import checksums
from tqdm import tqdm

from video_tfrecords.clips import keys
from video_tfrecords.config import VideoConfig
from video_tfrecords.ingest import audio_io, cache, manifest, video_io
from video_tfrecords.ingest.frame_choice import frame_rate, selected_frames, stored_size
from video_tfrecords.util.paths import is_remote
from video_tfrecords.util.text import human_bytes

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
    video_path: str  # resolved
    config: VideoConfig
    cache_root: str
    decoder_threads: int = 1

    @property
    def where(self) -> str:
        return f"{self.entry.where}: {self.entry.path}"

    def record(self, reason: str) -> dict:
        """A skip record or a note: which video, and why."""
        return {"split": self.split, "path": self.entry.path, "reason": reason}


@dataclasses.dataclass
class Outcome:
    """What one task produced: a cache entry of examples, or a skip record; maybe a note."""

    task: Task
    entry: cache.Entry | None = None
    skipped: dict | None = None
    note: dict | None = None  # kept, but worth knowing (damage, missing timestamps)


def encode_jpeg(frame_bgr: np.ndarray, quality: int) -> bytes:
    """JPEG-encodes a BGR frame (the file stores RGB, as every decoder expects)."""
    ok, buffer = cv2.imencode(".jpg", frame_bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise video_io.VideoError(f"JPEG encoding failed for a frame of shape {frame_bgr.shape}")
    return buffer.tobytes()


# -- one video -----------------------------------------------------------------


def init_worker() -> None:
    """Set up a build worker process: the parallelism is in the processes."""
    cv2.setNumThreads(1)


def encode(task: Task) -> Outcome:
    """The video's examples, from the cache or encoded into it; a bad video gives a skip record.

    Only a bad video is a skip record: a failure to write the cache (a full disk)
    raises, as it would be one for every video after it.
    """
    try:  # a resumed build opens no video it has already encoded
        entry = cache.cached(
            task.cache_root, lambda: _cache_key(task), lambda add: encode_video(task, add)
        )
    except video_io.VideoError as e:
        return Outcome(task, skipped=task.record(str(e)))
    damage = entry.summary["damage"]
    if damage and task.config.strict:
        return Outcome(task, skipped=task.record(f"{damage} (strict build)"))
    return Outcome(task, entry=entry, note=task.record(damage) if damage else None)


def _cache_key(task: Task) -> str:
    """The task's cache key: its video file, the frame-shaping config, its manifest name."""
    name = f"{task.split}/{task.entry.path}"
    return cache.video_key(task.video_path, task.config.frame_fields(), name)


def resume_order(tasks: list[Task]) -> list[Task]:
    """The tasks, those already in the cache spread evenly among the rest.

    On a resumed build the build process still reads back and writes every
    video's examples, while the workers encode only the videos not yet cached.
    In manifest order the cached ones come first (the killed build did them),
    so the build process would read them alone while the workers wait, then the
    workers encode while it waits. Interleaved, the two overlap. Each group keeps
    its order; the split's contents do not depend on it (TFDS orders examples by
    key). Without any cached video (a fresh build) the order is unchanged, and so
    it is for videos or a cache on a remote file system, where checking every
    video (a remote stat each) would cost more than the overlap saves.
    """
    if not tasks or is_remote(tasks[0].cache_root) or not os.path.isdir(tasks[0].cache_root):
        return list(tasks)
    cached = [_has_entry(task) for task in tasks]
    done = [task for task, hit in zip(tasks, cached) if hit]
    todo = [task for task, hit in zip(tasks, cached) if not hit]
    if not done or not todo:
        return list(tasks)
    # Each task's position as a fraction of its own group, merged by that fraction.
    placed = [((i + 0.5) / len(todo), 0, i) for i in range(len(todo))]
    placed += [((j + 0.5) / len(done), 1, j) for j in range(len(done))]
    return [(todo, done)[group][i] for _, group, i in sorted(placed)]


def _has_entry(task: Task) -> bool:
    """Whether a local video has a finished cache entry (False for a remote one: unknown)."""
    if is_remote(task.video_path):
        return False
    try:
        key = _cache_key(task)
    except OSError:
        return False
    return cache.Cache(task.cache_root).has(key)


def encode_video(task: Task, add: Callable[[dict], None]) -> dict:
    """Decodes the task's video and gives each of its examples (segments) to `add` as it is
    made; returns the summary: the fields the video gives (not those the manifest gives:
    label and name come from the task when read back) and its damage, if any."""
    threads, deinterlace = task.decoder_threads, task.config.deinterlace == "auto"
    with video_io.Video(task.video_path, threads=threads, deinterlace=deinterlace) as video:
        if task.config.audio_rate is None:
            return _encode_frames(task, video, None, add)
        rate, channels = task.config.audio_rate, task.config.audio_channels
        with audio_io.AudioTrack(task.video_path, rate, channels) as audio:
            return _encode_frames(task, video, audio, add)


def _encode_frames(
    task: Task, video: video_io.Video, audio: audio_io.AudioTrack | None,
    add: Callable[[dict], None],
) -> dict:
    """`encode_video`'s work, on the opened video (and its audio track, with `audio_rate`).

    A full segment waits for the next stored frame before it is handed out: its audio runs
    to that frame's time. The last one's runs to the end of the stored span (`_span_end`).
    """
    config, info = task.config, video.info
    size = stored_size(info, config)
    limit = config.segment_frames or math.inf
    decoded = []  # every decoded frame's time: where the stored span ends

    def counted(frames):
        for frame in frames:
            decoded.append(frame.time)
            yield frame

    def finish(done: _Segment, end: float) -> None:
        if audio is not None:
            done.set_audio(audio.take(audio_io.sample_at(end, audio.rate), video.start_seconds))
        add(done.example())

    segment, full = _Segment(start=0), None
    times, last_index, last_jpeg = [], None, None
    count = lambda: video_io.count_frames(task.video_path, threads=task.decoder_threads)
    for time, frame in selected_frames(counted(video.frames()), config, count):
        if frame.index != last_index:  # resampling may repeat a frame: encode it once
            last_index = frame.index
            last_jpeg = encode_jpeg(frame.bgr(*size), config.jpeg_quality)
        if full is not None:
            finish(full, time)
            full = None
        segment.add(last_jpeg, time)
        times.append(time)
        if len(segment.frames) == limit:
            full, segment = segment, _Segment(start=len(times))
    if not times:
        raise video_io.VideoError("no frame could be decoded")
    end = _span_end(config, times[-1], last_index, decoded, info.nominal_fps)
    for done in (full, segment):
        if done is not None and done.frames:
            finish(done, end)
    fields = {
        "fps": float(config.fps or frame_rate(times, info.nominal_fps)),
        "codec": info.codec,
        "source_height": info.coded_height,
        "source_width": info.coded_width,
        "source_num_frames": len(decoded),
        "display_height": info.display_height,
        "display_width": info.display_width,
        "sample_aspect_ratio": float(info.sample_aspect_ratio),
        "rotation": info.rotation,
    }
    damage = [video.damage.note()]
    if audio is not None:
        audio.read_to_end()  # its damage is of the whole stream
        fields.update(has_audio=audio.has_audio, audio_rate=audio.rate)
        damage.append(audio.damage.note())
    return {"fields": fields, "damage": "; ".join(filter(None, damage)) or None}


def _span_end(config: VideoConfig, last_time: float, last_index: int, decoded, fps) -> float:
    """When the stored frames stop showing: one tick after the last with `fps`; else when the
    source frame after the last stored one shows, or for the video's last frame its time plus
    the gap before it (a frame period; 1 / `fps`, the stream's rate, for a one-frame video)."""
    if config.fps is not None:
        return last_time + 1.0 / config.fps
    if last_index + 1 < len(decoded):
        return last_time + decoded[last_index + 1] - decoded[last_index]
    if last_index > 0:
        return last_time + decoded[last_index] - decoded[last_index - 1]
    return last_time + 1.0 / fps


@dataclasses.dataclass
class _Segment:
    """The frames of one example as they are encoded, held to the size limit as they grow."""

    start: int
    frames: list[bytes] = dataclasses.field(default_factory=list)
    times: list[float] = dataclasses.field(default_factory=list)
    crcs: list[int] = dataclasses.field(default_factory=list)
    size: int = 0
    audio: np.ndarray | None = None  # int16 [samples, channels], with `audio_rate`

    def add(self, jpeg: bytes, time: float) -> None:
        self.frames.append(jpeg)
        self.times.append(time)
        # Lets a reader check only the frames it decodes (the record's CRC covers all of them).
        self.crcs.append(checksums.crc32c(jpeg))
        self._grow(len(jpeg))

    def set_audio(self, audio: np.ndarray) -> None:
        self.audio = audio
        self._grow(audio.nbytes)

    def _grow(self, size: int) -> None:
        """Counts bytes into the example, refusing it past MAX_EXAMPLE_BYTES."""
        self.size += size
        if self.size > MAX_EXAMPLE_BYTES:
            raise video_io.VideoError(
                f"an example's frames and audio would go over the {human_bytes(MAX_EXAMPLE_BYTES)} "
                "limit (protobuf's hard limit is 2 GiB): set segment_frames to store it as "
                "several examples"
            )

    def example(self) -> dict:
        """The segment's own fields; the video's shared fields are added when it is read."""
        example = {
            "video": self.frames,
            "frame_crc32c": np.asarray(self.crcs, np.uint32),
            "timestamps": np.asarray(self.times, np.float32),
            "start_frame": self.start,
        }
        if self.audio is not None:  # from this segment's first frame to the next one's
            example["audio"] = self.audio
        return example


def examples_of(
    outcome: Outcome, start: int = 0, stop: int | None = None
) -> Iterator[tuple[str, dict]]:
    """The (key, example) pairs of an outcome's cache entry, one segment in memory at a time;
    only segments `start` to `stop` (all by default: a shard may hold part of a video)."""
    if outcome.entry is None:
        return
    task = outcome.task
    fields = {**outcome.entry.summary["fields"], "label": task.label, "filename": task.entry.path}
    entry = dataclasses.replace(outcome.entry, files=outcome.entry.files[start:stop])
    for segment, part in enumerate(entry.parts(), start=start):
        # What seeded clips are keyed on; stored so that a reader need not hash frames.
        fingerprint = keys.video_fingerprint(part["video"])
        yield (
            f"{task.entry.path}#{segment}",
            {**fields, **part, "segment": segment, "video_fingerprint": fingerprint},
        )


# -- reporting -------------------------------------------------------------------


def report(outcome: Outcome, strict: bool) -> Outcome:
    """Warns of a skipped or noted video; a strict build raises for a skipped one."""
    task = outcome.task
    if outcome.skipped and strict:
        raise VideoBuildError(
            f"{task.where}: {outcome.skipped['reason']} (strict build stops here)"
        )
    if outcome.skipped:
        _warn(f"Skipping {task.where}: {outcome.skipped['reason']}")
    if outcome.note:
        _warn(f"Keeping {task.where}: {outcome.note['reason']}")
    return outcome


def _warn(text: str) -> None:
    """A warning on stderr, printed above TFDS's progress bars (tqdm's) instead of into them."""
    tqdm.write(f"WARNING: {text}", file=sys.stderr)


def records_of(outcome: Outcome) -> list[str]:
    """The outcome's skip record and note as JSON lines tagged by kind (for Beam)."""
    tagged = [("skipped", outcome.skipped), ("notes", outcome.note)]
    return [json.dumps({"kind": kind, **record}) for kind, record in tagged if record]
