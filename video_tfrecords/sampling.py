"""Clip sampling that decodes only the frames a clip needs.

Videos are stored as a 1-D list of JPEG-encoded frames. `ClipDecoder` plugs
into `tfds.load(..., decoders={"video": ClipDecoder(...)})`: it picks the frame
indices of one or more clips, an optional crop box and flip per clip, and then
JPEG-decodes only the selected frames (and only the crop box of each).

Which clip is a pure function of a 64-bit key (`clip_plan`): with a `seed`,
the key mixes the seed with the video's content fingerprint, so every example
gets the same clip whatever the read order, sharding or shuffling; without
one, keys come from a `tf.random.Generator` that lives outside the input
pipeline, so every read draws fresh randomness. The TensorFlow path and the
NumPy path (`decode_batch_example_np`, used by `tfds.data_source`) run the
same plan and choose the same frames, crop box and flip.

JPEGs are decoded with libjpeg's accurate integer IDCT
(`dct_method="INTEGER_ACCURATE"`), the same as OpenCV and PIL, so both paths
return the same pixels. (TFDS's default video decoding uses the fast IDCT,
which differs by a few grey levels.) A crop box is decoded with
`tf.io.decode_and_crop_jpeg` plus a few pixels of margin, which makes it equal
to decoding the whole frame and then cropping.

Caveats:

* TFDS auto-caches small datasets *after* decoding, which would freeze the
  sampled clips; load with `read_config=tfds.ReadConfig(try_autocache=False)`
  unless the builder opts out of caching (`clip_dataset` always does).
* An unseeded decoder captures a `tf.random.Generator` variable in the input
  pipeline; tf.data service and iterator checkpoints do not carry its state.
  Seeded decoders use only stateless ops.
"""

from __future__ import annotations

import numbers
import os

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from video_tfrecords import clip_plan

__all__ = ["ClipDecoder", "EncodedFrames"]

MODES = ("random", "center", "uniform")
SHORT_VIDEO_POLICIES = ("loop", "repeat_last", "pad", "error")
CROP_MODES = ("random", "center")

# Extra pixels decoded around a crop box. With 4:2:0 chroma subsampling,
# libjpeg's "fancy" upsampling treats the edge of a cropped decode like an
# image edge; decoding a slightly larger window and slicing gives exactly the
# pixels of a full decode (2 px suffice; 4 for margin).
_CROP_MARGIN = 4
_DCT_METHOD = "INTEGER_ACCURATE"
_JPEG_MAGIC = b"\xff\xd8\xff"

# Everything here is plain Python control flow over static values; skip
# AutoGraph's source conversion when tf.data / tf.function trace it.
_no_autograph = tf.autograph.experimental.do_not_convert


# ---------------------------------------------------------------------------
# Checks with lazily built error messages.
# ---------------------------------------------------------------------------


def _check_tf(ok, message_fn):
    """Raises InvalidArgumentError with message_fn() when `ok` is false.

    The message (which may hash frames) is only computed on failure. Returns a
    tensor to use as a control dependency.
    """

    if tf.executing_eagerly():
        if not bool(ok):
            message = message_fn().numpy().decode("utf-8", "replace")
            raise tf.errors.InvalidArgumentError(None, None, message)
        return tf.constant(True)

    def fail():
        assert_op = tf.debugging.Assert(False, [message_fn()], summarize=1)
        with tf.control_dependencies([assert_op]):
            return tf.constant(False)

    return tf.cond(ok, lambda: tf.constant(True), fail)


def _message_tf(*parts):
    """Joins str / string-tensor / integer-tensor parts into one message."""
    pieces = []
    for part in parts:
        if isinstance(part, str):
            pieces.append(part)
        else:
            part = tf.convert_to_tensor(part)
            pieces.append(part if part.dtype == tf.string else tf.strings.as_string(part))
    return tf.strings.join(pieces)


def _video_label_tf(frames, name):
    """Identifier of a video for error messages (its name or fingerprint)."""
    if name is not None:
        # Backticks: tf.debugging.Assert escapes quotes in graph mode.
        return _message_tf("`", name, "`")
    return _message_tf(
        "(fingerprint ",
        clip_plan.video_fingerprint(frames),
        "; see video_tfrecords.clip_plan.video_fingerprint)",
    )


