"""The stored format: each feature's name, the typed example (`Example`: a field per feature,
declaring its TFDS feature, its kind in a record and which builds store it), the TFDS features
of a config, the dataset's versions, and which features a clip reads. A new stored feature is a
field of `Example` (and a name here); the build fills it, and every reader follows.

Imports neither TensorFlow nor TFDS: `features` imports TFDS to build its feature objects (which
load TensorFlow only to read), so a reader that only names features loads neither.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import tensorflow_datasets as tfds

__all__ = [
    "DATASET_NAME",
    "DATASET_VERSION",
    "RELEASE_NOTES",
    "REQUIRED",
    "Example",
    "annotation_kinds",
    "clip_inputs",
    "declared",
    "features",
    "record_kinds",
    "stored",
]

DATASET_NAME = "video_tfrecords"
# The dataset's version (the builder's VERSION); a config without one gets it.
DATASET_VERSION = "2.6.0"
RELEASE_NOTES = {
    "1.0.0": "Initial release.",
    "2.0.0": "Decoded with FFmpeg (PyAV): display aspect, per-frame timestamps, colour "
    "matrices, damaged packets concealed; segments of 1000 frames by default.",
    "2.1.0": "frame_crc32c: each frame's CRC32C, so that a reader checks only the frames "
    "it decodes.",
    "2.2.0": "video_fingerprint: the content fingerprint seeded clips are keyed on, so that "
    "a reader without TensorFlow need not hash frames on a record's first read.",
    "2.3.0": "Frames timed by FFmpeg's best-effort rule (packed B-frame AVIs: UCF101, "
    "HMDB51), interlaced frames deinterlaced (bwdif; deinterlace=False keeps them as "
    "decoded); with audio_rate, each example's audio on the frames' clock (audio, "
    "has_audio, audio_rate).",
    "2.4.0": "JSON Lines manifests (train.jsonl, ...): a span of a video per example "
    "(span_start, span_end; only its frames and audio are decoded and stored), several "
    "labels with their segments (labels, label_segments), captions (captions). Builds from "
    "text manifests keep the features of 2.3.0.",
    "2.5.0": "frame_height, frame_width: the size of every stored frame, so that a reader "
    "refuses a frame whose header claims another size before decoding it. start_frame is the "
    "index of the example's first frame in the video (a span's was 0; with fps or num_frames, "
    "the source frame's).",
    "2.6.0": "frame_sizes, video_crc32c: each frame's size in bytes and the CRC32C of the "
    "frames as stored, so that a reader places a clip's frames without reading the others, "
    "and checks a record's CRC32C without them.",
}

# Feature names.
VIDEO = "video"
LABEL = "label"
FILENAME = "filename"
FRAME_CHECKSUMS = "frame_crc32c"  # each frame's CRC32C (2.1.0 on)
FINGERPRINT = "video_fingerprint"  # the stored clips.keys.video_fingerprint (2.2.0 on)
FRAME_HEIGHT, FRAME_WIDTH = "frame_height", "frame_width"  # every frame's size (2.5.0 on)
# Where each frame lies, and the CRC32C of them all as stored (2.6.0 on: `frame_table`).
FRAME_SIZES, VIDEO_CRC = "frame_sizes", "video_crc32c"
SIZE_TABLES = {VIDEO: FRAME_SIZES}  # a bytes list -> the int list of its values' sizes
TIMESTAMPS = "timestamps"
FPS = "fps"
AUDIO = "audio"
AUDIO_RATE = "audio_rate"
SEGMENT = "segment"
START_FRAME = "start_frame"
SOURCE_NUM_FRAMES = "source_num_frames"
HAS_AUDIO = "has_audio"
# What FFmpeg says of the source video (`ingest/encoding.py` fills them from `video_io.Info`).
CODEC = "codec"
SOURCE_HEIGHT, SOURCE_WIDTH = "source_height", "source_width"
DISPLAY_HEIGHT, DISPLAY_WIDTH = "display_height", "display_width"
SAMPLE_ASPECT_RATIO = "sample_aspect_ratio"
ROTATION = "rotation"
REQUIRED = (VIDEO, LABEL, FILENAME)  # what makes a dataset a video_tfrecords one
# What JSON Lines manifests add (2.4.0 on), by kind of annotation: only the kinds a build's
# manifests give are stored, so that a build from text manifests keeps the features it had.
SPAN_START, SPAN_END = "span_start", "span_end"
LABELS, LABEL_SEGMENTS, CAPTIONS = "labels", "label_segments", "captions"
SPANS_KIND, LABELS_KIND, CAPTIONS_KIND = "spans", "labels", "captions"
# Which builds store a field of `Example`: every build, one with `audio_rate`, or one whose
# manifests give an annotation kind.
ALWAYS, WITH_AUDIO = "always", "audio"
ANNOTATIONS = {
    SPANS_KIND: (SPAN_START, SPAN_END),
    LABELS_KIND: (LABELS, LABEL_SEGMENTS),
    CAPTIONS_KIND: (CAPTIONS,),
}
# The fields of the timed lists (`label_segments`, `captions`), and their stored names
# ("label_segments/label": TFDS's flattened name of a Sequence's field in a record).
SEGMENT_LABEL_FIELD, TEXT_FIELD, START_FIELD, END_FIELD = "label", "text", "start", "end"
SEGMENT_LABEL, SEGMENT_START, SEGMENT_END = (
    f"{LABEL_SEGMENTS}/{field}" for field in (SEGMENT_LABEL_FIELD, START_FIELD, END_FIELD)
)
CAPTION_TEXT, CAPTION_START, CAPTION_END = (
    f"{CAPTIONS}/{field}" for field in (TEXT_FIELD, START_FIELD, END_FIELD)
)


def _tfds_features():
    """`tfds.features`, imported when a TFDS feature is made (a reader that only names or
    reads features never loads TFDS)."""
    import tensorflow_datasets as tfds

    return tfds.features


def _scalar(dtype, doc: str) -> Callable:
    return lambda config: _tfds_features().Scalar(dtype, doc=doc)


def _timed(**more) -> Callable:
    """A list of things with a `start` and an `end` in seconds on the frames' clock."""
    doc = "Seconds on the clock of `timestamps`."

    def make(config):
        seconds = {key: _scalar(np.float32, doc)(config) for key in (START_FIELD, END_FIELD)}
        return _tfds_features().Sequence({**{k: f(config) for k, f in more.items()}, **seconds})

    return make


