"""TFDS decoders for the Video feature: sample clips as TFDS reads, or leave the frames encoded.

    ds = tfds.load("video_tfrecords", split="train",
                   decoders={"video": ClipDecoder(16, stride=2, crop_size=(224, 224))})

`ClipDecoder` is a thin adapter: the clip is described by a `ClipSpec`, planned
by `clips.plan` and decoded by `clips.decode_tf` (a TF graph, in tf.data) or
`clips.decode_np` (NumPy, in `tfds.data_source`); both give the same frames,
box, flip and pixels.

Caveats:

* TFDS auto-caches small datasets *after* decoding, which would freeze the
  sampled clips. This module registers the video_tfrecords builder, which opts
  out; for a dataset of another builder, load with
  `read_config=tfds.ReadConfig(try_autocache=False)` (`clip_dataset` never caches).
* Unseeded decoders draw their keys from a `tf.random.Generator` that lives
  outside the input pipeline; tf.data service and iterator checkpoints do not
  carry its state. Seeded decoders use only stateless ops.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

# A process that decodes with TFDS asks it for the dataset by name: register the builder, whose
# `_should_cache_ds` keeps TFDS from caching clips once decoded (they would repeat each epoch).
from video_tfrecords import video_tfrecords_dataset_builder  # noqa: F401  (registers it)
from video_tfrecords.clips import backends, decode_np, decode_tf, keys, labels, labels_tf
from video_tfrecords.clips.plan import video_label
from video_tfrecords.clips.spec import ClipSpec
from video_tfrecords.records import annotation_inputs, example_values, schema

__all__ = ["ClipDecoder", "EncodedFrames"]

# The decoders' code is plain Python over static values: AutoGraph need not convert it.
_no_autograph = tf.autograph.experimental.do_not_convert
# ClipSpec's arguments and properties, read through the decoder (decoder.num_frames, ...).
_SPEC_NAMES = frozenset(f.name for f in dataclasses.fields(ClipSpec)) | {"multi_clip", "min_span"}


class EncodedFrames(tfds.decode.Decoder):
    """Leaves a video's frames encoded: the 1-D tensor of JPEG bytes, as parsed.

    For sampling clips in your own `map` (as `clip_dataset` does). On a Video
    feature, `tfds.decode.SkipDecoding()` gives the same tensor but goes through
    TFDS's default `decode_batch_example`, a `tf.map_fn` over the frames that
    copies each frame twice: it doubles the cost of reading a record.
    """

    @property
    def dtype(self):
        return tf.string

    def decode_example(self, serialized_example):
        return serialized_example

    def decode_batch_example(self, serialized_example):
        return serialized_example

    def decode_example_np(self, serialized_example):
        return serialized_example

    def decode_batch_example_np(self, serialized_example):
        return serialized_example


class ClipDecoder(tfds.decode.Decoder):
    """Decodes a clip (or several) out of a video of JPEG frames, decoding only those frames.

    Use it on a `tfds.features.Video(..., encoding_format="jpeg")` feature.
    Its arguments are `ClipSpec`'s (documented there, with the same defaults),
    exposed as attributes (`decoder.num_frames`, ...).

    Output: uint8 [T, H, W, 3], or [num_clips * num_crops, T, H, W, 3] with
    several views (clip-major); static T, crop size and channels (and frame
    size when the feature fixes it).

    With `fps` or `audio`, the clip depends on each frame's timestamp (and the
    example's audio), and with labels="clip", `captions` or `segment` on the
    example's annotations, which a TFDS feature decoder does not see (it refuses
    them): load the video undecoded and map `decode_features` over the examples:

        ds = tfds.load(..., decoders={"video": EncodedFrames()})
        ds = ds.map(ClipDecoder(16, fps=30, audio=True).decode_features)

    A feature decoder never sees the label: `decode_features(num_classes=...)` checks it.
    """

    def __init__(
        self,
        num_frames: int,
        *,
        stride: int | tuple[int, int] = ClipSpec.stride,
        mode: str = ClipSpec.mode,
        num_clips: int = ClipSpec.num_clips,
        short_video: str = ClipSpec.short_video,
        crop_size: tuple[int, int] | None = ClipSpec.crop_size,
        crop: str = ClipSpec.crop,
        flip: bool = ClipSpec.flip,
        seed: int | None = ClipSpec.seed,
        short_side: int | tuple[int, int] | None = ClipSpec.short_side,
        fps: float | None = ClipSpec.fps,
        num_crops: int = ClipSpec.num_crops,
        crop_area: tuple[float, float] = ClipSpec.crop_area,
        crop_aspect: tuple[float, float] = ClipSpec.crop_aspect,
        audio: bool = ClipSpec.audio,
        labels: str = ClipSpec.labels,
        captions: str | None = ClipSpec.captions,
        segment: bool = ClipSpec.segment,
    ):
        super().__init__()
        self.spec = ClipSpec.from_arguments(locals())

    def __getattr__(self, name):
        if name in _SPEC_NAMES:
            return getattr(self.spec, name)
        raise AttributeError(f"'ClipDecoder' object has no attribute {name!r}")

    def __repr__(self):
        return repr(self.spec).replace("ClipSpec", "ClipDecoder", 1)

    @property
    def dtype(self):
        return tf.uint8

    def setup(self, *, feature):
        encoding = getattr(feature, "encoding_format", "jpeg")
        if encoding != "jpeg":
            raise ValueError(
                f"ClipDecoder needs JPEG frames, but the feature {feature!r} uses "
                f"encoding_format={encoding!r}."
            )
        super().setup(feature=feature)

    def _frame_shape(self):
        """The stored frames' static (h, w) from the feature, if it fixes them."""
        shape = getattr(self._feature, "shape", None)
        if shape is None or len(shape) < 3 or None in shape[-3:-1]:
            return None
        return tuple(int(s) for s in shape[-3:-1])

    # -- tfds.decode.Decoder hooks ----------------------------------------------

    def _frames_only(self):
        """A feature decoder sees only the frames: with `fps`, `audio` or the arguments that
        read annotations, say what to do instead."""
        needs = {
            "fps": ("each video's timestamps", None),
            "audio": ("each example's audio", False),
            "labels": ("the example's labels and their segments", "video"),
            "captions": ("the example's captions", None),
            "segment": ("the example's label segments", False),
        }
        for name, (what, default) in needs.items():
            value = getattr(self.spec, name)
            if value != default:
                shown = repr(value) if isinstance(value, str) else value
                raise ValueError(
                    f"ClipDecoder({name}={shown}) needs {what}, which a TFDS feature decoder "
                    "does not see: load with decoders={'video': EncodedFrames()} "
                    "and map decoder.decode_features over the examples."
                )

    @_no_autograph
    def decode_batch_example(self, serialized_example):
        """TFDS hook for a Video feature: the whole 1-D tensor of JPEG frames."""
        self._frames_only()
        return self.sample(serialized_example)

    @_no_autograph
    def decode_example(self, serialized_example):
        """Same as `decode_batch_example` (the input is the list of frames)."""
        self._frames_only()
        return self.sample(serialized_example)

    def decode_batch_example_np(self, serialized_example):
        """NumPy hook (e.g. `tfds.data_source`): the same clip as the TF path."""
        self._frames_only()
        return self.sample_np(serialized_example)

    def decode_example_np(self, serialized_example):
        """Same as `decode_batch_example_np`."""
        self._frames_only()
        return self.sample_np(serialized_example)

    @_no_autograph
    def decode_features(self, example: dict, seed=None, *, num_classes: int | None = None) -> dict:
        """An example (loaded with the video undecoded) with its "video" replaced by the clip.

        Reads "timestamps" (else "fps") for `fps` and `audio`, and names the video by its
        "filename" in errors. With `audio`, "audio" (int16 [N, C], as `tfds.load` gives
        it) is replaced by the clip's window: float32 [S, C] or [num_views, S, C].
        On a dataset with several labels (2.4.0 on), "labels" becomes the clip's float32
        multi-hot vector over `num_classes` (`info.features["labels"].feature.num_classes`),
        as the spec's `labels` says, and "label_segments" goes; with captions, "captions"
        becomes the clip's "caption" (tf.string, captions="random") or "captions" (all of
        them; with several views, [views, most] padded with ""), as `ClipSource` gives.
        With `num_classes`, "label" must be one of the classes or -1, and with `audio` the
        audio must cover the frames' timestamps, as `ClipSource` checks: else
        InvalidArgumentError "CorruptRecordError: Video `filename` ...".
        """
        example = dict(example)
        if self.spec.audio and schema.AUDIO not in example:
            raise ValueError(
                "ClipDecoder(audio=True) needs examples with an 'audio' feature: a dataset "
                "built with VideoConfig(audio_rate=...)."
            )
        annotated = schema.LABELS in example or schema.CAPTIONS in example
        labels.check_asked(
            self.spec, labels=schema.LABELS in example, captions=schema.CAPTIONS in example,
            where="these examples",
        )  # fmt: skip
        if annotated and seed is None and self.spec.seed is None:
            seed = keys.fresh_seed(backends.tf_ops())  # one draw for the clip and its labels
        inputs = {arg: example.get(name) for arg, name in schema.clip_inputs(self.spec).items()}
        if "tfds_id" in example and inputs["name"] is not None:  # ReadConfig(add_tfds_id=True)
            inputs["name"] = tf.strings.join([inputs["name"], " (", example["tfds_id"], ")"])
        frame_size = None  # every frame's stored size (2.5.0 on), that each header must say
        if schema.FRAME_HEIGHT in example and schema.FRAME_WIDTH in example:
            frame_size = (example[schema.FRAME_HEIGHT], example[schema.FRAME_WIDTH])
        frames, first, stored = example[schema.VIDEO], 0, {}
        if schema.LABEL in example and num_classes is not None:
            example[schema.LABEL] = _checked_label(example[schema.LABEL], num_classes,
                                                   frames, inputs["name"])  # fmt: skip
        if annotated:
            stored = self._stored_annotations(example, num_classes)
            key = labels_tf.example_key(self.spec, frames, seed, example.get(schema.FINGERPRINT))
            times = example[schema.TIMESTAMPS]
            frames, inputs, first = annotation_inputs.segment_inputs(
                self.spec, stored, times, frames, inputs, key,
                find=functools.partial(labels_tf.segment_range_tf, name=inputs["name"]),
                cut=lambda f, first, stop: f[first:stop],
            )  # fmt: skip
        clip = self.sample(frames, seed, frame_size=frame_size, **inputs)
        if annotated:
            plan_inputs = {k: v for k, v in inputs.items() if k not in ("audio", "audio_rate")}
            example.update(
                labels_tf.annotate_tf(
                    self.spec, frames, seed, stored, times, num_classes, key=key, first=first,
                    **plan_inputs,
                )
            )  # fmt: skip
        if self.spec.audio:
            example[schema.VIDEO], example[schema.AUDIO] = clip
        else:
            example[schema.VIDEO] = clip
        return example

    def _stored_annotations(self, example: dict, num_classes) -> dict:
        """The stored labels, segments and captions (`labels.annotate`'s names), taken out of
        the example: the clip's own replace them."""
        if schema.LABELS in example and num_classes is None:
            raise ValueError(
                "decode_features(num_classes=...) is needed on a dataset with several "
                "labels: info.features['labels'].feature.num_classes."
            )
        kinds = schema.annotation_kinds(example)
        stored = annotation_inputs.stored_annotations(kinds, annotation_inputs.nested(example))
        for name in annotation_inputs.STORED:
            example.pop(name, None)
        return stored

    # -- sampling ----------------------------------------------------------------

    @_no_autograph
    def sample(
        self, frames, seed=None, *, name=None, timestamps=None, source_fps=None, audio=None,
        audio_rate=None, frame_size=None,
    ):
        """Samples and decodes clip(s) from a 1-D string tensor of JPEG frames.

        `seed`: an int or int tensor, or None for the decoder's own seed (fresh
        randomness on every call if that is None too); pass e.g.
        `fold_in(seed, epoch)` for new but replayable clips every epoch.
        `name`: optional string (tensor) naming the video in error messages,
        e.g. the example's `filename`; defaults to its content fingerprint.
        `timestamps` (else `source_fps`): each frame's time, for `fps` and `audio`.
        `audio`, `audio_rate`: with `audio=True`, the example's int16 samples [N, C] and
        their rate; the result is then a pair (clip, audio window).
        `frame_size`: (height, width) every frame has (the example's stored size), if known.
        Every decoded frame's header is checked first (its size, its encoding, at most
        `jpeg.MAX_PIXELS`): InvalidArgumentError "CorruptRecordError: Frame i of video ...";
        and audio that does not cover the `timestamps` ("CorruptRecordError: Video ...").
        """
        ops = backends.tf_ops()
        frames = ops.tf.convert_to_tensor(frames, ops.tf.string)
        checks = _audio_checks(ops, self.spec, frames, name, audio, audio_rate, timestamps)
        sample = lambda: decode_tf.sample_tf(
            self.spec, frames, seed, name=name, frame_shape=self._frame_shape(),
            timestamps=timestamps, source_fps=source_fps, audio=audio, audio_rate=audio_rate,
            frame_size=frame_size,
        )  # fmt: skip
        return ops.after(checks, sample)

    def sample_np(
        self, frames, seed=None, *, name=None, timestamps=None, source_fps=None, audio=None,
        audio_rate=None,
    ):
        """`sample` without TensorFlow: same frames, box, flip, pixels and audio (and the same
        checks: CorruptRecordError)."""
        _audio_checks(backends.NP_OPS, self.spec, frames, name, audio, audio_rate, timestamps)
        return decode_np.sample_np(
            self.spec, frames, seed, name=name, timestamps=timestamps, source_fps=source_fps,
            audio=audio, audio_rate=audio_rate, frame_shape=self._frame_shape(),
        )

    @_no_autograph
    def plan(
        self, frames, seed=None, *, name=None, timestamps=None, source_fps=None
    ) -> dict[str, tf.Tensor]:
        """The plan of `sample(frames, seed)`, without decoding pixels.

        A dict with "indices" (int64 [num_views, T], -1 = padded frame),
        "crop_offsets" (int64 [num_views, 2], (y, x) of each box in the frame
        after `short_side`; zeros without crop) and "flip" (bool [num_views]).
        """
        return decode_tf.plan_tf(
            self.spec, frames, seed, name=name, timestamps=timestamps, source_fps=source_fps
        )

    def plan_np(
        self, frames, seed=None, *, name=None, timestamps=None, source_fps=None
    ) -> dict[str, np.ndarray]:
        """`plan` with NumPy; equal to it for the same frames and seed."""
        return decode_np.plan_np(
            self.spec, frames, seed, name=name, timestamps=timestamps, source_fps=source_fps
        )


def _checked_label(label, num_classes: int, frames, name):
    """The example's label once it is one of the classes or -1 (`labels.valid_label`, as
    `ClipSource` checks it): else InvalidArgumentError "CorruptRecordError: ..."."""
    ops = backends.tf_ops()
    check = ops.corrupt(
        labels.valid_label(label, num_classes),
        lambda: ("Video ", *video_label(ops, frames, name), " has label ", label,
                 f", not one of its {num_classes} classes."),
    )  # fmt: skip
    return ops.after([check], lambda: ops.identity(label))


def _audio_checks(ops, spec, frames, name, audio, rate, timestamps) -> list:
    """With audio: the check that it covers the frames (`example_values.check_covers`, as
    `ClipSource` checks it); a missing one is the window's error."""
    if not spec.audio or audio is None or rate is None:
        return []
    label = lambda: video_label(ops, frames, name)
    return [example_values.check_covers(ops, audio, rate, timestamps, label)]