def _video_label_np(frames, name):
    """NumPy twin of `_video_label_tf`."""
    if name is not None:
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        return f"`{name}`"
    return f"(fingerprint {clip_plan.video_fingerprint_np(frames)}; see video_tfrecords.clip_plan.video_fingerprint)"


# ---------------------------------------------------------------------------
# Argument validation.
# ---------------------------------------------------------------------------


def is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def check_positive_int(name, value):
    if not is_int(value) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return int(value)


def _check_stride(stride):
    """Validates `stride`: a positive int or an inclusive (min, max) range."""
    if is_int(stride):
        return check_positive_int("stride", stride)
    if isinstance(stride, (tuple, list)) and len(stride) == 2 and all(is_int(s) for s in stride):
        lo, hi = int(stride[0]), int(stride[1])
        if 0 < lo <= hi:
            return (lo, hi) if lo < hi else lo
    raise ValueError(
        "stride must be a positive int or a (min, max) tuple of ints with "
        f"0 < min <= max, got {stride!r}."
    )


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")
    return value


def _check_crop_size(crop_size):
    if crop_size is None:
        return None
    if (
        isinstance(crop_size, (tuple, list))
        and len(crop_size) == 2
        and all(is_int(s) and s > 0 for s in crop_size)
    ):
        return int(crop_size[0]), int(crop_size[1])
    raise ValueError(f"crop_size must be None or two positive ints (h, w), got {crop_size!r}.")