def _audio(config):
    """int16 PCM, shape (samples, channels), stored as one bytes value (encoding="bytes"): 2
    bytes a sample where an int64 list takes up to 10 (a negative varint), and a reader cuts a
    clip's window from a view of the record's bytes without parsing the rest; `tfds.load` gives
    an int16 tensor. Not `tfds.features.Audio`: in TFDS 4.9.10 it hands an array to the writer
    unencoded, so it can store int16 only as an int64 list."""
    return _tfds_features().Tensor(
        shape=(None, config.audio_channels),
        dtype=np.int16,
        encoding="bytes",
        doc="The video's default audio stream, int16 PCM; sample j plays at "
        "(round(timestamps[0] * audio_rate) + j) / audio_rate s (silence where it has none).",
    )


def _video(config):
    size = config.size
    frame_shape = (None, *size, 3) if size else (None, None, None, 3)
    return _tfds_features().Video(frame_shape, encoding_format="jpeg")


def _list(dtype, doc: str, encoding: str = "none") -> Callable:
    return lambda config: _tfds_features().Tensor(
        shape=(None,), dtype=dtype, encoding=encoding, doc=doc
    )


def _class_label(config):
    return _tfds_features().ClassLabel()


def _text(doc: str | None = None) -> Callable:
    return lambda config: _tfds_features().Text(doc=doc)


def stored(
    make: Callable,
    kind,
    when: str = ALWAYS,
    *,
    many: bool = False,
    text: bool = False,
    encoded: str | None = None,
):
    """Declares a field of `Example`: `make(config)` gives its TFDS feature; `kind` what a
    record holds ("bytes", "int" or "float"; for a Sequence of fields, their kinds by name),
    `many` whether a list of them, `text` bytes that are UTF-8 text, `encoded` the NumPy dtype
    of a tensor stored as one bytes value; `when` which builds store it (ALWAYS, WITH_AUDIO: a
    config with `audio_rate`, or an annotation kind of `ANNOTATIONS` the manifests give)."""
    metadata = {"make": make, "kind": kind, "many": many, "text": text, "encoded": encoded}
    return dataclasses.field(default=None, metadata={**metadata, "when": when})


