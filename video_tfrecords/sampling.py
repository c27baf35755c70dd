"""Clip sampling that decodes only the frames a clip needs.

Videos are stored as a 1-D list of JPEG-encoded frames. `ClipDecoder` plugs
into `tfds.load(..., decoders={"video": ClipDecoder(...)})`: it picks the frame
indices of one or more clips, an optional crop box and flip per clip, and then
JPEG-decodes only the selected frames (and only the crop box of each).

How a clip is chosen is a pure function of an unsigned 64-bit *key*:

* with a `seed`, key = combine(seed, video_fingerprint), where the fingerprint
  hashes the encoded bytes of the first, middle and last frames together with
  the number of frames. It depends only on the example's content, so a seeded
  decoder gives every example the same clip whatever the read order, sharding
  or shuffling;
* without a seed, the key is drawn from a `tf.random.Generator` that lives in a
  variable outside the input pipeline, so every read (every epoch, every new
  iterator) gets fresh randomness.

All random integers are derived from the key with a SplitMix64-style counter
hash written with plain uint64 arithmetic, so the TensorFlow path and the NumPy
path (`decode_batch_example_np`, used by `tfds.data_source`) choose exactly the
same frames, crop box and flip for the same example and seed.

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
from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

__all__ = [
    "ClipDecoder",
    "clip_dataset",
    "fold_in",
    "video_fingerprint",
    "video_fingerprint_np",
]

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

_U64 = 2**64
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_BYTE_SALT = 0x243F6A8885A308D3
_HASH_BYTES = 8192  # Bytes hashed at each end of a frame for its fingerprint.
# Counter slots of the per-clip random draws (counter = 8 * clip + slot).
_SLOT_STRIDE, _SLOT_START, _SLOT_CROP_Y, _SLOT_CROP_X, _SLOT_FLIP = range(5)


# ---------------------------------------------------------------------------
# Array backends: the clip plan is written once and run with TF or NumPy.
# ---------------------------------------------------------------------------


class _TFOps:
    """TensorFlow implementations of the few ops the clip plan needs."""

    u64 = staticmethod(lambda x: tf.cast(x, tf.uint64))
    i64 = staticmethod(lambda x: tf.cast(x, tf.int64))
    maximum = staticmethod(tf.maximum)
    minimum = staticmethod(tf.minimum)
    where = staticmethod(tf.where)

    @staticmethod
    def shr(x, n):
        return tf.bitwise.right_shift(x, tf.constant(n, tf.uint64))

    @staticmethod
    def arange(n):
        return tf.range(n, dtype=tf.int64)

    @staticmethod
    def stack(xs):
        return tf.stack(xs)


class _NPOps:
    """NumPy implementations of the few ops the clip plan needs."""

    u64 = staticmethod(np.uint64)
    i64 = staticmethod(np.int64)
    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    where = staticmethod(np.where)

    @staticmethod
    def shr(x, n):
        return x >> np.uint64(n)

    @staticmethod
    def arange(n):
        return np.arange(n, dtype=np.int64)

    @staticmethod
    def stack(xs):
        return np.stack(xs)


def _mix64(ops, x):
    """SplitMix64 finalizer: a bijective scramble of a uint64 value."""
    x = (x ^ ops.shr(x, 30)) * _MIX1
    x = (x ^ ops.shr(x, 27)) * _MIX2
    return x ^ ops.shr(x, 31)


def _combine(ops, a, b):
    """Hashes two uint64 values into one."""
    return _mix64(ops, a ^ _mix64(ops, b + _GOLDEN))


def _draw(ops, key, counter):
    """The `counter`-th uint64 of the SplitMix64 stream started at `key`."""
    return _mix64(ops, key + ((counter + 1) * _GOLDEN) % _U64)


def _randint(ops, key, counter, n):
    """An integer in [0, n) (n >= 1) from the key's stream; bias < n / 2**64."""
    return ops.i64(_draw(ops, key, counter) % ops.u64(n))


# ---------------------------------------------------------------------------
# Clip plan: which frames, which crop box, which flip.
# ---------------------------------------------------------------------------


