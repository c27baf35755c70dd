"""The stored format: each feature's name, the TFDS features of a config, the dataset's versions,
and which features a clip reads. A new stored field is added here; the build and every reader
follow (`features`, `clip_inputs`).

Imports neither TensorFlow nor TFDS: `features` imports TFDS to build its feature objects (which
load TensorFlow only to read), so a reader that only names features loads neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import tensorflow_datasets as tfds

__all__ = [
    "DATASET_NAME",
    "DATASET_VERSION",
    "RELEASE_NOTES",
    "REQUIRED",
    "annotation_kinds",
    "clip_inputs",
    "features",
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


def _scalar(dtype, doc: str) -> tfds.features.Scalar:
    import tensorflow_datasets as tfds

    return tfds.features.Scalar(dtype, doc=doc)


def _audio_features(config) -> dict:
    """The audio features of a config with `audio_rate` (none without: the features of
    datasets built before audio existed).

    A `Tensor` of int16, shape (samples, channels), stored as one bytes value
    (encoding="bytes"): 2 bytes a sample where an int64 list takes up to 10 (a negative
    varint), and a reader cuts a clip's window from a view of the record's bytes without
    parsing the rest; `tfds.load` gives it as an int16 tensor. Not `tfds.features.Audio`:
    in TFDS 4.9.10 it hands an array to the writer unencoded, so it can store int16 only
    as an int64 list.
    """
    import tensorflow_datasets as tfds

    if config.audio_rate is None:
        return {}
    return {
        AUDIO: tfds.features.Tensor(
            shape=(None, config.audio_channels),
            dtype=np.int16,
            encoding="bytes",
            doc="The video's default audio stream, int16 PCM; sample j plays at "
            "(round(timestamps[0] * audio_rate) + j) / audio_rate s (silence where it has none).",
        ),
        HAS_AUDIO: _scalar(np.bool_, "Whether the video has an audio stream FFmpeg decodes."),
        AUDIO_RATE: _scalar(np.int32, "Samples per second of `audio`."),
    }


def _timed(**more) -> tfds.features.Sequence:
    """A list of things with a `start` and an `end` in seconds on the frames' clock."""
    import tensorflow_datasets as tfds

    doc = "Seconds on the clock of `timestamps`."
    seconds = {key: _scalar(np.float32, doc) for key in (START_FIELD, END_FIELD)}
    return tfds.features.Sequence({**more, **seconds})


def _annotation_features(kinds) -> dict:
    """The features of the annotation `kinds` a build's manifests give (`ANNOTATIONS`)."""
    import tensorflow_datasets as tfds

    found = {}
    if SPANS_KIND in kinds:
        found[SPAN_START] = _scalar(
            np.float32, "Where the example's span starts in the source video, seconds (0: at its "
            "first frame; its first stored frame is the first at or after it)."
        )  # fmt: skip
        found[SPAN_END] = _scalar(
            np.float32, "Where the span ends (its frames are before it), seconds; clipped to "
            "the video's end."
        )  # fmt: skip
    if LABELS_KIND in kinds:
        found[LABELS] = tfds.features.Sequence(
            tfds.features.ClassLabel(),
            doc="Every label of the example (`label`, `labels`, its segments'), each once.",
        )
        found[LABEL_SEGMENTS] = _timed(**{SEGMENT_LABEL_FIELD: tfds.features.ClassLabel()})
    if CAPTIONS_KIND in kinds:
        found[CAPTIONS] = _timed(**{TEXT_FIELD: tfds.features.Text()})
    return found


def annotation_kinds(names) -> frozenset[str]:
    """The annotation kinds whose features are all among the feature `names`."""
    return frozenset(kind for kind, own in ANNOTATIONS.items() if set(own) <= set(names))


def features(config, kinds=frozenset()) -> tfds.features.FeaturesDict:
    """The stored features of a dataset built with `config` (a `VideoConfig`) from manifests
    that give the annotation `kinds` (`ANNOTATIONS`; none for text manifests)."""
    import tensorflow_datasets as tfds  # here: a reader that only names features never loads it

    size = config.size
    frame_shape = (None, *size, 3) if size else (None, None, None, 3)
    return tfds.features.FeaturesDict(
        {
            **_audio_features(config),
            **_annotation_features(kinds),
            VIDEO: tfds.features.Video(frame_shape, encoding_format="jpeg"),
            LABEL: tfds.features.ClassLabel(),
            FILENAME: tfds.features.Text(),
            FRAME_CHECKSUMS: tfds.features.Tensor(
                shape=(None,),
                dtype=np.uint32,
                doc="CRC32C of each JPEG frame: a reader checks the frames it decodes.",
            ),
            FRAME_SIZES: tfds.features.Tensor(
                shape=(None,),
                dtype=np.int32,  # a frame is under 2 GiB; TF's decode_raw reads no uint32
                encoding="bytes",  # little-endian, read as an array without a varint a frame
                doc="Size of each JPEG frame in bytes: a reader places a clip's frames in the "
                "record without reading the others.",
            ),
            VIDEO_CRC: _scalar(
                np.uint32,
                "CRC32C of `video` as the record stores it (each frame's tag, length and "
                "bytes): a reader checks a record's CRC32C without reading its frames.",
            ),
            FINGERPRINT: _scalar(
                np.int64,
                "The frames' content fingerprint (clips.keys.video_fingerprint), "
                "which seeded clips are keyed on.",
            ),
            FRAME_HEIGHT: _scalar(np.int32, "Height of every stored frame, in pixels."),
            FRAME_WIDTH: _scalar(np.int32, "Width of every stored frame, in pixels."),
            TIMESTAMPS: tfds.features.Tensor(
                shape=(None,),
                dtype=np.float32,
                doc="Time of each stored frame, in seconds from the video's first frame.",
            ),
            FPS: _scalar(np.float32, "Frame rate of the stored frames."),
            CODEC: tfds.features.Text(doc="FFmpeg's name of the source's codec."),
            SOURCE_HEIGHT: _scalar(np.int32, "Coded height of the source."),
            SOURCE_WIDTH: _scalar(np.int32, "Coded width of the source."),
            SOURCE_NUM_FRAMES: _scalar(
                np.int32, "Frames of the source video, counted by decoding."
            ),
            DISPLAY_HEIGHT: _scalar(np.int32, "Height a player shows (SAR, rotation)."),
            DISPLAY_WIDTH: _scalar(np.int32, "Width a player shows (SAR, rotation)."),
            SAMPLE_ASPECT_RATIO: _scalar(np.float32, "Width of a source pixel / height."),
            ROTATION: _scalar(np.int32, "Clockwise degrees the source was turned to be upright."),
            SEGMENT: _scalar(np.int32, "Which part of the video (see segment_frames)."),
            START_FRAME: _scalar(np.int32, "Index of the first stored frame within the video."),
        }
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
