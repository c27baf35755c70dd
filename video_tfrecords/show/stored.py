"""What a record stores beyond ClipSource's output: its frames' times, count and size, its
labels with their segments, its span, and every scalar feature it stores.

Each record is read as a `schema.Example` (`example_values.example_of`) with the package's
TF-free record readers (`split_reader`, `example_parser`) from the files TFDS wrote; each
record's CRC32C is checked as it is read.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from video_tfrecords.clips import jpeg
from video_tfrecords.records import (
    dataset_files,
    example_values,
    schema,
    split_reader,
)

__all__ = ["SplitRecords", "StoredVideo"]


@dataclasses.dataclass(frozen=True)
class StoredVideo:
    """One record's video as stored: what `show` titles and `report` counts."""

    label: int
    filename: str
    num_frames: int
    times: np.ndarray  # float64 [num_frames], seconds (stored timestamps, else i / fps)
    fps: float | None
    frame_size: tuple[int, int] | None  # (h, w) from the first frame's JPEG header
    segment: int
    record_bytes: int
    has_audio: bool | None  # None: the dataset stores no audio
    labels: tuple[int, ...] | None = None  # `labels` (2.4.0 on); None: the dataset has none
    segments: tuple[tuple[int, float, float], ...] = ()  # `label_segments`: (label, start, end)
    span: tuple[float, float] | None = None  # (span_start, span_end), seconds; None: no spans
    # Every scalar feature the record stores (name -> str or NumPy scalar), those above too.
    values: dict = dataclasses.field(default_factory=dict)

    @property
    def classes(self) -> tuple[int, ...]:
        """Every class of the example: its `labels` where the dataset stores them (a JSON Lines
        build: `label` is -1 there unless the line gave one), else its `label` (none if -1)."""
        if self.labels is not None:
            return self.labels
        return (self.label,) if self.label >= 0 else ()

    @property
    def duration(self) -> float:
        """Seconds the stored frames cover: the last one's time plus one frame period."""
        if not self.num_frames:
            return 0.0
        period = 1 / self.fps if self.fps else 0.0
        return float(self.times[-1] - self.times[0]) + period


class SplitRecords:
    """The records of one split of a prepared dataset folder, by index."""

    def __init__(self, dataset_dir: str, split: str):
        self.split = split
        self.reader = split_reader.SplitReader(dataset_files.split_shards(dataset_dir, split))
        features = dataset_files.read_features(dataset_dir)
        self.kinds = schema.annotation_kinds(features)
        self.scalars = {name: f for name, f in features.items() if f.is_scalar}
        self.features = features

    def __len__(self) -> int:
        return len(self.reader)

    def video(self, index: int) -> StoredVideo:
        """Record `index` of the split, read as a `schema.Example`; a CorruptRecordError names
        its file if it is not an Example or holds values of the wrong kind (`example_values`)."""
        record = self.reader.read(index)
        where = lambda: f"{self.reader.where(index)}, split {self.split!r}"
        values = example_values.Values.of(record, where)
        example = example_values.example_of(values, self.features)
        frames = () if example.video is None else example.video
        fps = float(example.fps) if example.fps else None
        stamps = example.timestamps
        if stamps is not None and len(stamps) == len(frames):
            times = np.asarray(stamps, np.float64)
        else:
            times = np.arange(len(frames), dtype=np.float64) / (fps or 1.0)
        stores_audio = schema.HAS_AUDIO in values.parsed
        return StoredVideo(
            label=-1 if example.label is None else example.label,
            filename=example.filename or "",
            num_frames=len(frames),
            times=times,
            fps=fps,
            frame_size=jpeg.jpeg_size(frames[0]) if len(frames) else None,
            segment=example.segment or 0,
            record_bytes=len(memoryview(record).cast("B")),
            has_audio=bool(example.has_audio) if stores_audio else None,
            **self._annotations(example),
            values=example_values.scalars(values, self.scalars),
        )

    def _annotations(self, example: schema.Example) -> dict:
        """The example's `labels`, `label_segments` and span, where the dataset stores them."""
        found = {}
        if schema.LABELS_KIND in self.kinds:
            segments = example.label_segments or {}
            fields = (schema.SEGMENT_LABEL_FIELD, schema.START_FIELD, schema.END_FIELD)
            found["labels"] = tuple(
                int(c) for c in (example.labels if example.labels is not None else ())
            )
            found["segments"] = tuple(
                (int(c), float(start), float(end))
                for c, start, end in zip(*(segments.get(f, ()) for f in fields))
            )
        if schema.SPANS_KIND in self.kinds:
            found["span"] = (float(example.span_start or 0.0), float(example.span_end or 0.0))
        return found

    def close(self) -> None:
        self.reader.close()
