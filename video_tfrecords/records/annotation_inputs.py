"""The stored annotations (2.4.0 on) as a clip reads them, one way for every reader.

`stored_annotations` takes the record's labels, label segments, captions and span by the
schema's names and gives them in `clips.labels.annotate`'s words; `segment_inputs` cuts the
frames and the clip inputs to the segment a `segment=True` clip is drawn in. `ClipSource`
(through `records.examples`, NumPy) and `ClipDecoder.decode_features` (TF tensors, the
range found in the graph) call both, so that every reader gives the same clip and labels.
"""

from __future__ import annotations

from collections.abc import Callable

from video_tfrecords.clips import labels
from video_tfrecords.records import schema

__all__ = ["INPUTS", "STORED", "nested", "segment_inputs", "stored_annotations"]


def _with_kinds(*names: str) -> tuple[tuple[str, str], ...]:
    """(name, kind in a record) of each stored feature, as `schema.Example` declares it."""
    return tuple((name, schema.record_kinds()[name][0]) for name in names)


# By kind: `clips.labels.annotate`'s word -> (the stored feature, its kind in a record).
INPUTS = {
    schema.LABELS_KIND: dict(zip(
        labels.ANNOTATION_INPUTS["labels"],
        _with_kinds(schema.LABELS, schema.SEGMENT_LABEL, schema.SEGMENT_START, schema.SEGMENT_END),
    )),
    schema.CAPTIONS_KIND: dict(zip(
        labels.ANNOTATION_INPUTS["captions"],
        _with_kinds(schema.CAPTION_TEXT, schema.CAPTION_START, schema.CAPTION_END),
    )),
}  # fmt: skip
# The stored features a clip's own annotations replace in a reader's output.
STORED = (*schema.ANNOTATIONS[schema.LABELS_KIND], *schema.ANNOTATIONS[schema.CAPTIONS_KIND])


def stored_annotations(kinds, take: Callable[[str, str], object]) -> dict | None:
    """The stored annotations of a record or example whose dataset stores the annotation
    `kinds` (`schema.annotation_kinds`), in `annotate`'s words: `take(feature, kind)` gives a
    stored value by its flattened name ("label_segments/start"); the span's start, where
    segments and captions begin at the earliest. None without labels or captions."""
    if not kinds & {schema.LABELS_KIND, schema.CAPTIONS_KIND}:
        return None
    found = {}
    if schema.SPANS_KIND in kinds:
        found[labels.EARLIEST] = take(schema.SPAN_START, "float")
    for kind in (schema.LABELS_KIND, schema.CAPTIONS_KIND):
        if kind in kinds:
            found.update({word: take(*stored) for word, stored in INPUTS[kind].items()})
    return found


def nested(example: dict) -> Callable[[str, str], object]:
    """`take` for an example as `tfds.load` gives it (a Sequence of dicts nested by name)."""

    def take(name: str, kind: str):
        value = example
        for part in name.split("/"):
            value = value[part]
        return value

    return take


def segment_inputs(
    spec, annotations: dict | None, times, frames, inputs: dict, key, *,
    find=labels.segment_range, cut=labels.FrameRange,
) -> tuple:  # fmt: skip
    """(frames, clip inputs, first frame) of the clip of `spec`: with `segment=True` and
    stored label segments, those of the segment drawn with `key` (`find`: `segment_range`,
    or its TF call; `cut(frames, first, stop)`: the segment's frames), each per-frame clip
    input (`schema.clip_inputs`) cut to it and no fingerprint (the frames' is theirs, hashed);
    else all of them, as they are. `times`: every stored frame's time."""
    if not (spec.segment and annotations is not None and "segment_start" in annotations):
        return frames, inputs, 0
    first, stop = find(times, annotations["segment_start"], annotations["segment_end"], key)
    inputs = {word: value for word, value in inputs.items() if word != "fingerprint"}
    for word, feature in schema.clip_inputs(spec).items():
        if feature == schema.TIMESTAMPS and inputs.get(word) is not None:
            inputs[word] = inputs[word][first:stop]
    return cut(frames, first, stop), inputs, first