# ---------------------------------------------------------------------------
# The decoders.
# ---------------------------------------------------------------------------


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
    """Decodes a clip (or several) out of a video of JPEG frames.

    Use it on a `tfds.features.Video(..., encoding_format="jpeg")` feature:

        ds = tfds.load("video_tfrecords", split="train",
                       decoders={"video": ClipDecoder(16, stride=2)})

    Args:
        num_frames: frames per clip (T).
        stride: step between frames, or an inclusive (min, max) range from which
            each clip draws its step (frame-rate jitter). A drawn step is capped so
            the clip fits in the video when possible.
        mode: "random" (start uniform over all valid starts), "center" (start
            (L - span) // 2, span = (T - 1) * stride + 1) or "uniform" (`num_clips`
            evenly spaced clips from the first to the last valid start).
        num_clips: number of clips. With "uniform" or `num_clips > 1` the output
            has a leading clip axis: [num_clips, T, H, W, 3]; otherwise it is
            [T, H, W, 3]. For "random", several clips are independent draws.
            "center" requires num_clips == 1.
        short_video: what to do when the video is shorter than the span: "loop"
            (indices wrap around), "repeat_last" (repeat the last frame), "pad"
            (black frames after the end) or "error".
        crop_size: optional (h, w) crop, one box per clip shared by its frames;
            only the box is decoded.
        crop: "random" or "center" placement of the crop box.
        flip: if True, each clip is flipped horizontally with probability 1/2.
        seed: optional int. With a seed the clip is a function of (seed, video
            content), independent of read order; without one every read draws
            fresh randomness.

    Output: uint8 tensor with static T, crop size and channels.
    """

    def __init__(
        self,
        num_frames: int,
        *,
        stride: int | tuple[int, int] = 1,
        mode: str = "random",
        num_clips: int = 1,
        short_video: str = "loop",
        crop_size: tuple[int, int] | None = None,
        crop: str = "random",
        flip: bool = False,
        seed: int | None = None,
    ):
        super().__init__()
        self.num_frames = check_positive_int("num_frames", num_frames)
        self.stride = _check_stride(stride)
        self.mode = _check_choice("mode", mode, MODES)
        self.num_clips = check_positive_int("num_clips", num_clips)
        if self.mode == "center" and self.num_clips != 1:
            raise ValueError(
                "mode='center' gives a single clip; use num_clips=1 or "
                "mode='uniform' for several evenly spaced clips."
            )
        self.short_video = _check_choice("short_video", short_video, SHORT_VIDEO_POLICIES)
        self.crop_size = _check_crop_size(crop_size)
        self.crop = _check_choice("crop", crop, CROP_MODES)
        if not isinstance(flip, (bool, np.bool_)):
            raise ValueError(f"flip must be a bool, got {flip!r}.")  # noqa: TRY004
        self.flip = bool(flip)
        if seed is not None and not is_int(seed):
            raise ValueError(f"seed must be None or an int, got {seed!r}.")
        self.seed = None if seed is None else int(seed)
        self._generator = None

    # -- properties ------------------------------------------------------------

    @property
    def multi_clip(self) -> bool:
        """Whether the output has a leading clip axis."""
        return self.mode == "uniform" or self.num_clips > 1

    @property
    def min_span(self) -> int:
        """Frames covered by a clip with the smallest stride."""
        lo = self.stride if isinstance(self.stride, int) else self.stride[0]
        return clip_plan.clip_span(self.num_frames, lo)

    @property
    def dtype(self):
        return tf.uint8

    def __repr__(self):
        return (
            f"ClipDecoder(num_frames={self.num_frames}, stride={self.stride!r}, "
            f"mode={self.mode!r}, num_clips={self.num_clips}, "
            f"short_video={self.short_video!r}, crop_size={self.crop_size!r}, "
            f"crop={self.crop!r}, flip={self.flip}, seed={self.seed!r})"
        )

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_generator"] = None  # A tf.Variable; recreated lazily.
        return state

    def setup(self, *, feature):
        encoding = getattr(feature, "encoding_format", "jpeg")
        if encoding != "jpeg":
            raise ValueError(
                f"ClipDecoder needs JPEG frames, but the feature {feature!r} uses "
                f"encoding_format={encoding!r}."
            )
        super().setup(feature=feature)

    # -- tfds.decode.Decoder hooks ----------------------------------------------

    @_no_autograph
    def decode_batch_example(self, serialized_example):
        """TFDS hook for a Video feature: the whole 1-D tensor of JPEG frames."""
        return self.sample(serialized_example, self.seed)

    @_no_autograph
    def decode_example(self, serialized_example):
        """Same as `decode_batch_example` (the input is the list of frames)."""
        return self.decode_batch_example(serialized_example)

    def decode_batch_example_np(self, serialized_example):
        """NumPy hook (e.g. `tfds.data_source`): same clip as the TF path."""
        return self.sample_np(serialized_example, self.seed)

    def decode_example_np(self, serialized_example):
        """Same as `decode_batch_example_np`."""
        return self.decode_batch_example_np(serialized_example)

    # -- keys --------------------------------------------------------------------

    def _fresh_key_tf(self):
        """A fresh uint64 per call, from a generator that outlives pipelines."""
        if self._generator is None:
            # Create the variable eagerly even when called while tracing a
            # tf.data function; its state then persists across iterators/epochs.
            with tf.init_scope(), tf.device("/cpu:0"):
                self._generator = tf.random.Generator.from_non_deterministic_state()
        return tf.bitcast(self._generator.uniform_full_int([], tf.int64), tf.uint64)

    def _key_tf(self, frames, seed):
        """uint64 key: from (seed or self.seed, video content), else fresh."""
        seed = self.seed if seed is None else seed
        if seed is None:
            return self._fresh_key_tf()
        return clip_plan.seeded_key_tf(seed, frames)

    def _key_np(self, frames, seed):
        """NumPy twin of `_key_tf` (fresh keys come from os.urandom)."""
        seed = self.seed if seed is None else seed
        if seed is None:
            return np.uint64(int.from_bytes(os.urandom(8), "little"))
        return clip_plan.seeded_key_np(seed, frames)

    # -- plans -----------------------------------------------------------------

    def _temporal_plan(self, ops, key, length):
        """[num_clips, T] frame indices (-1 = padding) for a video of `length`."""
        strides = clip_plan.clip_strides(
            ops, key, length, self.num_frames, self.stride, self.num_clips
        )
        spans = [clip_plan.clip_span(self.num_frames, s) for s in strides]
        starts = clip_plan.clip_starts(ops, key, length, spans, self.mode)
        return ops.stack(
            [
                clip_plan.fit_indices(
                    ops,
                    clip_plan.frame_indices(ops, start, s, self.num_frames),
                    length,
                    self.short_video,
                )
                for start, s in zip(starts, strides)
            ]
        )

    def _per_clip_boxes(self) -> bool:
        return self.crop_size is not None and self.crop == "random" and self.num_clips > 1

    @_no_autograph
    def plan(self, frames, seed=None, *, name=None):
        """The TF clip plan of `sample(frames, seed)`, without decoding pixels.

        Returns a dict with "indices" (int64 [num_clips, T], -1 = padded frame),
        "crop_offsets" (int64 [num_clips, 2], (y, x) of each box; zeros without
        crop) and "flip" (bool [num_clips]). `seed` is as in `sample`; without
        any seed every call draws a new plan.
        """
        frames = tf.convert_to_tensor(frames, tf.string)
        return self._plan_tf(frames, seed, name)[0]

    def _plan_tf(self, frames, seed, name):
        """Returns (plan, checks to depend on, frame (h, w) or None)."""
        length = tf.shape(frames, out_type=tf.int64)[0]
        label = lambda: _video_label_tf(frames, name)
        checks = [_check_tf(length > 0, lambda: _message_tf("Video ", label(), " has no frames."))]
        if self.short_video == "error":
            checks.append(
                _check_tf(
                    length >= self.min_span,
                    lambda: _message_tf(
                        "Video ",
                        label(),
                        " has ",
                        length,
                        " frames, but a clip of "
                        f"num_frames={self.num_frames} with stride={self.stride} "
                        f"spans {self.min_span} frames (short_video: error).",
                    ),
                )
            )
        with tf.control_dependencies(checks):
            key = self._key_tf(frames, seed)
            indices = self._temporal_plan(clip_plan.TFOps, key, length)
        plan = {"indices": indices}
        frame_hw = None
        if self.crop_size is not None:
            first = indices[0, 0]
            first_bytes = tf.gather(frames, first)
            checks.append(_check_jpeg_tf(first_bytes[None], first[None], label))
            with tf.control_dependencies(checks):
                frame_hw = tf.cast(tf.io.extract_jpeg_shape(first_bytes)[:2], tf.int64)
            h, w = self.crop_size
            checks.append(
                _check_tf(
                    tf.logical_and(frame_hw[0] >= h, frame_hw[1] >= w),
                    lambda: _message_tf(
                        f"crop_size ({h}, {w}) is larger than the frames of video ",
                        label(),
                        " (",
                        frame_hw[0],
                        "x",
                        frame_hw[1],
                        ").",
                    ),
                )
            )
            with tf.control_dependencies(checks):
                plan["crop_offsets"] = clip_plan.crop_offsets(
                    clip_plan.TFOps,
                    key,
                    frame_hw[0],
                    frame_hw[1],
                    self.crop_size,
                    self.crop,
                    self.num_clips,
                )
        else:
            plan["crop_offsets"] = tf.zeros([self.num_clips, 2], tf.int64)
        if self.flip:
            plan["flip"] = clip_plan.flip_flags(clip_plan.TFOps, key, self.num_clips)
        else:
            plan["flip"] = tf.zeros([self.num_clips], tf.bool)
        return plan, checks, frame_hw

    def plan_np(self, frames, seed=None, *, name=None):
        """NumPy twin of `plan`; equal to it for the same frames and seed."""
        return self._plan_np(frames, seed, name, decoded={})

    def _plan_np(self, frames, seed, name, decoded):
        """NumPy plan; frames decoded on the way are stored in `decoded`."""
        length = len(frames)
        label = lambda: _video_label_np(frames, name)
        if length == 0:
            raise ValueError(f"Video {label()} has no frames.")
        if self.short_video == "error" and length < self.min_span:
            raise ValueError(
                f"Video {label()} has {length} frames, but a clip of "
                f"num_frames={self.num_frames} with stride={self.stride} spans "
                f"{self.min_span} frames (short_video: error)."
            )
        with np.errstate(over="ignore"):
            key = self._key_np(frames, seed)
            indices = self._temporal_plan(clip_plan.NPOps, key, np.int64(length))
            plan = {"indices": np.asarray(indices, np.int64)}
            if self.crop_size is not None:
                first = int(indices[0, 0])
                decoded[first] = _decode_np(frames, first, label)
                height, width = decoded[first].shape[:2]
                h, w = self.crop_size
                if height < h or width < w:
                    raise ValueError(
                        f"crop_size ({h}, {w}) is larger than the frames of video "
                        f"{label()} ({height}x{width})."
                    )
                plan["crop_offsets"] = np.asarray(
                    clip_plan.crop_offsets(
                        clip_plan.NPOps,
                        key,
                        np.int64(height),
                        np.int64(width),
                        self.crop_size,
                        self.crop,
                        self.num_clips,
                    ),
                    np.int64,
                )
            else:
                plan["crop_offsets"] = np.zeros([self.num_clips, 2], np.int64)
            if self.flip:
                plan["flip"] = np.asarray(
                    clip_plan.flip_flags(clip_plan.NPOps, key, self.num_clips)
                )
            else:
                plan["flip"] = np.zeros([self.num_clips], bool)
        return plan

    # -- sampling --------------------------------------------------------------

    @_no_autograph
    def sample(self, frames, seed=None, *, name=None) -> tf.Tensor:
        """Samples and decodes clip(s) from a 1-D tensor of JPEG frames.

        Args:
            frames: 1-D string tensor, one encoded JPEG per frame.
            seed: an int / int tensor, or None for the decoder's own `seed`
                (fresh randomness on every call if that is None too). The clip is a
                function of (seed, video content); pass e.g. `fold_in(seed, epoch)`
                to get new but replayable clips each epoch.
            name: optional string (tensor) naming the video in error messages,
                e.g. the example's `filename`. Defaults to its fingerprint.

        Returns:
            uint8 [T, H, W, 3], or [num_clips, T, H, W, 3] (see class docstring).
        """
        frames = tf.convert_to_tensor(frames, tf.string)
        plan, checks, frame_hw = self._plan_tf(frames, seed, name)
        with tf.control_dependencies(checks):
            return self._decode_tf(frames, plan, frame_hw, name)

    def _decode_tf(self, frames, plan, frame_hw, name):
        """Decodes the planned frames, each distinct (frame, box) once."""
        num_clips, t = self.num_clips, self.num_frames
        length = tf.shape(frames, out_type=tf.int64)[0]
        flat = tf.reshape(plan["indices"], [num_clips * t])
        safe = tf.maximum(flat, 0)
        if self._per_clip_boxes():
            clip_of = tf.repeat(tf.range(num_clips, dtype=tf.int64), t)
            uids, inverse = tf.unique(clip_of * length + safe)
            u_frames, u_clips = uids % length, uids // length
        else:
            u_frames, inverse = tf.unique(safe)
            u_clips = tf.zeros_like(u_frames)
        u_bytes = tf.gather(frames, u_frames)
        if self.crop_size is None:
            inputs, decode = (u_bytes,), _decode_full_tf
            image_spec = tf.TensorSpec([None, None, 3], tf.uint8)
        else:
            offsets = tf.gather(plan["crop_offsets"], u_clips)
            inputs = (u_bytes, *_crop_windows_tf(offsets, frame_hw, self.crop_size))
            decode = lambda data, window, box: _decode_window_tf(data, window, box, self.crop_size)
            image_spec = tf.TensorSpec([*self.crop_size, 3], tf.uint8)
        n = num_clips * t

        def each_position():
            # The usual case: no frame repeats, so `inverse` is the identity.
            # n independent decode ops (inputs split by one unstack op each) run
            # in parallel on the executor, with no while loop and no gather of
            # the decoded clip.
            columns = [tf.unstack(x, num=n) for x in inputs]
            return tf.stack([decode(*row) for row in zip(*columns)])

        def each_distinct():
            # Short videos and overlapping clips repeat frames: decode each once.
            images = tf.map_fn(lambda row: decode(*row), inputs, fn_output_signature=image_spec)
            return tf.gather(images, inverse)

        label = lambda: _video_label_tf(frames, name)
        with tf.control_dependencies([_check_jpeg_tf(u_bytes, u_frames, label)]):
            all_distinct = tf.equal(tf.size(u_frames), n)
            clips = tf.cond(all_distinct, each_position, each_distinct)
        if self.short_video == "pad":
            valid = tf.reshape(flat >= 0, [-1, 1, 1, 1])
            clips = tf.where(valid, clips, tf.zeros_like(clips))
        clips = tf.reshape(clips, tf.concat([[num_clips, t], tf.shape(clips)[1:]], axis=0))
        shape = [num_clips, t, *self._static_hw(), 3]
        if self.flip:
            # Only the clips drawn for flipping pay for the mirror copy.
            flipped = [
                tf.cond(flip, lambda c=c: _mirror_tf(clips[c]), lambda c=c: clips[c])
                for c, flip in enumerate(tf.unstack(plan["flip"], num=num_clips))
            ]
            clips = tf.stack(flipped) if self.multi_clip else flipped[0][None]
        clips = tf.ensure_shape(clips, shape)
        return clips if self.multi_clip else clips[0]

    def _static_hw(self):
        """Static (h, w) of the output when known, else (None, None)."""
        if self.crop_size is not None:
            return self.crop_size
        feature = getattr(self, "_feature", None)
        shape = getattr(feature, "shape", None)
        if shape is not None and len(shape) == 3:
            return tuple(shape[:2])
        return (None, None)

    def sample_np(self, frames, seed=None, *, name=None) -> np.ndarray:
        """NumPy twin of `sample`: same frames, box and flip; same pixels.

        `frames` is a sequence (list or object array) of JPEG bytes.
        """
        decoded = {}
        plan = self._plan_np(frames, seed, name, decoded)
        label = lambda: _video_label_np(frames, name)
        for i in np.unique(plan["indices"]):
            if i >= 0 and int(i) not in decoded:
                decoded[int(i)] = _decode_np(frames, int(i), label)
        clips = []
        for c in range(self.num_clips):
            y, x = (int(v) for v in plan["crop_offsets"][c])
            clip = np.stack([decoded[max(int(i), 0)] for i in plan["indices"][c]])
            if self.crop_size is not None:
                h, w = self.crop_size
                clip = clip[:, y : y + h, x : x + w]
            if self.short_video == "pad":
                clip[plan["indices"][c] < 0] = 0
            if plan["flip"][c]:
                clip = clip[:, :, ::-1]
            clips.append(clip)
        clips = np.ascontiguousarray(np.stack(clips))
        return clips if self.multi_clip else clips[0]


