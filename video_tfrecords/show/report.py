"""A prepared dataset's statistics per split, as `tfds.show_statistics` gives image datasets.

Counts of examples, shards and bytes come from what TFDS wrote (dataset_info.json);
the per-example values (classes, duration, frames, frame rate, frame size, record
size) from reading every record (`stored`); the videos the build skipped or kept
with a note, from metadata.json (`info.metadata`), one row per kind of reason.

Classes: a dataset that stores `labels` (a JSON Lines build; its `label` is -1 where a line
gave several) is counted from them: examples that carry each class, its distinct segments
(`label_segments`), and the seconds of stored frames inside them; else from `label`.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import re

import numpy as np

from video_tfrecords.records import dataset_files, schema
from video_tfrecords.show.stored import SplitRecords
from video_tfrecords.util.text import human_bytes, plural

__all__ = [
    "ClassCounts", "DatasetReport", "SplitReport", "as_text", "class_counts", "dataset_report",
    "problem_groups", "problem_item", "problem_kind", "problem_text",
]  # fmt: skip

_BAR = 40  # characters of the longest histogram bar
_VALUES = 8  # distinct values of a stored feature listed; more: their spread
# Scalar features the report shows in rows of their own, or that name an example rather than
# describe it (its fingerprint, its place in the video): not listed among the stored values.
OWN_ROWS = {
    schema.LABEL, schema.FILENAME, schema.FPS, schema.HAS_AUDIO, schema.FRAME_HEIGHT,
    schema.FRAME_WIDTH, schema.FINGERPRINT, schema.SEGMENT, schema.START_FRAME,
    schema.SPAN_START, schema.SPAN_END,
}  # fmt: skip
_ALL_CLASSES = 30  # more classes than this: the text lists the fewest and most only


@dataclasses.dataclass
class SplitReport:
    """One split: TFDS's counts, the values read from its records, its skips and notes."""

    name: str
    examples: int  # dataset_info.json
    shards: int
    info_bytes: int  # dataset_info.json's numBytes
    file_bytes: int  # the shard files' sizes on disk
    read: int  # records read for the values below (all, unless limited)
    classes: list[tuple[int, ...]]  # each example's classes (`StoredVideo.classes`)
    multi_label: bool  # the dataset stores `labels`: classes come from them
    segments: list[tuple[int, float]] | None  # (class, seconds of stored frames) a segment
    durations: np.ndarray  # seconds
    num_frames: np.ndarray
    fps: np.ndarray  # nan where a record has none
    frame_sizes: collections.Counter  # (h, w) -> examples
    record_bytes: np.ndarray
    videos: int  # distinct files among the records read (a video of several parts counts once)
    with_audio: int | None  # examples whose video has an audio stream; None: no audio stored
    skipped: list[dict]  # metadata.json records {split, path, reason}
    notes: list[dict]
    # The other scalar features' values (`OWN_ROWS` aside) -> examples: what each
    # stores, a new feature included.
    stored: dict[str, collections.Counter] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class DatasetReport:
    dataset_dir: str
    name: str
    version: str
    file_format: str
    class_names: list[str]
    splits: list[SplitReport]


# A manifest's FILE:LINE opening a reason (the line it is about), e.g. "train.jsonl:13: ".
_WHERE = re.compile(r"^(\S+:\d+): ")


def problem_kind(record: dict) -> tuple[str, list[str]]:
    """(kind, FILE:LINEs) of a skip or note: its reasons ('; '-separated) without their
    FILE:LINE, numbers as N ('3 packets with decode errors' and '1 packet with decode errors'
    are one kind), each kind once; and the FILE:LINEs named (its "where", then its reasons')."""
    places = [record["where"]] if record.get("where") else []
    kinds = []
    for part in record.get("reason", "").split("; "):
        found = _WHERE.match(part.strip())
        if found:
            places.append(found.group(1))
            part = part.strip()[found.end() :]
        kind = re.sub(r"\d+(?:\.\d+)?", "N", part.strip())
        kind = re.sub(r"\bN (\w{3,}?)s\b", r"N \1", kind)
        if kind not in kinds:
            kinds.append(kind)
    return "; ".join(kinds), list(dict.fromkeys(places))


