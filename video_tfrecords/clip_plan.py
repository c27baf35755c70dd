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

import functools
import threading

import numpy as np

from video_tfrecords.clip_ops import (  # noqa: F401  (re-exported: the plan's public names)
    _U64,
    JPEG_MAGIC,
    NP_OPS,
    NumpyOps,
    TensorFlowOps,
    jpeg_size,
    ops_for,
    tf_ops,
)

__all__ = [
    "NP_OPS",
    "coarsest_scale",
    "crop_offsets",
    "fingerprint_u64",
    "flip_flags",
    "fold_in",
    "clip_frames",
    "frame_indices",
    "frames_on_screen",
    "fresh_key",
    "fresh_seed",
    "jpeg_size",
    "ops_for",
    "reduction",
    "resized_size",
    "seeded_key",
    "short_sides",
    "tf_ops",
    "tick_count",
    "video_fingerprint",
]

_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_BYTE_SALT = 0x243F6A8885A308D3
_HASH_BYTES = 8192  # Bytes hashed at each end of a frame for its fingerprint.
# Counter slots of the per-clip random draws (counter = 8 * clip + slot).
_SLOT_STRIDE, _SLOT_START, _SLOT_CROP_Y, _SLOT_CROP_X, _SLOT_FLIP, _SLOT_SCALE = range(6)
_SEGMENT_COUNTERS = 2**32  # Counters of the per-segment draws (past the per-clip slots).
TICK_TOLERANCE = 1e-4  # s: a frame this close before a tick is on screen at it.
REDUCTIONS = (1, 2, 4, 8)  # JPEG DCT scaling denominators (see `reduction`).


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


def _segment_indices(ops, spec, key, length):
    """int64 [num_clips, T]: one frame per equal segment (MMAction2 SampleFrames, clip_len=1).

    "segments": segment k is [k L // T, (k + 1) L // T) and its frame is at a
    uniform offset in it (the segment's first frame when it is empty, L < T);
    "segment_centers": frame int(a k + a / 2) with a = L / T, in float64 as
    MMAction2 computes it.
    """
    t = spec.num_frames
    k = ops.arange(t)
    if spec.mode == "segment_centers":
        interval = ops.f64(length) / t
        return ops.stack([ops.floor_i64(ops.f64(k) * interval + interval / 2)])
    begins, ends = (k * length) // t, ((k + 1) * length) // t
    sizes = ops.maximum(ends - begins, 1)
    clips = []
    for c in range(spec.num_clips):
        counter = _SEGMENT_COUNTERS + c * t
        offsets = [_randint(ops, key, counter + j, sizes[j]) for j in range(t)]
        clips.append(ops.minimum(begins + ops.stack(offsets), length - 1))
    return ops.stack(clips)


def frame_indices(ops, spec, key, length):
    """int64 [num_clips, T] frame indices of the clips (-1 = padded frame)."""
    if spec.mode in ("segments", "segment_centers"):
        return _segment_indices(ops, spec, key, length)
    strides = _clip_strides(ops, spec, key, length)
    spans = [(spec.num_frames - 1) * s + 1 for s in strides]
    starts = _clip_starts(ops, spec, key, length, spans)
    steps = ops.arange(spec.num_frames)
    clips = [
        _fit_indices(ops, start + steps * s, length, spec.short_video)
        for start, s in zip(starts, strides)
    ]
    return ops.stack(clips)


def tick_count(ops, times, fps):
    """Ticks of a 1/fps s grid from the first timestamp to the last (float64 [L] times)."""
    return ops.floor_i64((times[-1] - times[0] + TICK_TOLERANCE) * fps) + 1


def frames_on_screen(ops, times, fps, ticks):
    """Index of the frame on screen at each tick (int64, any shape; -1 kept as -1).

    The last frame whose timestamp is <= the tick time (times[0] + tick / fps),
    a frame within TICK_TOLERANCE of the tick counting as on screen (timestamps
    are stored as float32).
    """
    at = times[0] + ops.f64(ops.maximum(ticks, 0)) / fps + TICK_TOLERANCE
    found = ops.maximum(ops.last_at_or_before(times, at), 0)
    return ops.where(ticks >= 0, found, -1)


