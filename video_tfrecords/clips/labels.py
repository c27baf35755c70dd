"""What a clip is labelled with, from the example's stored annotations (2.4.0 on: `labels`,
`label_segments`, `captions`) and the times of the clip's sampled frames.

One NumPy function, `clip_labels`, for every reader (ClipSource; ClipDecoder.decode_features
and clip_dataset through `tf.numpy_function`), so that all give the same result for a seed:

- `labels`: a float32 multi-hot vector over the classes: with labels="video" every label of
  the example; with labels="clip" those seen during the clip, as PyTorchVideo's Charades
  protocol labels a clip: the labels of the segments that overlap the clip's time span, and
  the labels given without a segment (they hold for the whole example).
- captions: with captions="random" one caption per view, drawn with the clip's key (seeded
  clips draw the same one on every reader); with "all" every caption. Timed captions count
  only when they overlap the clip (untimed ones span the whole example); a view that no
  caption overlaps gets "" (or none).

A view's time span runs from its first sampled frame's time to the end of its last one (the
next stored frame's time, or the last frame's time plus the gap before it).
"""

from __future__ import annotations

import numpy as np

from video_tfrecords.clips import keys
from video_tfrecords.clips.backends import NP_OPS
from video_tfrecords.util.errors import CorruptRecordError

__all__ = [
    "ANNOTATION_INPUTS", "CAPTION_COUNTER", "EARLIEST", "FRAME_TIMES", "FrameRange", "annotate",
    "caption_mode", "check_asked", "check_stored", "clip_captions", "clip_labels",
    "segment_range", "valid_label", "view_spans",
]  # fmt: skip

# What `annotate` reads, by kind: stored multi-labels (ids and timed segments), captions.
ANNOTATION_INPUTS = {
    "labels": ("labels", "segment_label", "segment_start", "segment_end"),
    "captions": ("text", "start", "end"),
}
# With them: every stored frame's time, and where the example's span starts (segments and
# captions begin there at the earliest).
FRAME_TIMES, EARLIEST = "frame_times", "earliest"
# The key's counters for the caption draws (one per view, + view) and the segment a clip is
# sampled in: clear of keys' others.
CAPTION_COUNTER = 2**34
SEGMENT_COUNTER = 2**35


def valid_label(label, num_classes: int):
    """Whether an example's `label` (an int, or an int tensor) is one of `num_classes` classes,
    or -1 (none: a JSON Lines line without one): every reader's check. (`&` is `and` for a
    Python bool and `logical_and` for a bool tensor: no array op per clip on the NumPy path.)"""
    return (label >= -1) & (label < num_classes)


def check_asked(spec, *, labels: bool, captions: bool, where: str) -> None:
    """Refuses the clip arguments that read annotations `where` (a dataset, some examples) does
    not store, rather than doing nothing with them: labels="clip" and segment=True need several
    labels (`labels`: JSON Lines `labels` or `segments`), captions="random"|"all" captions."""
    several = "several labels (JSON Lines `labels` or `segments`)"
    asked = []
    if not labels and spec.labels == "clip":
        asked.append(f"labels='clip' needs a dataset built with {several}")
    if not labels and spec.segment:
        asked.append(f"segment=True needs a dataset built with {several}")
    if not captions and spec.captions is not None:
        asked.append(f"captions={spec.captions!r} needs a dataset built with captions")
    if asked:
        raise ValueError(
            f"{'; '.join(asked)}, but {where} has none: leave the argument out (labels='video', "
            "segment=False and captions=None read any dataset)."
        )


def _check_timed(what: str, start, end, span_start=None, count: int | None = None) -> None:
    """Stored (start, end) times of segments or captions: as many as `count` things, each
    finite, start <= end, from the span's start (where the build clips them) on."""
    start, end = np.asarray(start, np.float64), np.asarray(end, np.float64)
    if start.shape != end.shape or (count is not None and start.size != count):
        raise CorruptRecordError(
            f"The example's {what} have {count if count is not None else start.size} items but "
            f"{start.size} starts and {end.size} ends."
        )
    lowest = 0.0 if span_start is None else float(span_start) - 1e-3
    if not (np.all(np.isfinite(start) & np.isfinite(end)) and np.all(start <= end)
            and np.all(start >= lowest)):  # fmt: skip
        raise CorruptRecordError(
            f"The example's {what} have times outside its span (each finite, from "
            f"{max(lowest, 0):g} s, start <= end): {start.tolist()[:4]}, {end.tolist()[:4]}."
        )


