"""Keys and seeds of clips: a counter-based random stream, and videos' content fingerprints.

Every random choice of a clip (start, stride, box, flip, scale) is `draw(ops,
key, counter)` for a counter of its own (the map below), so the NumPy and
TensorFlow backends draw the same numbers for a key, in any order. The stream
is SplitMix64 in uint64 arithmetic. A seeded key mixes the seed with the
video's content fingerprint (first, middle and last frame bytes and the
length), so a seeded clip does not depend on read order, sharding or reader.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from video_tfrecords.clips.backends import NP_OPS, U64, ops_for

__all__ = [
    "clip_counter",
    "draw",
    "epoch_seed",
    "fingerprint_u64",
    "fold_in",
    "fresh_key",
    "fresh_seed",
    "randint",
    "seeded_key",
    "video_fingerprint",
]

_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_BYTE_SALT = 0x243F6A8885A308D3
_HASH_BYTES = 8192  # Bytes hashed at each end of a frame for its fingerprint.

# Which counters each draw uses. Per clip c: counter 8 c + slot.
SLOTS_PER_CLIP = 8
SLOT_STRIDE, SLOT_START, SLOT_CROP_Y, SLOT_CROP_X, SLOT_FLIP, SLOT_SCALE = range(6)
BIN_COUNTERS = 2**32  # TSN's bins (modes "segments"): BIN_COUNTERS + c T + k (frame k of clip c)
RESIZED_BOX_COUNTERS = 2**33  # random-resized boxes: see boxes.resized_crop_boxes


def _mix64(ops, x):
    """SplitMix64 finalizer: a bijective scramble of a uint64 value."""
    if type(x) is np.uint64:  # one NumPy value (a clip's draw): exact in Python ints, 4x faster
        return np.uint64(_mix64_int(int(x)))
    x = (x ^ ops.shr(x, 30)) * _MIX1
    x = (x ^ ops.shr(x, 27)) * _MIX2
    return x ^ ops.shr(x, 31)


def _combine(ops, a, b):
    """Hashes two uint64 values into one."""
    if type(a) is np.uint64 and type(b) is np.uint64:  # (as `_mix64`: in Python ints)
        return np.uint64(_combine_int(int(a), int(b)))
    return _mix64(ops, a ^ _mix64(ops, b + _GOLDEN))


def draw(ops, key, counter):
    """The `counter`-th uint64 of the SplitMix64 stream started at `key`."""
    if type(key) is np.uint64 and type(counter) is int:  # `_mix64`'s path; the sum wraps
        return np.uint64(_mix64_int((int(key) + (int(counter) + 1) * _GOLDEN) & _MASK64))
    return _mix64(ops, key + ((counter + 1) * _GOLDEN) % U64)


def clip_counter(clip, slot):
    """The counter of clip `clip`'s draw in `slot` (one of the SLOT_* above)."""
    return SLOTS_PER_CLIP * clip + slot


def randint(ops, key, counter, n):
    """An integer in [0, n) (n >= 1) from the key's stream; bias < n / 2**64."""
    if type(key) is np.uint64 and np.ndim(n) == 0 and n >= 1:  # one NumPy value, in Python ints
        return np.int64(0 if n == 1 else int(draw(ops, key, counter)) % int(n))
    return ops.i64(draw(ops, key, counter) % ops.u64(n))


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


_MASK64 = U64 - 1


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
    h = length % U64
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
    seed_u = ops.seed_u64(seed)
    if type(seed_u) is np.uint64 and type(fingerprint_u) is np.uint64:
        return _combine(ops, seed_u, fingerprint_u)  # (in Python ints: nothing wraps in NumPy)
    with ops.wrapping():
        return _combine(ops, seed_u, fingerprint_u)


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


def epoch_seed(seed, epoch):
    """The seed of epoch `epoch`'s clips: `seed` itself for epoch 0, then `fold_in(seed, epoch)`.

    So the first epoch's clips are those of `ClipDecoder(seed=seed)`, and every reader
    (ClipSource, clip_dataset, a sampler's global indices) agrees on every epoch's.
    Python ints give a Python int; a tensor argument gives an int64 tensor.
    """
    ops = ops_for(seed, epoch)
    if ops is NP_OPS:
        return int(seed) if int(epoch) == 0 else fold_in(seed, epoch)
    tf = ops.tf
    seed = tf.cast(seed, tf.int64)
    return tf.where(tf.equal(tf.cast(epoch, tf.int64), 0), seed, fold_in(seed, epoch))
