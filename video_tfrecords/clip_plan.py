"""The clip plan: which frames, crop box and flip, as pure functions of a 64-bit key.

The plan is written once over a small array API ("ops") and runs on NumPy
(`NP_OPS`) or on TensorFlow (`tf_ops()`, which imports TensorFlow on first
use), so the two decoding paths pick exactly the same clip and a process
without TensorFlow can plan clips. Random integers come from a SplitMix64-style
counter hash in uint64 arithmetic; a seeded key mixes the seed with the video's
content fingerprint (first, middle and last frame bytes and the length), so a
seeded clip does not depend on read order.
"""

from __future__ import annotations

import contextlib
import functools
import numbers
import os
import sys
import threading

import numpy as np

__all__ = [
    "NP_OPS",
    "crop_offsets",
    "fingerprint_u64",
    "flip_flags",
    "fold_in",
    "frame_indices",
    "fresh_key",
    "fresh_seed",
    "jpeg_size",
    "ops_for",
    "reduction",
    "resized_size",
    "seeded_key",
    "tf_ops",
    "video_fingerprint",
]

_U64 = 2**64
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_BYTE_SALT = 0x243F6A8885A308D3
_HASH_BYTES = 8192  # Bytes hashed at each end of a frame for its fingerprint.
# Counter slots of the per-clip random draws (counter = 8 * clip + slot).
_SLOT_STRIDE, _SLOT_START, _SLOT_CROP_Y, _SLOT_CROP_X, _SLOT_FLIP = range(5)
JPEG_MAGIC = b"\xff\xd8\xff"
# Start-of-frame markers (they carry the image size): C0-CF but DHT, JPG and DAC.
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
REDUCTIONS = (1, 2)  # JPEG DCT scalings used: 1/1 and 1/2 (see `reduction`).


# ---------------------------------------------------------------------------
# Array backends: the few ops the plan needs, and checks that fail with a message.
# ---------------------------------------------------------------------------


class NumpyOps:
    """NumPy (and plain Python) implementations; checks raise ValueError."""

    u64 = staticmethod(np.uint64)
    i64 = staticmethod(np.int64)
    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    where = staticmethod(np.where)
    stack = staticmethod(np.stack)
    logical_and = staticmethod(np.logical_and)

    @staticmethod
    def shr(x, n):
        return x >> np.uint64(n)

    @staticmethod
    def arange(n):
        return np.arange(n, dtype=np.int64)

    @staticmethod
    def zeros(shape, dtype):
        return np.zeros(shape, {"int64": np.int64, "bool": bool}[dtype])

    @staticmethod
    def size(values):
        return len(values)

    @staticmethod
    def num_frames(frames):
        return np.int64(len(frames))

    @staticmethod
    def frame_or_empty(frames, index):
        return frames[int(index)] if len(frames) else b""

    @staticmethod
    def byte_length(data):
        return memoryview(data).nbytes

    @staticmethod
    def byte_values(data, start, size):
        start = int(start)
        return np.frombuffer(data, np.uint8)[start : start + size].astype(np.uint64)

    @staticmethod
    def sum_u64(values):
        return np.uint64(values.sum(dtype=np.uint64))

    @staticmethod
    def seed_u64(seed):
        return np.uint64(int(seed) % _U64)

    @staticmethod
    def signed(u):
        """uint64 -> Python int in the int64 range."""
        v = int(u)
        return v - _U64 if v >= 2**63 else v

    @staticmethod
    def fresh_u64():
        return np.uint64(int.from_bytes(os.urandom(8), "little"))

    @staticmethod
    def wrapping():
        """uint64 arithmetic wraps around by design: silence NumPy's scalar overflow warning."""
        return np.errstate(over="ignore")

    @staticmethod
    def is_jpeg(data):
        return jpeg_size(data) is not None

    @staticmethod
    def jpeg_size(data):
        return tuple(np.int64(v) for v in jpeg_size(data))

    @staticmethod
    def message(parts):
        return "".join(
            p.decode("utf-8", "replace") if isinstance(p, bytes) else str(p) for p in parts
        )

    def check(self, ok, parts_fn):
        """Raises ValueError(message) when `ok` is false; the message is built only then."""
        if not ok:
            raise ValueError(self.message(parts_fn()))

    @staticmethod
    def after(checks, fn):
        del checks  # Checks have already raised.
        return fn()