def _clip_strides(ops, key, length, num_frames, stride, num_clips):
    """Frame step of each clip: fixed, or drawn from an inclusive range.

    A drawn step is capped so that the clip still fits in the video (if even
    the smallest step does not fit, the smallest is used and the short-video
    policy applies).
    """
    if isinstance(stride, int):
        return [stride] * num_clips
    lo, hi = stride
    if num_frames == 1:
        top = hi
    else:
        fit = (length - 1) // (num_frames - 1)
        top = ops.minimum(ops.maximum(fit, lo), hi)
    return [lo + _randint(ops, key, 8 * c + _SLOT_STRIDE, top - lo + 1) for c in range(num_clips)]


def _clip_span(num_frames, stride):
    """Number of video frames covered by a clip."""
    return (num_frames - 1) * stride + 1


def _clip_starts(ops, key, length, spans, mode):
    """First frame of each clip: uniform over valid starts, centred or evenly spaced."""
    num_clips = len(spans)
    starts = []
    for c, span in enumerate(spans):
        room = ops.maximum(length - span, 0)  # last valid start
        if mode == "random":
            starts.append(_randint(ops, key, 8 * c + _SLOT_START, room + 1))
        elif mode == "center" or num_clips == 1:
            starts.append(room // 2)
        else:  # uniform
            starts.append((c * room) // (num_clips - 1))
    return starts


def _frame_indices(ops, start, stride, num_frames):
    """Indices start, start + stride, ... of one clip (may run past the end)."""
    return start + ops.arange(num_frames) * stride


def _fit_indices(ops, indices, length, policy):
    """Maps out-of-range indices per short-video policy; -1 marks a padded frame."""
    if policy == "loop":
        return indices % length
    if policy == "repeat_last":
        return ops.minimum(indices, length - 1)
    if policy == "pad":
        return ops.where(indices < length, indices, -1)
    return indices  # "error": checked before.


def _crop_offsets(ops, key, height, width, crop_size, crop, num_clips):
    """Top-left corner (y, x) of each clip's crop box."""
    h, w = crop_size
    room_y = ops.maximum(height - h, 0)
    room_x = ops.maximum(width - w, 0)
    offsets = []
    for c in range(num_clips):
        if crop == "random":
            y = _randint(ops, key, 8 * c + _SLOT_CROP_Y, room_y + 1)
            x = _randint(ops, key, 8 * c + _SLOT_CROP_X, room_x + 1)
        else:
            y, x = room_y // 2, room_x // 2
        offsets.append(ops.stack([y, x]))
    return ops.stack(offsets)


def _flip_flags(ops, key, num_clips):
    """One horizontal-flip coin per clip."""
    return ops.stack([(_draw(ops, key, 8 * c + _SLOT_FLIP) & 1) == 1 for c in range(num_clips)])


# ---------------------------------------------------------------------------
# Example identity and seeds.
# ---------------------------------------------------------------------------


def _sum_hash_tf(data):
    """Position-aware uint64 hash of a scalar string tensor."""
    b = tf.cast(tf.io.decode_raw(data, tf.uint8), tf.uint64)
    pos = tf.cast(tf.range(tf.size(b, out_type=tf.int64)), tf.uint64)
    return tf.reduce_sum(_mix64(_TFOps, pos * 256 + b + _BYTE_SALT))


def _sum_hash_np(data: bytes):
    """NumPy twin of `_sum_hash_tf`."""
    b = np.frombuffer(data, np.uint8).astype(np.uint64)
    pos = np.arange(b.size, dtype=np.uint64)
    return np.uint64(_mix64(_NPOps, pos * np.uint64(256) + b + np.uint64(_BYTE_SALT)).sum())


def _bytes_hash_tf(data):
    """uint64 hash of an encoded frame: its length, first and last _HASH_BYTES bytes.

    Bounded so that large frames cost no more than small ones.
    """
    size = tf.strings.length(data)
    head = tf.strings.substr(data, 0, _HASH_BYTES)
    tail = tf.strings.substr(data, tf.maximum(size - _HASH_BYTES, 0), _HASH_BYTES)
    h = _combine(_TFOps, _sum_hash_tf(head), _sum_hash_tf(tail))
    return _combine(_TFOps, h, tf.cast(size, tf.uint64))


def _bytes_hash_np(data):
    """NumPy twin of `_bytes_hash_tf`."""
    data = bytes(data)
    head, tail = data[:_HASH_BYTES], data[max(len(data) - _HASH_BYTES, 0) :]
    h = _combine(_NPOps, _sum_hash_np(head), _sum_hash_np(tail))
    return _combine(_NPOps, h, np.uint64(len(data)))


@tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
def _fingerprint_u64_tf(frames):
    """uint64 identity of a video: first/middle/last frame bytes and the length.

    A tf.function, so graphs that need it in several places (key, error
    messages) trace it once and call it.
    """
    length = tf.shape(frames, out_type=tf.int64)[0]
    padded = tf.concat([frames, [b""]], axis=0)  # An empty video hashes b"".
    h = tf.cast(length, tf.uint64)
    for i in (0, length // 2, tf.maximum(length - 1, 0)):
        h = _combine(_TFOps, h, _bytes_hash_tf(padded[i]))
    return h


def _fingerprint_u64_np(frames):
    """NumPy twin of `_fingerprint_u64_tf`."""
    length = len(frames)
    h = np.uint64(length)
    for i in (0, length // 2, max(length - 1, 0)):
        h = _combine(_NPOps, h, _bytes_hash_np(frames[i] if length else b""))
    return h


@_no_autograph
def video_fingerprint(frames) -> tf.Tensor:
    """int64 content identity of a video given as a 1-D tensor of encoded frames.

    It hashes the encoded bytes of the first, middle and last frames and the
    number of frames; `video_fingerprint_np` computes the same value. Error
    messages of `ClipDecoder` name videos by this value.
    """
    frames = tf.convert_to_tensor(frames, tf.string)
    return tf.bitcast(_fingerprint_u64_tf(frames), tf.int64)


def video_fingerprint_np(frames) -> int:
    """NumPy/Python twin of `video_fingerprint`."""
    with np.errstate(over="ignore"):
        return _to_signed(_fingerprint_u64_np(frames))


def _to_signed(u) -> int:
    """uint64 -> Python int in the int64 range."""
    v = int(u)
    return v - _U64 if v >= 2**63 else v


def _is_tensor(x) -> bool:
    return isinstance(x, (tf.Tensor, tf.Variable))


def _seed_u64_tf(seed):
    """A seed (Python int or integer tensor) as a uint64 tensor."""
    if isinstance(seed, numbers.Integral):
        return tf.constant(int(seed) % _U64, tf.uint64)
    seed = tf.convert_to_tensor(seed)
    if seed.dtype == tf.uint64:
        return seed
    return tf.bitcast(tf.cast(seed, tf.int64), tf.uint64)


def _seed_u64_np(seed):
    """A seed (Python or NumPy integer) as np.uint64."""
    return np.uint64(int(seed) % _U64)


@_no_autograph
def fold_in(seed, data):
    """Derives a new int64 seed from `seed` and `data`, e.g. (user seed, epoch).

    With Python ints it returns a Python int; if either argument is a tensor it
    returns an int64 tensor with the same value.
    """
    if _is_tensor(seed) or _is_tensor(data):
        u = _combine(_TFOps, _seed_u64_tf(seed), _seed_u64_tf(data))
        return tf.bitcast(u, tf.int64)
    with np.errstate(over="ignore"):
        return _to_signed(_combine(_NPOps, _seed_u64_np(seed), _seed_u64_np(data)))


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
        video_fingerprint(frames),
        "; see sampling.video_fingerprint)",
    )


def _video_label_np(frames, name):
    """NumPy twin of `_video_label_tf`."""
    if name is not None:
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        return f"`{name}`"
    return f"(fingerprint {video_fingerprint_np(frames)}; see sampling.video_fingerprint)"


# ---------------------------------------------------------------------------
# Argument validation.
# ---------------------------------------------------------------------------


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _check_positive_int(name, value):
    if not _is_int(value) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return int(value)


def _check_stride(stride):
    """Validates `stride`: a positive int or an inclusive (min, max) range."""
    if _is_int(stride):
        return _check_positive_int("stride", stride)
    if isinstance(stride, (tuple, list)) and len(stride) == 2 and all(_is_int(s) for s in stride):
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
        and all(_is_int(s) and s > 0 for s in crop_size)
    ):
        return int(crop_size[0]), int(crop_size[1])
    raise ValueError(f"crop_size must be None or two positive ints (h, w), got {crop_size!r}.")


# ---------------------------------------------------------------------------
# The decoder.
# ---------------------------------------------------------------------------


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
        self.num_frames = _check_positive_int("num_frames", num_frames)
        self.stride = _check_stride(stride)
        self.mode = _check_choice("mode", mode, MODES)
        self.num_clips = _check_positive_int("num_clips", num_clips)
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
        if seed is not None and not _is_int(seed):
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
        return _clip_span(self.num_frames, lo)

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
        return _combine(_TFOps, _seed_u64_tf(seed), _fingerprint_u64_tf(frames))

    def _key_np(self, frames, seed):
        """NumPy twin of `_key_tf` (fresh keys come from os.urandom)."""
        seed = self.seed if seed is None else seed
        if seed is None:
            return np.uint64(int.from_bytes(os.urandom(8), "little"))
        return _combine(_NPOps, _seed_u64_np(seed), _fingerprint_u64_np(frames))

    # -- plans -----------------------------------------------------------------

    def _temporal_plan(self, ops, key, length):
        """[num_clips, T] frame indices (-1 = padding) for a video of `length`."""
        strides = _clip_strides(ops, key, length, self.num_frames, self.stride, self.num_clips)
        spans = [_clip_span(self.num_frames, s) for s in strides]
        starts = _clip_starts(ops, key, length, spans, self.mode)
        return ops.stack(
            [
                _fit_indices(
                    ops,
                    _frame_indices(ops, start, s, self.num_frames),
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
            indices = self._temporal_plan(_TFOps, key, length)
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
                plan["crop_offsets"] = _crop_offsets(
                    _TFOps,
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
            plan["flip"] = _flip_flags(_TFOps, key, self.num_clips)
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
            indices = self._temporal_plan(_NPOps, key, np.int64(length))
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
                    _crop_offsets(
                        _NPOps,
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
                plan["flip"] = np.asarray(_flip_flags(_NPOps, key, self.num_clips))
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
        if self.flip:
            flips = tf.reshape(plan["flip"], [num_clips, 1, 1, 1, 1])
            clips = tf.where(flips, tf.reverse(clips, axis=[3]), clips)
        clips = tf.ensure_shape(clips, [num_clips, t, *self._static_hw(), 3])
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


# ---------------------------------------------------------------------------
# Convenience input pipeline.
# ---------------------------------------------------------------------------


def clip_dataset(
    split: str = "train",
    *,
    num_frames: int,
    batch_size: int,
    training: bool = True,
    seed: int | None = None,
    data_dir: str | None = None,
    builder_kwargs: Mapping[str, Any] | None = None,
    shuffle_buffer: int = 256,
    num_epochs: int | None = None,
    dtype: tf.dtypes.DType = tf.float32,
    num_parallel_calls: int = tf.data.AUTOTUNE,
    name: str = "video_tfrecords",
    **clip_kwargs,
) -> tf.data.Dataset:
    """A batched `(clip, label)` dataset for training or evaluation.

    Reads `name` with TFDS without decoding the videos, then samples and
    decodes one clip per example with `ClipDecoder(num_frames, **clip_kwargs)`.

    Training (`training=True`): files and examples are shuffled, clips default
    to mode="random" with random crops, the dataset repeats `num_epochs` times
    (forever if None) and batches drop the remainder (static batch size).
    Each epoch e uses the seed `fold_in(seed, e)` for example shuffling and
    clip sampling, so clips change every epoch yet a seeded run replays
    exactly; without a seed each epoch draws a fresh random seed.

    Evaluation (`training=False`): one pass (unless `num_epochs`), no
    shuffling, clips default to mode="center" / crop="center", and the last
    partial batch is kept.

    Args:
        split: TFDS split.
        num_frames: frames per clip.
        batch_size: clips per batch.
        training: training or evaluation defaults (see above).
        seed: optional int for a reproducible pipeline.
        data_dir: TFDS data directory.
        builder_kwargs: forwarded to `tfds.load` (e.g. {"config": ...}).
        shuffle_buffer: example shuffle buffer (training only).
        num_epochs: number of passes; None = forever in training, 1 in eval.
        dtype: tf.float32 (default) gives values in [0, 1]; tf.uint8 keeps raw
            bytes (4x less memory; normalise on the accelerator).
        num_parallel_calls: parallelism of clip decoding.
        name: registered TFDS dataset name.
        **clip_kwargs: other `ClipDecoder` arguments (stride, mode, num_clips,
            short_video, crop_size, crop, flip).

    Returns:
        A `tf.data.Dataset` of `(clip, label)` batches.
    """
    if "seed" in clip_kwargs:
        raise ValueError("Pass seed= directly to clip_dataset.")
    clip_kwargs.setdefault("mode", "random" if training else "center")
    clip_kwargs.setdefault("crop", "random" if training else "center")
    decoder = ClipDecoder(num_frames, **clip_kwargs)
    batch_size = _check_positive_int("batch_size", batch_size)
    if seed is not None and not _is_int(seed):
        raise ValueError(f"seed must be None or an int, got {seed!r}.")
    dtype = tf.as_dtype(dtype)
    if dtype not in (tf.uint8, tf.float32):
        raise ValueError(f"dtype must be tf.uint8 or tf.float32, got {dtype!r}.")
    if num_epochs is None and not training:
        num_epochs = 1
    if num_epochs is not None:
        num_epochs = _check_positive_int("num_epochs", num_epochs)
    shuffle_buffer = _check_positive_int("shuffle_buffer", shuffle_buffer)

    read_config = tfds.ReadConfig(
        try_autocache=False,
        shuffle_seed=seed,
        shuffle_reshuffle_each_iteration=True,
    )
    examples, info = tfds.load(
        name,
        split=split,
        data_dir=data_dir,
        builder_kwargs=dict(builder_kwargs) if builder_kwargs else None,
        shuffle_files=training,
        decoders={"video": tfds.decode.SkipDecoding()},
        read_config=read_config,
        with_info=True,
    )
    # The frame feature gives static frame sizes (when fixed) and is checked to be JPEG.
    decoder.setup(feature=info.features["video"].feature)
    keep = [k for k in ("video", "label", "filename") if k in examples.element_spec]
    examples = examples.map(lambda ex: {k: ex[k] for k in keep})

    if num_epochs is None:
        epochs = tf.data.Dataset.counter()
    else:
        epochs = tf.data.Dataset.range(num_epochs)

    if seed is not None:
        epoch_seeds = epochs.map(lambda e: fold_in(seed, e))
    else:
        epoch_seeds = epochs.map(lambda e: tf.bitcast(decoder._fresh_key_tf(), tf.int64))

    def one_epoch(epoch_seed):
        ds = examples
        if training:
            ds = ds.shuffle(shuffle_buffer, seed=epoch_seed, reshuffle_each_iteration=False)
        return ds.map(lambda ex: (ex, epoch_seed))

    def to_clip(ex, epoch_seed):
        clip = decoder.sample(ex["video"], epoch_seed, name=ex.get("filename"))
        if dtype == tf.float32:
            clip = tf.image.convert_image_dtype(clip, tf.float32)
        return clip, ex["label"]

    ds = epoch_seeds.flat_map(one_epoch)
    ds = ds.map(to_clip, num_parallel_calls=num_parallel_calls)
    ds = ds.batch(batch_size, drop_remainder=training)
    return ds.prefetch(tf.data.AUTOTUNE)
