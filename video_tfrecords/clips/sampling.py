"""Which frames a clip takes: strides, starts, TSN's bins and a time grid, per key.

Pure functions of (spec, key, length) over a backend's ops (`backends`), so
the NumPy and TensorFlow paths take the same frames. With `fps`, clips are
planned over the ticks of a 1/fps s grid and mapped to the frame on screen.
"""

from __future__ import annotations

from video_tfrecords.clips import keys

__all__ = ["TICK_TOLERANCE", "clip_frames", "frame_indices", "frames_on_screen", "tick_count"]

TICK_TOLERANCE = 1e-4  # s: a frame this close before a tick is on screen at it.


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
    counters = [keys.clip_counter(c, keys.SLOT_STRIDE) for c in range(spec.num_clips)]
    return [lo + keys.randint(ops, key, counter, top - lo + 1) for counter in counters]


def _clip_starts(ops, spec, key, length, spans):
    """First frame of each clip: uniform over valid starts, centred or evenly spaced."""
    starts = []
    for c, span in enumerate(spans):
        room = ops.maximum(length - span, 0)  # last valid start
        if spec.mode == "random":
            starts.append(keys.randint(ops, key, keys.clip_counter(c, keys.SLOT_START), room + 1))
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


def _bin_indices(ops, spec, key, length):
    """int64 [num_clips, T]: one frame per equal bin (MMAction2 SampleFrames, clip_len=1).

    "segments": bin k is [k L // T, (k + 1) L // T) and its frame is at a
    uniform offset in it (the bin's first frame when it is empty, L < T);
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
        counter = keys.BIN_COUNTERS + c * t
        offsets = [keys.randint(ops, key, counter + j, sizes[j]) for j in range(t)]
        clips.append(ops.minimum(begins + ops.stack(offsets), length - 1))
    return ops.stack(clips)


def frame_indices(ops, spec, key, length):
    """int64 [num_clips, T] frame indices of the clips (-1 = padded frame)."""
    if spec.mode in ("segments", "segment_centers"):
        return _bin_indices(ops, spec, key, length)
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
