"""A prepared dataset's statistics per split, as `tfds.show_statistics` gives image datasets.

Counts of examples, shards and bytes come from what TFDS wrote (dataset_info.json);
the per-example values (label, duration, frames, frame rate, frame size, record
size) from reading every record (`stored`); the videos the build skipped or kept
with a note, from metadata.json (`info.metadata`), grouped by reason.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import re

import numpy as np

from video_tfrecords.records import dataset_files
from video_tfrecords.show.stored import SplitRecords
from video_tfrecords.util.text import human_bytes, plural

__all__ = ["DatasetReport", "SplitReport", "as_text", "dataset_report", "reason_kind"]

_BAR = 40  # characters of the longest histogram bar
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
    labels: np.ndarray
    durations: np.ndarray  # seconds
    num_frames: np.ndarray
    fps: np.ndarray  # nan where a record has none
    frame_sizes: collections.Counter  # (h, w) -> examples
    record_bytes: np.ndarray
    videos: int  # distinct files among the records read (a video of several parts counts once)
    with_audio: int | None  # examples whose video has an audio stream; None: no audio stored
    skipped: list[dict]  # metadata.json records {split, path, reason}
    notes: list[dict]


@dataclasses.dataclass
class DatasetReport:
    dataset_dir: str
    name: str
    version: str
    file_format: str
    class_names: list[str]
    splits: list[SplitReport]


def reason_kind(reason: str) -> list[str]:
    """The kinds of problem a skip or note names ('; '-separated), numbers as N: '3 packets
    with decode errors' and '1 packet with decode errors' are one kind."""
    kinds = []
    for part in reason.split("; "):
        part = re.sub(r"\d+(?:\.\d+)?", "N", part.strip())
        kinds.append(re.sub(r"\bN (\w{3,}?)s\b", r"N \1", part))
    return kinds


def _metadata(dataset_dir: str) -> dict:
    """metadata.json (what the build wrote into info.metadata), checked; empty if there is none."""
    return dataset_files.read_metadata(dataset_dir)


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
    return SplitReport(
        name=name,
        examples=sum(shards.lengths),
        shards=len(shards.paths),
        info_bytes=int(split.get("numBytes", 0)),
        file_bytes=sum(os.path.getsize(path) for path in shards.paths),
        read=count,
        labels=np.array([v.label for v in videos], np.int64),
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
    )


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


def _class_lines(labels: np.ndarray, names: list[str]) -> list[str]:
    """The class histogram: every class, or with many the fewest and most, and any missing."""
    classes = max(len(names), int(labels.max()) + 1 if len(labels) else 0)
    counts = np.bincount(labels[labels >= 0], minlength=classes)
    name = lambda c: names[c] if c < len(names) else str(c)
    present = int((counts > 0).sum())
    spread = f"{counts.min()} to {counts.max()} examples a class" if classes else "none"
    lines = [f"  classes: {present} of {classes} present; {spread}"]
    order = list(range(classes))
    if classes > _ALL_CLASSES:
        by_count = sorted(order, key=lambda c: (counts[c], c))
        order = by_count[:10] + by_count[-10:]
        lines.append("    (the 10 fewest, then the 10 most)")
    width = max((len(name(c)) for c in order), default=0)
    most = int(counts.max()) if classes else 0
    lines += [f"    {name(c):<{width}} {counts[c]:>6} {_bar(counts[c], most)}" for c in order]
    missing = [name(c) for c in range(classes) if counts[c] == 0]
    if missing:
        lines.append(f"    no examples: {', '.join(missing)}")
    return lines


def _problem_lines(kind: str, records: list[dict]) -> list[str]:
    """Skips or notes grouped by reason, with up to three of each reason's files."""
    if not records:
        return [f"  {kind}: none"]
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for record in records:
        for reason in reason_kind(record.get("reason", "")):
            groups[reason].append(record.get("path", "?"))
    lines = [f"  {kind}: {plural(len(records), 'video')}"]
    for reason, paths in sorted(groups.items(), key=lambda item: -len(item[1])):
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        lines.append(f"    {len(paths):>6}  {reason}: {', '.join(paths[:3])}{more}")
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
    lines += _class_lines(split.labels, names)
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
