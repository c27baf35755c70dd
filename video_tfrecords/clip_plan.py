"""The clip plan: which frames, crop box and flip, as pure functions of a 64-bit key.

The plan is written once over a tiny array API and run with TensorFlow
(`TFOps`, inside tf.data) or NumPy (`NPOps`, for `tfds.data_source`), so both
decoding paths pick exactly the same clip. Random integers come from a
SplitMix64-style counter hash in plain uint64 arithmetic; a seeded key mixes
the seed with the video's content fingerprint (first, middle and last frame
bytes and the length), so a seeded clip does not depend on read order.
"""

from __future__ import annotations

import numbers

import numpy as np
import tensorflow as tf

__all__ = ["fold_in", "video_fingerprint", "video_fingerprint_np"]

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
# Array backends.
# ---------------------------------------------------------------------------


class TFOps:
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

    stack = staticmethod(tf.stack)


class NPOps:
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

    stack = staticmethod(np.stack)


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


def clip_strides(ops, key, length, num_frames, stride, num_clips):
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


def clip_span(num_frames, stride):
    """Number of video frames covered by a clip."""
    return (num_frames - 1) * stride + 1


def clip_starts(ops, key, length, spans, mode):
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


def frame_indices(ops, start, stride, num_frames):
    """Indices start, start + stride, ... of one clip (may run past the end)."""
    return start + ops.arange(num_frames) * stride


def fit_indices(ops, indices, length, policy):
    """Maps out-of-range indices per short-video policy; -1 marks a padded frame."""
    if policy == "loop":
        return indices % length
    if policy == "repeat_last":
        return ops.minimum(indices, length - 1)
    if policy == "pad":
        return ops.where(indices < length, indices, -1)
    return indices  # "error": checked before.


def crop_offsets(ops, key, height, width, crop_size, crop, num_clips):
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


def flip_flags(ops, key, num_clips):
    """One horizontal-flip coin per clip."""
    return ops.stack([(_draw(ops, key, 8 * c + _SLOT_FLIP) & 1) == 1 for c in range(num_clips)])


# ---------------------------------------------------------------------------
# Example identity and seeds.
# ---------------------------------------------------------------------------


def _sum_hash_tf(data):
    """Position-aware uint64 hash of a scalar string tensor."""
    b = tf.cast(tf.io.decode_raw(data, tf.uint8), tf.uint64)
    pos = tf.cast(tf.range(tf.size(b, out_type=tf.int64)), tf.uint64)
    return tf.reduce_sum(_mix64(TFOps, pos * 256 + b + _BYTE_SALT))


def _sum_hash_np(data: bytes):
    """NumPy twin of `_sum_hash_tf`."""
    b = np.frombuffer(data, np.uint8).astype(np.uint64)
    pos = np.arange(b.size, dtype=np.uint64)
    return np.uint64(_mix64(NPOps, pos * np.uint64(256) + b + np.uint64(_BYTE_SALT)).sum())


def _bytes_hash_tf(data):
    """uint64 hash of an encoded frame: its length, first and last _HASH_BYTES bytes.

    Bounded so that large frames cost no more than small ones.
    """
    size = tf.strings.length(data)
    head = tf.strings.substr(data, 0, _HASH_BYTES)
    tail = tf.strings.substr(data, tf.maximum(size - _HASH_BYTES, 0), _HASH_BYTES)
    h = _combine(TFOps, _sum_hash_tf(head), _sum_hash_tf(tail))
    return _combine(TFOps, h, tf.cast(size, tf.uint64))


def _bytes_hash_np(data):
    """NumPy twin of `_bytes_hash_tf`."""
    data = bytes(data)
    head, tail = data[:_HASH_BYTES], data[max(len(data) - _HASH_BYTES, 0) :]
    h = _combine(NPOps, _sum_hash_np(head), _sum_hash_np(tail))
    return _combine(NPOps, h, np.uint64(len(data)))


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
        h = _combine(TFOps, h, _bytes_hash_tf(padded[i]))
    return h


def _fingerprint_u64_np(frames):
    """NumPy twin of `_fingerprint_u64_tf`."""
    length = len(frames)
    h = np.uint64(length)
    for i in (0, length // 2, max(length - 1, 0)):
        h = _combine(NPOps, h, _bytes_hash_np(frames[i] if length else b""))
    return h


def seeded_key_tf(seed, frames):
    """uint64 key of a seeded clip: the seed mixed with the video's content fingerprint."""
    return _combine(TFOps, _seed_u64_tf(seed), _fingerprint_u64_tf(frames))


def seeded_key_np(seed, frames):
    """NumPy twin of `seeded_key_tf`."""
    return _combine(NPOps, _seed_u64_np(seed), _fingerprint_u64_np(frames))


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
        u = _combine(TFOps, _seed_u64_tf(seed), _seed_u64_tf(data))
        return tf.bitcast(u, tf.int64)
    with np.errstate(over="ignore"):
        return _to_signed(_combine(NPOps, _seed_u64_np(seed), _seed_u64_np(data)))