_SECONDS = {START_FIELD: "float", END_FIELD: "float"}


@dataclasses.dataclass(kw_only=True)
class Example:
    """One stored example: a field per stored feature, named as its record names it (each
    name one of the constants above). None: not stored. The build fills one for each piece
    of a video (`ingest/encoding.examples_of`), `features` makes the dataset's TFDS features
    from the fields, and readers take a record's values by the fields' kinds
    (`example_values.Values.take`, `example_values.example_of`)."""

    audio: np.ndarray | None = stored(_audio, "bytes", WITH_AUDIO, encoded="<i2")
    has_audio: bool | None = stored(
        _scalar(np.bool_, "Whether the video has an audio stream FFmpeg decodes."),
        "int",
        WITH_AUDIO,
    )
    audio_rate: int | None = stored(
        _scalar(np.int32, "Samples per second of `audio`."), "int", WITH_AUDIO
    )
    span_start: float | None = stored(
        _scalar(
            np.float32,
            "Where the example's span starts in the source video, seconds (0: "
            "at its first frame; its first stored frame is the first at or after it).",
        ),
        "float",
        SPANS_KIND,
    )
    span_end: float | None = stored(
        _scalar(
            np.float32,
            "Where the span ends (its frames are before it), seconds; clipped to the video's end.",
        ),
        "float",
        SPANS_KIND,
    )
    labels: list | None = stored(
        lambda config: _tfds_features().Sequence(
            _tfds_features().ClassLabel(),
            doc="Every label of the example (`label`, `labels`, its segments'), each once.",
        ),
        "int",
        LABELS_KIND,
        many=True,
    )
    label_segments: dict | None = stored(
        _timed(**{SEGMENT_LABEL_FIELD: _class_label}),
        {SEGMENT_LABEL_FIELD: "int", **_SECONDS},
        LABELS_KIND,
        many=True,
    )
    captions: dict | None = stored(
        _timed(**{TEXT_FIELD: _text()}),
        {TEXT_FIELD: "bytes", **_SECONDS},
        CAPTIONS_KIND,
        many=True,
        text=True,
    )
    video: list | None = stored(_video, "bytes", many=True)
    label: int | str | None = stored(_class_label, "int")
    filename: str | None = stored(_text(), "bytes", text=True)
    frame_crc32c: np.ndarray | None = stored(
        _list(np.uint32, "CRC32C of each JPEG frame: a reader checks the frames it decodes."),
        "int",
        many=True,
    )
    frame_sizes: np.ndarray | None = stored(
        # int32: a frame is under 2 GiB, and TF's decode_raw reads no uint32; encoding="bytes":
        # little-endian, read as an array without a varint a frame.
        _list(
            np.int32,
            "Size of each JPEG frame in bytes: a reader places a clip's frames in "
            "the record without reading the others.",
            "bytes",
        ),
        "bytes",
        encoded="<i4",
    )
    video_crc32c: int | None = stored(
        _scalar(
            np.uint32,
            "CRC32C of `video` as the record stores it (each frame's tag, length "
            "and bytes): a reader checks a record's CRC32C without reading its frames.",
        ),
        "int",
    )
    video_fingerprint: int | None = stored(
        _scalar(
            np.int64,
            "The frames' content fingerprint (clips.keys.video_fingerprint), "
            "which seeded clips are keyed on.",
        ),
        "int",
    )
    frame_height: int | None = stored(
        _scalar(np.int32, "Height of every stored frame, in pixels."), "int"
    )
    frame_width: int | None = stored(
        _scalar(np.int32, "Width of every stored frame, in pixels."), "int"
    )
    timestamps: np.ndarray | None = stored(
        _list(np.float32, "Time of each stored frame, in seconds from the video's first frame."),
        "float",
        many=True,
    )
    fps: float | None = stored(_scalar(np.float32, "Frame rate of the stored frames."), "float")
    codec: str | None = stored(_text("FFmpeg's name of the source's codec."), "bytes", text=True)
    source_height: int | None = stored(_scalar(np.int32, "Coded height of the source."), "int")
    source_width: int | None = stored(_scalar(np.int32, "Coded width of the source."), "int")
    source_num_frames: int | None = stored(
        _scalar(np.int32, "Frames of the source video, counted by decoding."), "int"
    )
    display_height: int | None = stored(
        _scalar(np.int32, "Height a player shows (SAR, rotation)."), "int"
    )
    display_width: int | None = stored(
        _scalar(np.int32, "Width a player shows (SAR, rotation)."), "int"
    )
    sample_aspect_ratio: float | None = stored(
        _scalar(np.float32, "Width of a source pixel / height."), "float"
    )
    rotation: int | None = stored(
        _scalar(np.int32, "Clockwise degrees the source was turned to be upright."), "int"
    )
    segment: int | None = stored(
        _scalar(np.int32, "Which part of the video (see segment_frames)."), "int"
    )
    start_frame: int | None = stored(
        _scalar(np.int32, "Index of the first stored frame within the video."), "int"
    )

    def stored_values(self) -> dict:
        """The example as TFDS's writer takes it: each stored feature's value by its name
        (the fields that are None are not stored); a required one missing: ValueError."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        missing = [name for name in REQUIRED if values[name] is None]
        if missing:
            raise ValueError(f"an example without {', '.join(missing)}")
        return {name: value for name, value in values.items() if value is not None}


def declared() -> tuple[dataclasses.Field, ...]:
    """`Example`'s fields, each a stored feature (its metadata: `stored`'s arguments)."""
    return dataclasses.fields(Example)


def record_kinds() -> dict[str, tuple[str, bool, bool]]:
    """Each stored name in a record (a Sequence's fields as TFDS flattens them:
    "label_segments/start") -> (its kind, whether a list, whether text), from `Example`."""
    return _kinds_of(Example)


@functools.cache
def _kinds_of(example_type) -> dict[str, tuple[str, bool, bool]]:
    found = {}
    for f in dataclasses.fields(example_type):
        kind, many, text = f.metadata["kind"], f.metadata["many"], f.metadata["text"]
        if isinstance(kind, dict):  # (only a Sequence's bytes field is text: `captions/text`)
            found.update(
                {f"{f.name}/{k}": (v, many, text and v == "bytes") for k, v in kind.items()}
            )
        else:
            found[f.name] = (kind, many, text)
    return found


def annotation_kinds(names) -> frozenset[str]:
    """The annotation kinds whose features are all among the feature `names`."""
    return frozenset(kind for kind, own in ANNOTATIONS.items() if set(own) <= set(names))


def features(config, kinds=frozenset()) -> tfds.features.FeaturesDict:
    """The stored features of a dataset built with `config` (a `VideoConfig`) from manifests
    that give the annotation `kinds` (`ANNOTATIONS`; none for text manifests): `Example`'s
    fields such a build stores."""
    builds = {ALWAYS, *kinds, *([WITH_AUDIO] if config.audio_rate is not None else [])}
    return _tfds_features().FeaturesDict(
        {f.name: f.metadata["make"](config) for f in declared() if f.metadata["when"] in builds}
    )


def clip_inputs(spec) -> dict[str, str]:
    """What a clip of `spec` (a `ClipSpec`) reads besides the frames: keyword of the clip
    decoders (`decode_np.sample_np`, `decode_tf.sample_tf`) -> the feature it comes from.

    Every reader takes these and only these from a record, so that all give the same clip:
    the video's name (for errors); with `fps` or `audio`, the frames' times (else the stored
    rate); with `audio`, the samples and their rate.
    """
    inputs = {"name": FILENAME}
    if spec.fps is not None or spec.audio:
        inputs.update(timestamps=TIMESTAMPS, source_fps=FPS)
    if spec.audio:
        inputs.update(audio=AUDIO, audio_rate=AUDIO_RATE)
    return inputs