class TensorFlowOps:
    """TensorFlow implementations (graph or eager); checks raise InvalidArgumentError."""

    def __init__(self):
        import tensorflow as tf  # only processes that use the TF path import it

        self.tf = tf
        self._generator = None
        self._lock = threading.Lock()
        self.maximum, self.minimum, self.where = tf.maximum, tf.minimum, tf.where
        self.stack, self.logical_and = tf.stack, tf.logical_and

    def u64(self, x):
        return self.tf.cast(x, self.tf.uint64)

    def i64(self, x):
        return self.tf.cast(x, self.tf.int64)

    def shr(self, x, n):
        return self.tf.bitwise.right_shift(x, self.tf.constant(n, self.tf.uint64))

    def arange(self, n):
        return self.tf.range(n, dtype=self.tf.int64)

    def zeros(self, shape, dtype):
        return self.tf.zeros(shape, dtype)

    def size(self, values):
        return self.tf.size(values, out_type=self.tf.int64)

    def num_frames(self, frames):
        return self.tf.shape(frames, out_type=self.tf.int64)[0]

    def frame_or_empty(self, frames, index):
        return self.tf.strings.reduce_join(frames[index : index + 1])

    def byte_length(self, data):
        return self.tf.strings.length(data)

    def byte_values(self, data, start, size):
        chunk = self.tf.strings.substr(data, start, size)
        return self.u64(self.tf.io.decode_raw(chunk, self.tf.uint8))

    def sum_u64(self, values):
        return self.tf.reduce_sum(values)

    def seed_u64(self, seed):
        tf = self.tf
        if isinstance(seed, numbers.Integral):
            return tf.constant(int(seed) % _U64, tf.uint64)
        seed = tf.convert_to_tensor(seed)
        if seed.dtype == tf.uint64:
            return seed
        return tf.bitcast(tf.cast(seed, tf.int64), tf.uint64)

    def signed(self, u):
        return self.tf.bitcast(u, self.tf.int64)

    def fresh_u64(self):
        """A fresh uint64 per run of the op, from a generator that outlives pipelines."""
        tf = self.tf
        with self._lock:
            if self._generator is None:
                # Created eagerly even while a tf.data function is being traced,
                # so its state persists across iterators and epochs.
                with tf.init_scope(), tf.device("/cpu:0"):
                    self._generator = tf.random.Generator.from_non_deterministic_state()
        return tf.bitcast(self._generator.uniform_full_int([], tf.int64), tf.uint64)

    @staticmethod
    def wrapping():
        return contextlib.nullcontext()

    def is_jpeg(self, data):
        return self.tf.reduce_all(self.tf.equal(self.tf.strings.substr(data, 0, 3), JPEG_MAGIC))

    def jpeg_size(self, data):
        size = self.i64(self.tf.io.extract_jpeg_shape(data))
        return size[0], size[1]

    def message(self, parts):
        """Joins str / string-tensor / number-tensor parts into one string tensor."""
        tf = self.tf
        pieces = []
        for part in parts:
            if isinstance(part, (str, bytes)):
                pieces.append(part)
            else:
                part = tf.convert_to_tensor(part)
                pieces.append(part if part.dtype == tf.string else tf.strings.as_string(part))
        return tf.strings.join(pieces)

    def check(self, ok, parts_fn):
        """A check to depend on: raises InvalidArgumentError when `ok` is false.

        The message (which may hash frames) is only computed on failure.
        """
        tf = self.tf
        if tf.executing_eagerly():
            if not bool(ok):
                text = self.message(parts_fn()).numpy().decode("utf-8", "replace")
                raise tf.errors.InvalidArgumentError(None, None, text)
            return tf.constant(True)

        def fail():
            assert_op = tf.debugging.Assert(False, [self.message(parts_fn())], summarize=1)
            with tf.control_dependencies([assert_op]):
                return tf.constant(False)

        return tf.cond(ok, lambda: tf.constant(True), fail)

    def after(self, checks, fn):
        with self.tf.control_dependencies(checks):
            return fn()


NP_OPS = NumpyOps()


@functools.cache
def tf_ops() -> TensorFlowOps:
    """The TensorFlow backend (imports TensorFlow on the first call)."""
    return TensorFlowOps()


