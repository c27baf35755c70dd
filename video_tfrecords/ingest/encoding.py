"""One video of a split (a manifest line, or the lines of its spans) -> the examples that store
it, or a finding of why not.

`encode` runs where the video is decoded (a build worker, a Beam worker or the
build process itself). `encode_video` decodes the video once (each run of spans from the
keyframe before it: `spans.ranges`) and pushes each frame to the `span_writer.SpanWriter` of
every span it falls in, which picks the frames to keep, resizes and JPEG-encodes them one at
a time, handing out each piece (an example of at most `segment_frames`) as it is made;
`encode` wraps it in the build cache (`cache.cached`), which stores a file per piece, so
memory holds one piece's JPEG bytes, never a video's raw frames, and a resumed build reads back what it had encoded. `examples_of`
then reads the examples back for TFDS's writer. Every manifest line ends as examples or a
skip `{split, path, reason, where}` (`where`: its own `FILE:LINE`; `line_findings`):
each line of a bad video, a span that holds no frame; a span past the video's end, or
damage, is a note of the same form. Like `video_io`, this module does not import TensorFlow.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Iterator

import cv2

from video_tfrecords.clips import jpeg, keys
from video_tfrecords.config import VideoConfig
from video_tfrecords.ingest import (
    audio_io,
    cache,
    file_identity,
    frame_index,
    manifest,
    progress,
    spans,
    video_io,
)
from video_tfrecords.ingest.frame_choice import stored_size
from video_tfrecords.ingest.span_writer import Jpegs, SpanWriter
from video_tfrecords.records import frame_table, schema
from video_tfrecords.util.paths import is_remote


class VideoBuildError(RuntimeError):
    """A bad video stopped a strict build (or left a split empty); the message names it."""


@dataclasses.dataclass(frozen=True)
class Task:
    """Everything a worker needs to turn one video of a split into examples: its manifest
    line (the first, with `parts`), or one `spans.Part` per line naming the video."""

    split: str
    entry: manifest.Entry
    label: int
    video_path: str  # resolved
    config: VideoConfig
    cache_root: str
    decoder_threads: int = 1
    parts: tuple[spans.Part, ...] = ()  # JSON Lines datasets: the video's examples-to-be
    # The file as `built_from` found it: (size, mtime, ctime, content fingerprint); None: unknown.
    identity: tuple | None = None
    copy: int = 0  # tasks before this one with the same video content and spans

    @property
    def where(self) -> str:
        return f"{self.entry.where}: {self.entry.path}"

    @property
    def lines(self) -> tuple[manifest.Entry, ...]:
        """The manifest lines the task stores: one per part, or its one line."""
        return tuple(part.entry for part in self.parts) or (self.entry,)

    def finding(self, reason: str, line: manifest.Entry | None = None) -> dict:
        """A skip or a note: which video, why, and the manifest line (`FILE:LINE`)
        it is of (the task's first, unless `line` says)."""
        line = line or self.entry
        return {"split": self.split, "path": line.path, "reason": reason, "where": line.where}


@dataclasses.dataclass
class Outcome:
    """What one task produced: a cache entry of examples, or the video's skip; maybe
    the video's note (damage). `line_findings` gives the findings of each of its lines."""

    task: Task
    entry: cache.Entry | None = None
    skipped: dict | None = None
    note: dict | None = None  # kept, but worth knowing (damage, missing timestamps)


# -- one video -----------------------------------------------------------------


def init_worker() -> None:
    """Set up a build worker process: the parallelism is in the processes."""
    cv2.setNumThreads(1)


def encode(task: Task) -> Outcome:
    """The video's examples, from the cache or encoded into it; a bad video gives a skip.

    Only a bad video is a skip: a failure to write the cache (a full disk)
    raises, as it would be one for every video after it.
    """
    try:  # a resumed build opens no video it has already encoded
        entry = cache.cached(
            task.cache_root, lambda: _cache_key(task), lambda add: encode_video(task, add)
        )
    except video_io.VideoError as e:
        return Outcome(task, skipped=task.finding(str(e)))
    damage = entry.summary["damage"]
    if damage and task.config.strict:
        return Outcome(task, skipped=task.finding(f"{damage} (strict build)"))
    return Outcome(task, entry=entry, note=task.finding(damage) if damage else None)


def _cache_key(task: Task) -> str:
    """The task's cache key as its video file is now (its fingerprint read again only if the
    file changed since the tasks were made); OSError if the file cannot be found or read."""
    return cache_key(task, file_identity.current(task.video_path, task.identity))


def cache_key(task: Task, content: str | None = None) -> str:
    """The cache key of a task: its video file's content (`content`; by default `built_from`'s,
    else read now), the spans it stores, which copy of the same it is (`Task.copy`), the
    frame-shaping config. Not its path: videos move, and the entry holds only what the
    video gives (the label, name and FILE:LINE come from the task)."""
    if content is None:
        planned = task.identity[3] if task.identity is not None else None
        content = planned or file_identity.current(task.video_path, None)
    times = [[part.start, part.end] for part in task.parts] or None  # JSON: inf as Infinity
    video = {"content": content, "spans": times, "copy": task.copy}
    return cache.key(video, task.config.frame_fields())


def cached(tasks: list[Task]) -> list[bool]:
    """Which tasks' videos have a finished cache entry (an interrupted build's): all False for
    a cache on a remote file system, where a stat each would cost more than it tells."""
    if not tasks or is_remote(tasks[0].cache_root) or not os.path.isdir(tasks[0].cache_root):
        return [False] * len(tasks)
    return [_has_entry(task) for task in tasks]


def resume_order(tasks: list[Task], hits: list[bool] | None = None) -> list[Task]:
    """The tasks, those already in the cache (`hits`, else `cached(tasks)`) spread evenly
    among the rest.

    On a resumed build the build process still reads back and writes every
    video's examples, while the workers encode only the videos not yet cached.
    In manifest order the cached ones come first (the killed build did them),
    so the build process would read them alone while the workers wait, then the
    workers encode while it waits. Interleaved, the two overlap. Each group keeps
    its order; the split's contents do not depend on it (TFDS orders examples by
    key). Without any cached video (a fresh build) the order is unchanged.
    """
    hits = cached(tasks) if hits is None else hits
    done = [task for task, hit in zip(tasks, hits) if hit]
    todo = [task for task, hit in zip(tasks, hits) if not hit]
    if not done or not todo:
        return list(tasks)
    # Each task's position as a fraction of its own group, merged by that fraction.
    placed = [((i + 0.5) / len(todo), 0, i) for i in range(len(todo))]
    placed += [((j + 0.5) / len(done), 1, j) for j in range(len(done))]
    return [(todo, done)[group][i] for _, group, i in sorted(placed)]


def _has_entry(task: Task) -> bool:
    """Whether a video has a finished cache entry, by `built_from`'s fingerprint (a task made
    without one: only a local file's, read now)."""
    planned = task.identity is not None and task.identity[3] is not None
    if not planned and is_remote(task.video_path):
        return False
    try:
        return cache.Cache(task.cache_root).has(cache_key(task))
    except OSError:
        return False


def encode_video(task: Task, add: Callable[[dict], None]) -> dict:
    """Decodes the task's video once and gives each example (piece) of each of its spans
    to `add` as it is made; returns the summary: the fields the video gives (not those the
    manifest gives: label and name come from the task when read back), each span's own
    (`parts`: None for a span with no frame), the damage, if any, and `notes`: [part,
    reason] for each span past the video's end or with no frame. VideoError for a video
    (not a span) that gives no frame."""
    config, path = task.config, task.video_path
    threads, deinterlace = task.decoder_threads, config.deinterlace == "auto"
    parts = [(p.start, p.end) for p in task.parts] or [(0.0, float("inf"))]
    with video_io.Video(path, threads=threads, deinterlace=deinterlace) as video:
        info = video.info
        jpegs = Jpegs(stored_size(info, config), config.jpeg_quality)

        def writer(number: int, start: float, end: float) -> SpanWriter:
            count = lambda: video_io.count_frames(path, threads=threads, start=start, end=end)
            audio = None
            if config.audio_rate is not None:
                rate, channels = config.audio_rate, config.audio_channels
                audio = lambda: audio_io.AudioTrack(path, rate, channels, video.start_seconds)
            return SpanWriter(number, start, end, config, jpegs, add, count, audio)

        writers = [writer(number, *span) for number, span in enumerate(parts)]
        try:
            summaries, notes = _decode_spans(task, video, writers)
        finally:
            for w in writers:
                w.close()
    if not task.parts and not any(summaries):
        raise video_io.VideoError("no frame could be decoded")
    fields = {
        schema.CODEC: info.codec,
        schema.SOURCE_HEIGHT: info.coded_height,
        schema.SOURCE_WIDTH: info.coded_width,
        schema.DISPLAY_HEIGHT: info.display_height,
        schema.DISPLAY_WIDTH: info.display_width,
        schema.SAMPLE_ASPECT_RATIO: float(info.sample_aspect_ratio),
        schema.ROTATION: info.rotation,
    }
    damage = [video.damage.note()]
    tracks = [w.audio for w in writers if w.audio is not None]
    if config.audio_rate is not None:
        fields[schema.HAS_AUDIO] = any(a.has_audio for a in tracks)
        fields[schema.AUDIO_RATE] = config.audio_rate
        damage += [a.damage.note() for a in tracks]
    damage = "; ".join(dict.fromkeys(filter(None, damage))) or None
    return {"fields": fields, "parts": summaries, "damage": damage, "notes": notes}


def _decode_spans(task: Task, video: video_io.Video, writers: list[SpanWriter]):
    """Pushes each decoded frame to the writers whose span it is in, one run of spans
    (`spans.ranges`) at a time; returns each writer's fields (`SpanWriter.finish`) and notes
    on spans past the video's end or without a frame, as [part, reason] (`line_findings` names
    their lines: a cached entry serves a moved or reordered manifest)."""
    summaries: list[dict | None] = [None] * len(writers)
    notes = []
    fps = video.info.nominal_fps
    ranges = spans.ranges(writers)
    sought = [first for first, _ in ranges if first > video_io.EPSILON]  # a seek each
    before = dict(zip(sought, frame_index.frames_before(task.video_path, sought)))
    for first, last in ranges:
        active = [w for w in writers if first <= w.start and w.end <= last]
        for w in active:  # a frame's `index` counts from the range's first
            w.frames_before = before.get(first, 0)
        for frame in video.frames(first, last):
            for w in active:
                if w.covers(frame.time):
                    w.push(frame)
        for w in active:
            summaries[w.part] = w.finish(fps, whole=w.end == math.inf)
            w.close()
            past = video.ended and math.isfinite(w.end) and w.end > video.end + video_io.EPSILON
            if task.parts and (past or summaries[w.part] is None):
                ended = video.end if video.ended else None
                notes.append([w.part, _span_note(task.parts[w.part], ended, summaries[w.part])])
    return summaries, notes


def _span_note(part: spans.Part, video_end: float | None, summary: dict | None) -> str:
    """Why a span has no frame, or that it ends after the video (`video_end`) does."""
    span = f"span [{part.start:g} s, {part.end:g} s)"
    if summary is not None:
        return f"{span} ends past the video's end ({video_end:.3f} s): clipped"
    if video_end is not None and part.start >= video_end - video_io.EPSILON:
        return f"{span} has no frame: the video ends at {video_end:.3f} s"
    return f"{span} holds no frame of the video"


def examples_of(
    outcome: Outcome, start: int = 0, stop: int | None = None
) -> Iterator[tuple[str, dict]]:
    """The (key, example) pairs of an outcome's cache entry, one piece in memory at a time;
    only pieces `start` to `stop` (all by default: a shard may hold part of a video). Each
    example is a `schema.Example` filled from the entry and the task, as TFDS's writer takes it.

    A task with `parts` gives each part's examples its line's label, annotation features
    and span (`span_start`, `span_end`); one without gives exactly the fields of a text
    manifest's build."""
    if outcome.entry is None:
        return
    task, summary = outcome.task, outcome.entry.summary
    entry = dataclasses.replace(outcome.entry, files=outcome.entry.files[start:stop])
    for stored in entry.parts():
        number = stored.pop("part")
        fields = {**summary["fields"], **summary["parts"][number]}
        if task.parts:
            part = task.parts[number]
            fields.update(part.features)
            fields.update({schema.LABEL: part.label, schema.FILENAME: part.entry.path})
            if schema.CAPTIONS in part.features:
                times = fields[schema.SPAN_START], fields[schema.SPAN_END]
                captions = part.features[schema.CAPTIONS]
                fields[schema.CAPTIONS] = spans.with_caption_times(captions, *times)
            key = part.key()
        else:
            del fields[schema.SPAN_START], fields[schema.SPAN_END]
            fields.update({schema.LABEL: task.label, schema.FILENAME: task.entry.path})
            key = task.entry.path
        frames = stored[schema.VIDEO]
        # What seeded clips are keyed on; stored so that a reader need not hash frames.
        fingerprint = keys.video_fingerprint(frames)
        # Every frame's size (a video's are one), that readers check each frame's header by.
        height, width = jpeg.jpeg_size(frames[0])
        made = {schema.FRAME_HEIGHT: height, schema.FRAME_WIDTH: width}
        made[schema.FINGERPRINT] = fingerprint
        # Where each frame lies in the record, and the CRC32C of them all as stored.
        made[schema.FRAME_SIZES] = frame_table.sizes(frames)
        made[schema.VIDEO_CRC] = frame_table.list_crc32c(frames, stored[schema.FRAME_CHECKSUMS])
        example = schema.Example(**{**fields, **stored, **made})  # a field it lacks: TypeError
        yield f"{key}#{stored[schema.SEGMENT]}", example.stored_values()


# -- reporting -------------------------------------------------------------------


def line_findings(outcome: Outcome) -> tuple[list[dict], list[dict]]:
    """The outcome's skips and notes, each of one manifest line (`where`): a skipped
    video's for each of its lines, a span with no frame's for its own line; the video's note
    (its damage, on its first line) and each clipped span's. A line without a skip
    has examples: examples' lines + skips = the task's lines."""
    task = outcome.task
    if outcome.skipped:
        skipped = [{**outcome.skipped, "where": line.where} for line in task.lines]
        return skipped, [outcome.note] if outcome.note else []
    skipped, notes = [], [outcome.note] if outcome.note else []
    parts = outcome.entry.summary["parts"] if outcome.entry else ()
    for part, reason in outcome.entry.summary["notes"] if outcome.entry else ():
        line = task.lines[part]
        (notes if parts[part] else skipped).append(task.finding(reason, line))
    return skipped, notes


def report(outcome: Outcome, strict: bool) -> Outcome:
    """Warns of each skipped or noted line; a strict build raises at the first skipped one."""
    skipped, notes = line_findings(outcome)
    if skipped and strict:
        first = skipped[0]
        raise VideoBuildError(
            f"{first['where']}: {first['path']}: {first['reason']} (strict build stops here)"
        )
    for kind, findings in (("Skipping", skipped), ("Keeping", notes)):
        for finding in findings:
            _warn(f"{kind} {finding['where']}: {finding['path']}: {finding['reason']}")
    return outcome


def _warn(text: str) -> None:
    """A warning on stderr, printed above the progress bars instead of into them."""
    progress.write(f"WARNING: {text}")


def findings_of(outcome: Outcome) -> list[str]:
    """The outcome's `line_findings` as JSON lines tagged by kind (for Beam)."""
    skipped, notes = line_findings(outcome)
    tagged = [("skipped", r) for r in skipped] + [("notes", r) for r in notes]
    return [json.dumps({"kind": kind, **finding}) for kind, finding in tagged]