def problem_groups(records: list[dict]) -> list[tuple[str, list[dict]]]:
    """The records by `problem_kind`, the most common first: one group per kind, each record
    in exactly one."""
    groups: dict[str, list[dict]] = collections.defaultdict(list)
    for record in records:
        groups[problem_kind(record)[0]].append(record)
    return sorted(groups.items(), key=lambda item: -len(item[1]))


def problem_text(kind: str, records: list[dict]) -> str:
    """A group's reason: the record's own words when it is alone, else its kind."""
    if len(records) > 1:
        return kind
    parts = [_WHERE.sub("", part.strip()) for part in records[0].get("reason", "").split("; ")]
    return "; ".join(dict.fromkeys(parts))


def problem_item(record: dict) -> str:
    """'v/b.webm (train.jsonl:13, train.jsonl:15)': the video and the lines it is about."""
    places = problem_kind(record)[1]
    path = record.get("path", "?")
    return f"{path} ({', '.join(places)})" if places else path


def _metadata(dataset_dir: str) -> dict:
    """metadata.json (what the build wrote into info.metadata), checked; empty if there is none."""
    return dataset_files.read_metadata(dataset_dir)


def _segments(videos) -> list[tuple[int, float]]:
    """(class, seconds) of each distinct stored segment (a video's segments are stored with
    each of its parts): the seconds of stored frames inside it, summed over the examples that
    store it."""
    seconds: dict[tuple, float] = collections.defaultdict(float)
    for video in videos:
        first = float(video.times[0]) if video.num_frames else 0.0
        last = first + video.duration
        for label, start, end in video.segments:
            inside = max(0.0, min(end, last) - max(start, first))
            seconds[(video.filename, label, start, end)] += inside
    return [(key[1], value) for key, value in seconds.items()]


def _split_report(dataset_dir, info: dict, split: dict, metadata: dict, limit, progress):
    name = split["name"]
    shards = dataset_files.split_shards(dataset_dir, name, info)
    records = SplitRecords(dataset_dir, name)
    count = len(records) if limit is None else min(limit, len(records))
    videos = []
    for index in range(count):
        videos.append(records.video(index))
        if progress is not None:
            progress(name, index + 1, count)
    records.close()
    floats = lambda values: np.array(list(values), np.float64)
    multi_label = schema.LABELS_KIND in records.kinds
    return SplitReport(
        name=name,
        examples=sum(shards.lengths),
        shards=len(shards.paths),
        info_bytes=int(split.get("numBytes", 0)),
        file_bytes=sum(os.path.getsize(path) for path in shards.paths),
        read=count,
        classes=[v.classes for v in videos],
        multi_label=multi_label,
        segments=_segments(videos) if multi_label else None,
        durations=floats(v.duration for v in videos),
        num_frames=np.array([v.num_frames for v in videos], np.int64),
        fps=floats(np.nan if v.fps is None else v.fps for v in videos),
        frame_sizes=collections.Counter(v.frame_size for v in videos if v.frame_size),
        record_bytes=np.array([v.record_bytes for v in videos], np.int64),
        videos=len({v.filename for v in videos}),
        with_audio=None
        if any(v.has_audio is None for v in videos)
        else sum(v.has_audio for v in videos),
        skipped=[r for r in metadata.get("skipped", []) if r.get("split") == name],
        notes=[r for r in metadata.get("notes", []) if r.get("split") == name],
        stored=_stored_values(videos),
    )


def _stored_values(videos) -> dict[str, collections.Counter]:
    """Each scalar feature's values (but `OWN_ROWS`) -> how many examples store it."""
    found: dict[str, collections.Counter] = {}
    for video in videos:
        for name, value in video.values.items():
            if name not in OWN_ROWS:
                found.setdefault(name, collections.Counter())[value] += 1
    return found


def _value_lines(stored: dict[str, collections.Counter]) -> list[str]:
    """A row per stored feature: its values with their examples, or, with many numbers,
    their spread."""
    lines = ["  stored values:"] if stored else []
    for name, counts in stored.items():
        numbers = all(not isinstance(v, str) for v in counts)
        if len(counts) > _VALUES and numbers:
            values = np.repeat(np.array(list(counts), np.float64), list(counts.values()))
            shown = f"{_spread(values, digits=2)} ({len(counts)} values)"
        else:
            listed = [f"{v} x {n}" for v, n in counts.most_common(_VALUES)]
            more = f" and {len(counts) - _VALUES} more" if len(counts) > _VALUES else ""
            shown = ", ".join(listed) + more
        lines.append(f"    {name}: {shown}")
    return lines