def _is_tensor(x) -> bool:
    tf = sys.modules.get("tensorflow")  # Nothing is a tensor unless TensorFlow is loaded.
    return tf is not None and isinstance(x, (tf.Tensor, tf.Variable))


def ops_for(*values):
    """TF ops if any of `values` is a tensor, else NumPy ops."""
    return tf_ops() if any(map(_is_tensor, values)) else NP_OPS


# ---------------------------------------------------------------------------
# Random numbers from a key.
# ---------------------------------------------------------------------------


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
# Video identity, keys and seeds.
# ---------------------------------------------------------------------------


def _sum_hash(ops, values):
    """Position-aware uint64 hash of a vector of byte values."""
    positions = ops.u64(ops.arange(ops.size(values)))
    return ops.sum_u64(_mix64(ops, positions * 256 + values + _BYTE_SALT))


def _bytes_hash(ops, data):
    """uint64 hash of an encoded frame: its length, first and last _HASH_BYTES bytes.

    Bounded so that large frames cost no more than small ones.
    """
    size = ops.byte_length(data)
    head = ops.byte_values(data, 0, _HASH_BYTES)
    tail = ops.byte_values(data, ops.maximum(size - _HASH_BYTES, 0), _HASH_BYTES)
    h = _combine(ops, _sum_hash(ops, head), _sum_hash(ops, tail))
    return _combine(ops, h, ops.u64(size))