def check_stored(stored: dict, num_frames: int | None = None) -> None:
    """Raises CorruptRecordError unless `stored` annotations (`annotate`'s) fit together: the
    labels among the `num_classes`, a segment's label, start and end for each segment (within
    the example's span), a caption's text, start and end for each caption; and a timestamp for
    each of the example's `num_frames` frames (the highest planned one + 1 at least)."""
    times = np.asarray(stored.get(FRAME_TIMES, ()), np.float64)
    if num_frames is not None and times.size < num_frames:
        raise CorruptRecordError(
            f"The example has {num_frames} frames but {times.size} timestamps."
        )
    if not NP_OPS.valid_times(times):
        raise CorruptRecordError(
            "The example's timestamps are not times (each must be finite, >= 0, and none "
            "before the one before it)."
        )
    span_start = stored.get(EARLIEST)
    if "labels" in stored:
        classes = int(stored["num_classes"])
        for name in ("labels", "segment_label"):
            ids = np.asarray(stored[name], np.int64).reshape(-1)
            if ids.size and not (0 <= ids.min() and ids.max() < classes):
                bad = ids[(ids < 0) | (ids >= classes)][0]
                raise CorruptRecordError(
                    f"The example's {name} name class {bad}, not one of its {classes} classes."
                )
        count = np.size(stored["segment_label"])
        segments = (stored["segment_start"], stored["segment_end"])
        _check_timed("label segments", *segments, span_start, count)
    if "text" in stored:
        times = (stored.get("start", ()), stored.get("end", ()))
        _check_timed("captions", *times, span_start, len(stored["text"]))


def caption_mode(spec) -> str:
    """The spec's caption choice: its own, else one at random for random clips (training) and
    all of them for the evaluation modes."""
    if spec.captions is not None:
        return spec.captions
    return "random" if spec.mode in ("random", "segments") else "all"


def view_spans(indices: np.ndarray, timestamps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) seconds of each view: indices int64 [V, T] (-1: padding) into the stored
    frames timed `timestamps`."""
    times = np.asarray(timestamps, np.float64)
    if len(times) > 1:
        after = np.append(times[1:], times[-1] + (times[-1] - times[-2]))
    else:
        after = times + 1e-3  # one frame: a millisecond, not nothing
    starts, ends = [], []
    for row in np.asarray(indices).reshape(-1, np.shape(indices)[-1]):
        row = row[row >= 0]
        starts.append(times[row].min() if row.size else 0.0)
        ends.append(after[row].max() if row.size else 0.0)
    return np.asarray(starts), np.asarray(ends)


def clip_labels(
    *,
    labels,
    segment_label,
    segment_start,
    segment_end,
    num_classes: int,
    starts,
    ends,
    mode: str = "video",
) -> np.ndarray:
    """float32 [V, num_classes]: each view's multi-hot labels (`mode` "video" or "clip")."""
    labels = np.asarray(labels, np.int64).reshape(-1)
    segment_label = np.asarray(segment_label, np.int64).reshape(-1)
    out = np.zeros((len(starts), num_classes), np.float32)
    if mode == "video":
        out[:, labels] = 1.0
        return out
    untimed = np.setdiff1d(labels, segment_label)
    seg_start = np.asarray(segment_start, np.float64).reshape(1, -1)
    seg_end = np.asarray(segment_end, np.float64).reshape(1, -1)
    overlap = (seg_start < np.reshape(ends, (-1, 1))) & (seg_end > np.reshape(starts, (-1, 1)))
    out[:, untimed] = 1.0
    for view, seen in enumerate(overlap):
        out[view, segment_label[seen]] = 1.0
    return out