def dataset_report(dataset_dir: str, splits=None, limit=None, progress=None) -> DatasetReport:
    """The report of a prepared dataset folder: every split, or those named; `limit`: records
    read a split; `progress(split, done, total)` is called after each record read."""
    info = dataset_files.read_info(dataset_dir)
    known = {s["name"]: s for s in info.get("splits", [])}
    names = list(known) if splits is None else list(splits)
    missing = [n for n in names if n not in known]
    if missing:
        raise ValueError(
            f"No split {', '.join(missing)} in {dataset_dir}; splits: {', '.join(known)}."
        )
    metadata = _metadata(dataset_dir)
    return DatasetReport(
        dataset_dir=dataset_dir,
        name=info.get("name", dataset_files.DATASET_NAME),
        version=info.get("version", "?"),
        file_format=info.get("fileFormat") or "tfrecord",
        class_names=dataset_files.read_label_names(dataset_dir) or [],
        splits=[
            _split_report(dataset_dir, info, known[n], metadata, limit, progress) for n in names
        ],
    )


def _spread(values: np.ndarray, unit: str = "", digits: int = 2) -> str:
    values = values[~np.isnan(values)] if values.dtype.kind == "f" else values
    if not len(values):
        return "none"
    show = lambda v: f"{v:.{digits}f}{unit}"
    return (
        f"min {show(values.min())}  median {show(np.median(values))}  "
        f"mean {show(values.mean())}  max {show(values.max())}"
    )


def _time(seconds: float) -> str:
    """'48.0 s', '12.5 min', '3.20 h'."""
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.2f} h"


def _bar(count: int, most: int) -> str:
    return "#" * (round(_BAR * count / most) if most else 0)


@dataclasses.dataclass(frozen=True)
class ClassCounts:
    """A split's classes: what the text and the chart show."""

    names: list[str]  # one per class (its id where the dataset names none)
    examples: np.ndarray  # int [classes]: examples that carry the class
    segments: np.ndarray | None  # int [classes]: its distinct segments; None: not stored
    seconds: np.ndarray | None  # float [classes]: seconds of stored frames inside them
    per_example: np.ndarray  # int [examples read]: classes each carries


def class_counts(split: SplitReport, names: list[str]) -> ClassCounts:
    """Each class's examples (and segments, seconds) in `split`, over the dataset's classes."""
    seen = [c for classes in split.classes for c in classes if c >= 0]
    segment_classes = [c for c, _ in split.segments or ()]
    count = max([len(names), *(c + 1 for c in seen + segment_classes)])
    examples = np.zeros(count, np.int64)
    for classes in split.classes:
        examples[sorted({c for c in classes if c >= 0})] += 1
    segments = seconds = None
    if split.segments is not None:
        segments = np.bincount(np.array(segment_classes, np.int64), minlength=count)
        seconds = np.zeros(count, np.float64)
        for c, duration in split.segments:
            seconds[c] += duration
    return ClassCounts(
        names=[names[c] if c < len(names) else str(c) for c in range(count)],
        examples=examples,
        segments=segments,
        seconds=seconds,
        per_example=np.array([len(set(classes)) for classes in split.classes], np.int64),
    )