def fingerprint_u64(ops, frames):
    """uint64 identity of a video: first, middle and last frame bytes, and the length."""
    if ops is NP_OPS:
        return _fingerprint_np(frames)
    length = ops.num_frames(frames)
    h = ops.u64(length)
    for i in (0, length // 2, ops.maximum(length - 1, 0)):
        h = _combine(ops, h, _bytes_hash(ops, ops.frame_or_empty(frames, i)))
    return h


_MASK64 = _U64 - 1


def _mix64_int(x: int) -> int:
    """`_mix64` on a Python int in [0, 2**64)."""
    x = ((x ^ (x >> 30)) * _MIX1) & _MASK64
    x = ((x ^ (x >> 27)) * _MIX2) & _MASK64
    return x ^ (x >> 31)


def _combine_int(a: int, b: int) -> int:
    """`_combine` on Python ints in [0, 2**64)."""
    return _mix64_int(a ^ _mix64_int((b + _GOLDEN) & _MASK64))


@functools.cache
def _hash_offsets() -> np.ndarray:
    """position * 256 + _BYTE_SALT for every hashed position (the terms `_sum_hash` adds)."""
    return np.arange(_HASH_BYTES, dtype=np.uint64) * np.uint64(256) + np.uint64(_BYTE_SALT)


def _mix64_np(x: np.ndarray, shifted: np.ndarray) -> None:
    """`_mix64` in place on a uint64 array, `shifted` a scratch array of its shape."""
    for shift, factor in ((30, _MIX1), (27, _MIX2)):
        np.right_shift(x, np.uint64(shift), out=shifted)
        x ^= shifted
        x *= np.uint64(factor)
    np.right_shift(x, np.uint64(31), out=shifted)
    x ^= shifted


def _run_sum_np(values: np.ndarray, x: np.ndarray, shifted: np.ndarray) -> int:
    """`_sum_hash` of a uint8 run, in place in two reused uint64 buffers (no temporaries)."""
    n = len(values)
    x, shifted = x[:n], shifted[:n]
    np.add(_hash_offsets()[:n], values, out=x, casting="unsafe")
    _mix64_np(x, shifted)
    return int(x.sum(dtype=np.uint64))


# Per thread (Grain reads in threads): the six hashed runs of a fingerprint, and scratch.
_RUNS = threading.local()


def _fingerprint_np(frames) -> np.uint64:
    """`fingerprint_u64` on NumPy, the same value at a third of the cost.

    The six runs it hashes (head and tail of three frames) go through the mix
    as one [6, _HASH_BYTES] array, in reused buffers: no temporaries, 6x fewer
    NumPy calls. Frames shorter than _HASH_BYTES take the run-by-run path.
    """
    length = len(frames)
    picked = [NP_OPS.frame_or_empty(frames, i) for i in (0, length // 2, max(length - 1, 0))]
    sizes = [len(frame) for frame in picked]
    if min(sizes) >= _HASH_BYTES:
        if not hasattr(_RUNS, "x"):
            _RUNS.x = np.empty((6, _HASH_BYTES), np.uint64)
            _RUNS.shifted = np.empty_like(_RUNS.x)
        x = _RUNS.x
        for k, frame in enumerate(picked):
            values = np.frombuffer(frame, np.uint8)
            np.add(_hash_offsets(), values[:_HASH_BYTES], out=x[2 * k], casting="unsafe")
            np.add(_hash_offsets(), values[-_HASH_BYTES:], out=x[2 * k + 1], casting="unsafe")
        _mix64_np(x, _RUNS.shifted)
        sums = x.sum(axis=1, dtype=np.uint64).tolist()
    else:
        x, shifted = np.empty(_HASH_BYTES, np.uint64), np.empty(_HASH_BYTES, np.uint64)
        sums = []
        for frame, size in zip(picked, sizes):
            values = np.frombuffer(frame, np.uint8)
            sums.append(_run_sum_np(values[:_HASH_BYTES], x, shifted))
            sums.append(_run_sum_np(values[max(size - _HASH_BYTES, 0) :], x, shifted))
    h = length % _U64
    for k, size in enumerate(sizes):
        h = _combine_int(h, _combine_int(_combine_int(sums[2 * k], sums[2 * k + 1]), size))
    return np.uint64(h)


def video_fingerprint(frames):
    """int64 content identity of a video given as its encoded frames.

    It hashes the encoded bytes of the first, middle and last frames and the
    number of frames. A Python int for a sequence of bytes, an int64 tensor for
    a string tensor (the same value). Error messages name videos by it.
    """
    ops = ops_for(frames)
    if ops is not NP_OPS:
        frames = ops.tf.convert_to_tensor(frames, ops.tf.string)
    with ops.wrapping():
        return ops.signed(fingerprint_u64(ops, frames))


def seeded_key(ops, seed, frames, fingerprint=None):
    """uint64 key of a seeded clip: the seed mixed with the video's content fingerprint.

    `fingerprint`: the video's `video_fingerprint`, if the caller has it already.
    """
    if fingerprint is None:
        fingerprint_u = fingerprint_u64(ops, frames)
    else:
        fingerprint_u = ops.seed_u64(fingerprint)
    return _combine(ops, ops.seed_u64(seed), fingerprint_u)


def fresh_key(ops):
    """A new random uint64 key on every call (every run of the op, for TF)."""
    return ops.fresh_u64()


def fresh_seed(ops=NP_OPS):
    """A new random int64 seed: a Python int, or an int64 tensor op with `tf_ops()`."""
    return ops.signed(fresh_key(ops))


def fold_in(seed, data):
    """Derives a new int64 seed from `seed` and `data`, e.g. (user seed, epoch).

    With Python ints it returns a Python int; if either argument is a tensor it
    returns an int64 tensor with the same value.
    """
    ops = ops_for(seed, data)
    with ops.wrapping():
        return ops.signed(_combine(ops, ops.seed_u64(seed), ops.seed_u64(data)))


# ---------------------------------------------------------------------------
# The plan: which frames, which crop box, which flip.
# ---------------------------------------------------------------------------


def _clip_strides(ops, spec, key, length):
    """Frame step of each clip: fixed, or drawn from an inclusive range.

    A drawn step is capped so that the clip still fits in the video (if even
    the smallest step does not fit, the smallest is used and the short-video
    policy applies).
    """
    if isinstance(spec.stride, int):
        return [spec.stride] * spec.num_clips
    lo, hi = spec.stride
    if spec.num_frames == 1:
        top = hi
    else:
        fit = (length - 1) // (spec.num_frames - 1)
        top = ops.minimum(ops.maximum(fit, lo), hi)
    counters = [8 * c + _SLOT_STRIDE for c in range(spec.num_clips)]
    return [lo + _randint(ops, key, counter, top - lo + 1) for counter in counters]


def _clip_starts(ops, spec, key, length, spans):
    """First frame of each clip: uniform over valid starts, centred or evenly spaced."""
    starts = []
    for c, span in enumerate(spans):
        room = ops.maximum(length - span, 0)  # last valid start
        if spec.mode == "random":
            starts.append(_randint(ops, key, 8 * c + _SLOT_START, room + 1))
        elif spec.mode == "center" or spec.num_clips == 1:
            starts.append(room // 2)
        else:  # uniform
            starts.append((c * room) // (spec.num_clips - 1))
    return starts


def _fit_indices(ops, indices, length, policy):
    """Maps out-of-range indices per short-video policy; -1 marks a padded frame."""
    if policy == "loop":
        return indices % length
    if policy == "repeat_last":
        return ops.minimum(indices, length - 1)
    if policy == "pad":
        return ops.where(indices < length, indices, -1)
    return indices  # "error": checked before.


def frame_indices(ops, spec, key, length):
    """int64 [num_clips, T] frame indices of the clips (-1 = padded frame)."""
    strides = _clip_strides(ops, spec, key, length)
    spans = [(spec.num_frames - 1) * s + 1 for s in strides]
    starts = _clip_starts(ops, spec, key, length, spans)
    steps = ops.arange(spec.num_frames)
    clips = [
        _fit_indices(ops, start + steps * s, length, spec.short_video)
        for start, s in zip(starts, strides)
    ]
    return ops.stack(clips)


def crop_offsets(ops, spec, key, height, width):
    """int64 [num_clips, 2]: top-left (y, x) of each clip's box in a height x width frame.

    Zeros without `crop_size`.
    """
    if spec.crop_size is None:
        return ops.zeros([spec.num_clips, 2], "int64")
    h, w = spec.crop_size
    room_y = ops.maximum(ops.i64(height) - h, 0)
    room_x = ops.maximum(ops.i64(width) - w, 0)
    offsets = []
    for c in range(spec.num_clips):
        if spec.crop == "random":
            y = _randint(ops, key, 8 * c + _SLOT_CROP_Y, room_y + 1)
            x = _randint(ops, key, 8 * c + _SLOT_CROP_X, room_x + 1)
        else:
            y, x = room_y // 2, room_x // 2
        offsets.append(ops.stack([y, x]))
    return ops.stack(offsets)


def flip_flags(ops, spec, key):
    """bool [num_clips]: one horizontal-flip coin per clip (all False without `flip`)."""
    if not spec.flip:
        return ops.zeros([spec.num_clips], "bool")
    return ops.stack(
        [(_draw(ops, key, 8 * c + _SLOT_FLIP) & 1) == 1 for c in range(spec.num_clips)]
    )


# ---------------------------------------------------------------------------
# Frame geometry for `short_side`.
# ---------------------------------------------------------------------------


def resized_size(ops, height, width, short_side):
    """(h, w) scaled so that the shorter side is `short_side` (the other rounded half up)."""
    short = ops.minimum(height, width)
    return (
        (height * short_side + short // 2) // short,
        (width * short_side + short // 2) // short,
    )


def reduction(ops, height, width, short_side):
    """2 to decode at half size by the JPEG decoder's DCT scaling, else 1.

    Half size is used when it still covers `short_side` and maps the pixel grid
    exactly (even frame sizes; with an odd size the grid would drift by up to
    half a pixel across the frame: 33-37 dB against an area resize on real
    footage). 1/4 and 1/8 scaling keep too little of each 8x8 block (29-34 dB,
    where 1/2 gives 52-55 dB), so they are not used.
    """
    even = ops.logical_and(height % 2 == 0, width % 2 == 0)
    fits = short_side * 2 <= ops.minimum(height, width)
    return ops.where(ops.logical_and(even, fits), 2, 1)


def jpeg_size(data) -> tuple[int, int] | None:
    """(height, width) from a JPEG's start-of-frame header, or None if there is none."""
    view = memoryview(data).cast("B")
    if bytes(view[:3]) != JPEG_MAGIC:
        return None
    pos = 2
    while pos + 4 <= len(view):
        if view[pos] != 0xFF:
            return None
        marker = view[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in _SOF_MARKERS:
            if pos + 9 > len(view):
                return None
            return (view[pos + 5] << 8 | view[pos + 6], view[pos + 7] << 8 | view[pos + 8])
        if marker in (0xD9, 0xDA):  # end of image, start of scan: no size before them
            return None
        pos += 2 + (view[pos + 2] << 8 | view[pos + 3])
    return None