def clip_frames(ops, spec, key, length, times=None):
    """int64 [num_views, T] frames of every view (-1 = padded frame).

    With `spec.fps`, the clips are planned over the ticks of the time grid
    (`times`: float64 [L] timestamps in seconds) and mapped to the frames on
    screen; with `num_crops`, each clip's row repeats once per crop.
    """
    if spec.fps is None:
        indices = frame_indices(ops, spec, key, length)
    else:
        ticks = frame_indices(ops, spec, key, tick_count(ops, times, spec.fps))
        indices = frames_on_screen(ops, times, spec.fps, ticks)
    return indices if spec.num_crops == 1 else ops.repeat(indices, spec.num_crops)


def _spread_offsets(room, n):
    """n offsets from 0 to `room`: ceil(i room / (n - 1)) (PySlowFast's uniform_crop for 3)."""
    return [-((-i * room) // (n - 1)) for i in range(n)]


def _view_boxes(spec, room_y, room_x):
    """Per crop (y if tall, x if tall, y if wide, x if wide): centred across, spread along."""
    n = spec.num_crops
    center_y, center_x = -(-room_y // 2), -(-room_x // 2)
    along_y, along_x = _spread_offsets(room_y, n), _spread_offsets(room_x, n)
    return [(along_y[i], center_x, center_y, along_x[i]) for i in range(n)]


def short_sides(ops, spec, key):
    """int64 [num_clips]: each clip's short side, drawn from spec.short_side's (min, max) range."""
    lo, hi = spec.short_side
    draws = [_randint(ops, key, 8 * c + _SLOT_SCALE, hi - lo + 1) for c in range(spec.num_clips)]
    return lo + ops.stack(draws)


def crop_offsets(ops, spec, key, height, width):
    """int64 [num_views, 2]: top-left (y, x) of each view's box in a height x width frame.

    `height`, `width`: the frame's size, or int64 [num_clips] sizes of each
    clip's frames (scale jitter). Zeros without `crop_size`. With num_crops > 1
    the boxes of a clip are centred across the frame's short side and spread
    along its long side.
    """
    views = spec.num_clips * spec.num_crops
    if spec.crop_size is None:
        return ops.zeros([views, 2], "int64")
    h, w = spec.crop_size
    per_clip = isinstance(spec.short_side, tuple)
    offsets = []
    for c in range(spec.num_clips):
        frame_h, frame_w = (height[c], width[c]) if per_clip else (height, width)
        room_y = ops.maximum(ops.i64(frame_h) - h, 0)
        room_x = ops.maximum(ops.i64(frame_w) - w, 0)
        if spec.num_crops > 1:
            tall = ops.i64(frame_h) > ops.i64(frame_w)
            for ya, xc, yc, xa in _view_boxes(spec, room_y, room_x):
                offsets.append(ops.stack([ops.where(tall, ya, yc), ops.where(tall, xc, xa)]))
            continue
        if spec.crop == "random":
            y = _randint(ops, key, 8 * c + _SLOT_CROP_Y, room_y + 1)
            x = _randint(ops, key, 8 * c + _SLOT_CROP_X, room_x + 1)
        else:
            y, x = room_y // 2, room_x // 2
        offsets.append(ops.stack([y, x]))
    return ops.stack(offsets)


def flip_flags(ops, spec, key):
    """bool [num_views]: one horizontal-flip coin per view (all False without `flip`)."""
    views = spec.num_clips * spec.num_crops
    if not spec.flip:
        return ops.zeros([views], "bool")
    return ops.stack([(_draw(ops, key, 8 * v + _SLOT_FLIP) & 1) == 1 for v in range(views)])


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
    """The JPEG DCT scaling denominator to decode with: the largest of 2, 4, 8 that fits, else 1.

    A scaling r is used when the frame decoded at 1/r still covers `short_side`
    (see `coarsest_scale`).
    """
    short = ops.minimum(height, width)
    return coarsest_scale(ops, height, width, lambda r: short_side * r <= short)


def coarsest_scale(ops, height, width, covers):
    """The largest DCT scaling denominator r in 2, 4, 8 with `covers(r)` true, else 1.

    Only scalings that map the pixel grid exactly (both sides divisible by r;
    otherwise the grid drifts by up to half a pixel across the frame: 33-37 dB
    against an area resize on real footage). On an exact grid, 1/2, 1/4 and
    1/8 decodes are at least 45 dB (PSNR) from a full decode followed by an
    area resize (tests/test_decoders.py, camera-like frames), at a fraction of
    the cost.
    """
    ratio = ops.i64(1)
    for r in REDUCTIONS[1:]:
        exact = ops.logical_and(height % r == 0, width % r == 0)
        ratio = ops.where(ops.logical_and(exact, covers(r)), ops.i64(r), ratio)
    return ratio
