"""Which examples each video of a split gives: its manifest lines, grouped so that one decode of
a video makes the examples of all its spans, and what each stores beside its frames.

A JSON Lines manifest may name one video on several lines (ActivityNet's segments of a long
video, say), each with its own span; a split's lines of one video become one build task with
one `Part` per line, and the task decodes the video once, from the keyframe before each run
of spans to the run's end (`ranges`). The annotation features of a part (`part_features`) are
fixed here, when the tasks are made, from the manifest alone: the stored frames never change them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from video_tfrecords.ingest import manifest
from video_tfrecords.records import schema

# The kinds of annotation a dataset stores, each its own features (`schema.ANNOTATIONS`).
SPANS, LABELS, CAPTIONS = schema.SPANS_KIND, schema.LABELS_KIND, schema.CAPTIONS_KIND
# Seconds between spans of one video that are decoded through rather than sought over:
# seeking lands on the keyframe before the next span, typically 2 to 10 s back.
READ_THROUGH = 5.0


@dataclasses.dataclass(frozen=True, eq=False)
class Part:
    """One example-to-be of a video: its manifest line, label id, span and what it stores
    beside the frames (`part_features`)."""

    entry: manifest.Entry
    label: int  # the line's `label` id, -1 for none
    start: float  # seconds on the video's clock
    end: float  # math.inf: to the video's end
    features: dict  # labels, label_segments, captions: as the dataset's kinds ask

    @property
    def whole(self) -> bool:
        return self.start == 0.0 and self.end == math.inf

    def key(self) -> str:
        """What names the part's examples: the path, and the span unless it is the whole video."""
        path = self.entry.path
        return path if self.whole else f"{path}@{self.start!r}-{self.end!r}"


def feature_kinds(entries: Iterable[manifest.Entry]) -> frozenset[str]:
    """The kinds of annotation the manifests give (none for text manifests, whose builds keep
    the features they always had): a JSON line with any key beyond `path` and `label`
    gives SPANS (every example then says which part of its video it is), `labels` or
    `segments` give LABELS, `captions` CAPTIONS."""
    fields = set()
    for entry in entries:
        if entry.annotation is not None:
            fields |= entry.annotation.fields
    kinds = {SPANS} if fields else set()
    kinds |= {LABELS} if fields & {"labels", "segments"} else set()
    kinds |= {CAPTIONS} if "captions" in fields else set()
    return frozenset(kinds)


def group_by_video(entries: list[manifest.Entry]) -> list[list[manifest.Entry]]:
    """A split's entries grouped by video path, in order of each video's first line."""
    groups: dict[str, list[manifest.Entry]] = {}
    for entry in entries:
        groups.setdefault(entry.path, []).append(entry)
    return list(groups.values())


def part_of(entry: manifest.Entry, ids: dict[str, int], kinds: frozenset[str]) -> Part:
    """The entry's part: its span and its annotation features, label names turned to ids."""
    start, end = entry.span
    label = -1 if entry.label is None else ids[entry.label]
    return Part(entry, label, start, end, part_features(entry, ids, kinds))


def part_features(entry: manifest.Entry, ids: dict[str, int], kinds: frozenset[str]) -> dict:
    """The features a line stores beside its frames, for the dataset's `kinds`:

    - `labels`: the ids of the line's `label`, `labels` and the labels of its segments that
      overlap its span, sorted, each once (a multi-hot vector's ones);
    - `label_segments`: {label, start, end} of the segments overlapping the span, clipped to
      it, in time order;
    - `captions`: {text, start, end}, the timed ones overlapping the span (clipped to it);
      an untimed caption's times are filled in with the span's when its examples are read
      (`with_caption_times`).
    """
    note = entry.annotation
    start, end = entry.span
    features = {}
    if LABELS in kinds:
        segments = sorted(
            (max(s, start), min(e, end), ids[label])
            for label, s, e in (note.segments if note else ())
            if s < end and e > start
        )
        own = [ids[label] for label in (entry.label,) if label is not None]
        own += [ids[label] for label in (note.labels if note else ())]
        features[schema.LABELS] = sorted({*own, *(label for _, _, label in segments)})
        features[schema.LABEL_SEGMENTS] = {
            schema.SEGMENT_LABEL_FIELD: [label for _, _, label in segments],
            schema.START_FIELD: [s for s, _, _ in segments],
            schema.END_FIELD: [e for _, e, _ in segments],
        }
    if CAPTIONS in kinds:
        captions = [
            (text, None if s is None else max(s, start), None if e is None else min(e, end))
            for text, s, e in (note.captions if note else ())
            if s is None or (s < end and e > start)
        ]
        features[schema.CAPTIONS] = captions
    return features


def with_caption_times(captions: list, span_start: float, span_end: float) -> dict:
    """The stored form of `part_features`' captions: an untimed caption spans the example's
    span (it describes all of it)."""
    return {
        schema.TEXT_FIELD: [text for text, _, _ in captions],
        schema.START_FIELD: [span_start if s is None else s for _, s, _ in captions],
        schema.END_FIELD: [span_end if e is None else e for _, _, e in captions],
    }


def ranges(parts: Iterable[Part]) -> list[tuple[float, float]]:
    """The stretches of the video to decode for `parts`: their spans, overlapping ones (or
    ones closer than READ_THROUGH) joined, in time order."""
    merged: list[list[float]] = []
    for part in sorted(parts, key=lambda p: (p.start, p.end)):
        if merged and part.start <= merged[-1][1] + READ_THROUGH:
            merged[-1][1] = max(merged[-1][1], part.end)
        else:
            merged.append([part.start, part.end])
    return [(start, end) for start, end in merged]