def _check_jpeg_tf(data, frame_ids, label):
    """Checks that every frame in `data` starts with the JPEG marker."""
    bad = tf.not_equal(tf.strings.substr(data, 0, 3), _JPEG_MAGIC)
    return _check_tf(
        tf.logical_not(tf.reduce_any(bad)),
        lambda: _message_tf(
            "Frame ",
            tf.boolean_mask(frame_ids, bad)[0],
            " of video ",
            label(),
            " is not a valid JPEG.",
        ),
    )


def _decode_full_tf(data):
    """Decodes a whole JPEG frame to uint8 RGB."""
    return tf.io.decode_jpeg(data, channels=3, dct_method=_DCT_METHOD)


def _crop_windows_tf(offsets, frame_hw, crop_size):
    """Decode windows [n, 4] (each box plus a margin, inside the frame) and box offsets in them [n, 3].

    `offsets` are the boxes' (y, x) [n, 2]; the windows are the arguments of
    `decode_and_crop_jpeg`, the box offsets those of the `tf.slice` after it.
    """
    h, w = crop_size
    y, x = offsets[:, 0], offsets[:, 1]
    y0 = tf.maximum(y - _CROP_MARGIN, 0)
    x0 = tf.maximum(x - _CROP_MARGIN, 0)
    y1 = tf.minimum(y + h + _CROP_MARGIN, frame_hw[0])
    x1 = tf.minimum(x + w + _CROP_MARGIN, frame_hw[1])
    windows = tf.cast(tf.stack([y0, x0, y1 - y0, x1 - x0], axis=1), tf.int32)
    boxes = tf.cast(tf.stack([y - y0, x - x0, tf.zeros_like(y)], axis=1), tf.int32)
    return windows, boxes