def _class_lines(split: SplitReport, names: list[str]) -> list[str]:
    """The class histogram: every class, or with many the fewest and most, and any missing;
    from `labels`, also each class's segments and their seconds."""
    counts = class_counts(split, names)
    classes = len(counts.names)
    present = int((counts.examples > 0).sum())
    low, high = (counts.examples.min(), counts.examples.max()) if classes else (0, 0)
    spread = f"{low} to {high} examples a class" if classes else "none"
    lines = [f"  classes: {present} of {classes} present; {spread}"]
    if split.multi_label:
        per = counts.per_example if len(counts.per_example) else np.zeros(1, np.int64)
        none = plural(int((counts.per_example == 0).sum()), "example")
        lines.append(
            f"    from each example's labels: {per.min()} to {per.max()} an example "
            f"(mean {per.mean():.2f}); {none} with none"
        )
    order = list(range(classes))
    if classes > _ALL_CLASSES:
        by_count = sorted(order, key=lambda c: (counts.examples[c], c))
        order = by_count[:10] + by_count[-10:]
        lines.append("    (the 10 fewest, then the 10 most)")
    width = max((len(counts.names[c]) for c in order), default=0)
    most = int(counts.examples.max()) if classes else 0
    timed = counts.segments is not None
    if timed:
        lines.append(f"    {'':<{width}} {'examples':>8} {'segments':>8} {'seconds':>9}")
    for c in order:
        line = f"    {counts.names[c]:<{width}} {counts.examples[c]:>{8 if timed else 6}}"
        if timed:
            line += f" {counts.segments[c]:>8} {counts.seconds[c]:>9.1f}"
        lines.append(f"{line} {_bar(counts.examples[c], most)}".rstrip())
    missing = [counts.names[c] for c in range(classes) if counts.examples[c] == 0]
    if missing:
        lines.append(f"    no examples: {', '.join(missing)}")
    return lines


def _problem_lines(kind: str, records: list[dict]) -> list[str]:
    """Skips or notes, one row per kind of reason (a record in one row), with up to three of
    each kind's videos and the manifest lines they are about (FILE:LINE)."""
    if not records:
        return [f"  {kind}: none"]
    lines = [f"  {kind}: {plural(len(records), 'video')}"]
    for reason, group in problem_groups(records):
        more = f" and {len(group) - 3} more" if len(group) > 3 else ""
        items = ", ".join(problem_item(record) for record in group[:3])
        lines.append(f"    {len(group):>6}  {problem_text(reason, group)}: {items}{more}")
    return lines


def _split_text(split: SplitReport, names: list[str]) -> list[str]:
    shards = plural(split.shards, "shard")
    sizes = (
        f"{human_bytes(split.file_bytes)} on disk (dataset_info: {human_bytes(split.info_bytes)})"
    )
    lines = [f"{split.name}: {plural(split.examples, 'example')} in {shards}, {sizes}"]
    if split.read < split.examples:
        lines.append(f"  (values below from the first {split.read} examples)")
    lines.append(f"  videos: {split.videos} (a video stored in parts counts once)")
    if split.with_audio is not None:
        lines.append(f"  with an audio stream: {split.with_audio} of {split.read} examples")
    lines += _class_lines(split, names)
    total = _time(float(split.durations.sum()))
    lines.append(f"  duration: {_spread(split.durations, ' s')}; total {total}")
    lines.append(f"  stored frames: {_spread(split.num_frames.astype(np.float64), '', 0)}")
    rates = collections.Counter(f"{r:g}" for r in split.fps if not np.isnan(r))
    listed = ", ".join(f"{r} fps x {n}" for r, n in rates.most_common(8)) or "none stored"
    more = (
        f" and {len(rates) - 8} more rates ({_spread(split.fps, ' fps')})" if len(rates) > 8 else ""
    )
    lines.append(f"  frame rate: {listed}{more}")
    sizes = ", ".join(f"{h}x{w} x {n}" for (h, w), n in split.frame_sizes.most_common(8))
    more = f" and {len(split.frame_sizes) - 8} more sizes" if len(split.frame_sizes) > 8 else ""
    lines.append(f"  frame size (h x w): {sizes or 'none'}{more}")
    kib = split.record_bytes.astype(np.float64) / 1024
    per_frame = split.record_bytes.sum() / max(1, split.num_frames.sum())
    lines.append(f"  record size: {_spread(kib, ' KiB', 1)}; {human_bytes(per_frame)} a frame")
    lines += _value_lines(split.stored)
    lines += _problem_lines("skipped", split.skipped)
    lines += _problem_lines("kept with a note", split.notes)
    return lines


def as_text(report: DatasetReport) -> str:
    """The report as lines for a terminal."""
    lines = [
        f"{report.dataset_dir}",
        f"  {report.name} {report.version}, {report.file_format}, "
        f"{len(report.class_names)} classes; "
        + ", ".join(f"{s.name} {s.examples}" for s in report.splits),
    ]
    for split in report.splits:
        lines += ["", *_split_text(split, report.class_names)]
    return "\n".join(lines)