def clip_captions(
    *, text, start, end, starts, ends, key: int, mode: str
) -> list[bytes] | list[list[bytes]]:
    """Each view's caption (`mode` "random": bytes, drawn with `key`, a uint64) or captions
    ("all": a list), among those overlapping the view."""
    text = [bytes(t) for t in text]
    start = np.asarray(start, np.float64).reshape(1, -1)
    end = np.asarray(end, np.float64).reshape(1, -1)
    overlap = (start < np.reshape(ends, (-1, 1))) & (end > np.reshape(starts, (-1, 1)))
    chosen = []
    for view, seen in enumerate(overlap):
        candidates = [t for t, ok in zip(text, seen) if ok]
        if mode == "all":
            chosen.append(candidates)
        elif not candidates:
            chosen.append(b"")
        else:
            chosen.append(candidates[_randint(key, CAPTION_COUNTER + view, len(candidates))])
    return chosen


def annotate(spec, stored: dict, indices, timestamps, key) -> dict:
    """The clip's annotations, as every reader gives them: "labels" (float32 multi-hot,
    [classes] or [views, classes]) from `stored` "labels", "segment_*" and "num_classes";
    "caption" (bytes, or [views] of them) or "captions" (list of bytes, or one per view) from
    `stored` "text", "start", "end". `indices`: the plan's [V, T]; `key`: the clip's uint64.
    The stored values are checked first (`check_stored`): CorruptRecordError."""
    check_stored({**stored, FRAME_TIMES: timestamps}, int(np.max(indices, initial=-1)) + 1)
    starts, ends = view_spans(indices, timestamps)
    single = lambda values: values if spec.multi_clip else values[0]
    out = {}
    if "labels" in stored:
        multi_hot = clip_labels(
            labels=stored["labels"], segment_label=stored["segment_label"],
            segment_start=stored["segment_start"], segment_end=stored["segment_end"],
            num_classes=int(stored["num_classes"]), starts=starts, ends=ends, mode=spec.labels,
        )  # fmt: skip
        out["labels"] = single(multi_hot)
    if "text" in stored:
        mode = caption_mode(spec)
        chosen = clip_captions(
            text=stored["text"], start=stored["start"], end=stored["end"], starts=starts,
            ends=ends, key=key, mode=mode,
        )  # fmt: skip
        out["caption" if mode == "random" else "captions"] = single(chosen)
    return out


def segment_range(timestamps, segment_start, segment_end, key) -> tuple[int, int]:
    """[first, stop) of the stored frames a `segment=True` clip is sampled in: those timed in
    one of the segments, drawn with `key` (a uint64); all of them without segments, or when
    the drawn one holds no frame. CorruptRecordError for segments without a start and an end
    each, or times that are not times."""
    _check_timed("label segments", segment_start, segment_end)
    if not NP_OPS.valid_times(np.asarray(timestamps)):
        raise CorruptRecordError("The example's timestamps are not times.")
    times = np.asarray(timestamps, np.float32)
    starts = np.asarray(segment_start, np.float32).reshape(-1)
    ends = np.asarray(segment_end, np.float32).reshape(-1)
    if not len(starts):
        return 0, len(times)
    drawn = _randint(key, SEGMENT_COUNTER, len(starts))
    first = int(np.searchsorted(times, starts[drawn] - np.float32(1e-6)))
    stop = int(np.searchsorted(times, ends[drawn] - np.float32(1e-6)))
    return (first, stop) if stop > first else (0, len(times))


def _randint(key, counter: int, n: int) -> int:
    """`keys.randint` on NumPy, outside a clip's plan: its uint64 arithmetic wraps by design,
    which NumPy would warn of on every seeded read."""
    with NP_OPS.wrapping():
        return int(keys.randint(NP_OPS, np.uint64(key), counter, n))


class FrameRange:
    """Frames `first` to `stop` of a sequence of frames, indexed from 0 (negative: from its end)."""

    def __init__(self, frames, first: int, stop: int):
        self.frames, self.first, self.stop = frames, first, stop

    def __len__(self) -> int:
        return self.stop - self.first

    def __getitem__(self, index: int):
        length = len(self)
        index = index + length if index < 0 else index
        if not 0 <= index < length:
            raise IndexError(f"frame {index} of {length}")
        return self.frames[self.first + index]