def _decode_window_tf(data, window, box, crop_size):
    """Decodes only `window` of a frame and returns the crop_size box at `box` in it."""
    image = tf.io.decode_and_crop_jpeg(data, window, channels=3, dct_method=_DCT_METHOD)
    return tf.slice(image, box, [*crop_size, 3])


def _mirror_tf(clip):
    """Flips a [T, H, W, 3] clip left-right.

    Reversing axis 1 of the [T * H, W, 3] view takes half the time of
    reversing axis 2 of the clip itself.
    """
    shape = tf.shape(clip)
    rows = tf.reshape(clip, tf.stack([-1, shape[2], 3]))
    return tf.reshape(tf.reverse(rows, axis=[1]), shape)


def _decode_np(frames, index, label):
    """Decodes frame `index` to uint8 RGB with OpenCV (or PIL as a fallback)."""
    data = bytes(frames[index])
    image = None
    if data[:3] == _JPEG_MAGIC:
        try:
            import cv2

            flags = cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION
            bgr = cv2.imdecode(np.frombuffer(data, np.uint8), flags)
            image = None if bgr is None else bgr[..., ::-1]
        except ImportError:
            import io

            from PIL import Image

            try:
                image = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
            except OSError:
                image = None
    if image is None:
        raise ValueError(f"Frame {index} of video {label()} is not a valid JPEG.")
    return image
