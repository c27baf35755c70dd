"""A clip's audio: the window of the example's stored samples that plays with its frames.

A dataset built with `audio_rate` stores each example's audio as int16 [samples, channels],
sample j playing at (round(timestamps[0] * rate) + j) / rate s on the clock of the stored
`timestamps` (`ingest/audio_io.py`). A view's window starts at its first sampled frame's stored
timestamp, rounded to the same grid, and lasts num_frames * stride frame periods (of
`spec.fps`, else of the stored frame rate): every clip of a video has the same number of
samples. Past the end of the stored audio it is silence. The window follows the planned
frames, which both paths draw alike, and is computed with the same float64 operations on
NumPy and TensorFlow (`backends`), so both cut the same samples; int16 / 32768 is exact in
float32 on both. TensorFlow is imported by `cut_tf` only, on first use.
"""

from __future__ import annotations

import numpy as np

from video_tfrecords.clips import backends

__all__ = [
    "MAX_WINDOW_SAMPLES",
    "SCALE",
    "cut_np",
    "cut_tf",
    "window_length",
    "window_np",
    "window_starts",
    "window_tf",
]

SCALE = 1.0 / 32768  # int16 -> [-1, 1)
# The most samples a view's audio window may take (5.8 min at 48 kHz; 64 MiB a channel as
# float32): a stored frame or sample rate that asks for more is refused before any is cut.
MAX_WINDOW_SAMPLES = 1 << 24


def _nearest(ops, x):
    """int64 round half up: the build's rounding (`audio_io.sample_at`), on both backends."""
    return ops.floor_i64(x + 0.5)


def window_length(ops, spec, rate, source_fps):
    """Samples per window: round(num_frames * stride * rate / fps), fps = `spec.fps`, else the
    stored frame rate (`source_fps`)."""
    fps = spec.fps if spec.fps is not None else source_fps
    if fps is None:
        raise ValueError("audio=True needs each video's stored frame rate (pass source_fps=).")
    periods = ops.f64(spec.num_frames * spec.stride)
    return _nearest(ops, periods * ops.f64(rate) / ops.f64(fps))


def _checked_length(ops, spec, rate, source_fps):
    """`window_length`, once the stored rates are rates and the window at most
    MAX_WINDOW_SAMPLES (CorruptRecordError; ValueError when `spec.fps` asks for that)."""
    checks = [
        ops.corrupt(ops.valid_rate(rate), lambda: ("The stored audio_rate ", rate,
                                                    " is not a rate."))
    ]  # fmt: skip
    if spec.fps is None and source_fps is not None:
        checks.append(
            ops.corrupt(ops.valid_rate(source_fps),
                        lambda: ("The stored frame rate ", source_fps, " is not a rate."))
        )  # fmt: skip
    length = ops.after(checks, lambda: window_length(ops, spec, rate, source_fps))
    check = ops.corrupt if spec.fps is None else ops.check
    within = ops.logical_and(length > 0, length <= MAX_WINDOW_SAMPLES)
    checks.append(
        check(within, lambda: ("A clip's audio window would be ", length, " samples (",
                               spec.num_frames * spec.stride, " frame periods of ", rate,
                               f" samples/s): more than {MAX_WINDOW_SAMPLES}."))
    )  # fmt: skip
    return ops.after(checks, lambda: ops.identity(length))


def window_starts(ops, indices, timestamps, source_fps, rate):
    """int64 [num_views]: where each view's window starts in the example's audio.

    At its first frame's stored timestamp (else index / source_fps), on the grid the build
    cut the audio on: round(t * rate) - round(timestamps[0] * rate).
    """
    first = ops.maximum(indices[:, 0], 0)
    rate = ops.f64(rate)
    if timestamps is None:
        if source_fps is None:
            raise ValueError("audio=True needs each video's timestamps (or its stored frame rate).")
        return _nearest(ops, ops.f64(first) / ops.f64(source_fps) * rate)
    times = ops.f64(timestamps)
    return _nearest(ops, ops.gather(times, first) * rate) - _nearest(ops, times[0] * rate)


def _missing(samples, rate):
    if samples is None or rate is None:
        raise ValueError(
            "audio=True needs the example's audio and audio_rate (a dataset built with "
            "VideoConfig(audio_rate=...)): pass audio= and audio_rate=."
        )


def window_np(spec, indices, samples, rate, timestamps, source_fps, out=None) -> np.ndarray:
    """The planned views' audio (`indices`: the plan's), float32 [S, C] or [num_views, S, C]."""
    _missing(samples, rate)
    ops = backends.NP_OPS
    length = int(_checked_length(ops, spec, rate, source_fps))
    starts = window_starts(ops, indices, timestamps, source_fps, rate)
    windows = cut_np(samples, starts, length, out if out is None or spec.multi_clip else out[None])
    return windows if spec.multi_clip else windows[0]


def window_tf(spec, indices, samples, rate, timestamps, source_fps):
    """`window_np` in a TF graph."""
    _missing(samples, rate)
    ops = backends.tf_ops()
    length = _checked_length(ops, spec, rate, source_fps)
    starts = window_starts(ops, indices, timestamps, source_fps, rate)
    return cut_tf(samples, starts, length, spec.num_views, views_axis=spec.multi_clip)


def cut_np(samples: np.ndarray, starts, length: int, out=None) -> np.ndarray:
    """float32 [num_views, length, channels]: each view's window of int16 `samples`, silent
    past their end; into `out` (a float32 array of that shape) when given."""
    starts = np.asarray(starts).tolist()
    shape = (len(starts), int(length), samples.shape[1])
    if out is None:
        out = np.empty(shape, np.float32)
    elif out.shape != shape or out.dtype != np.float32:
        raise ValueError(f"audio_out= must be a float32 array of shape {shape}; got "
                         f"{out.dtype} {out.shape}.")  # fmt: skip
    for view, start in enumerate(starts):
        piece = samples[max(start, 0) : max(start, 0) + shape[1]]
        np.multiply(piece, np.float32(SCALE), out=out[view, : len(piece)], dtype=np.float32)
        out[view, len(piece) :] = 0
    return out


def cut_tf(samples, starts, length, num_views: int, *, views_axis: bool = True):
    """`cut_np` in a TF graph: float32 [num_views, length, channels] from int16 `samples`
    ([length, channels] for one view without `views_axis`).

    Each window is one slice of the samples, padded only past their end (TF's pad forwards a
    window that needs none), then converted: no stacked copy for a single view.
    """
    tf = backends.tf_ops().tf
    samples = tf.convert_to_tensor(samples)
    length = tf.cast(length, tf.int64)
    windows = []
    for start in tf.unstack(tf.maximum(starts, 0), num=num_views):
        piece = samples[start : start + length]  # clamped at the end of the audio
        missing = length - tf.shape(piece, out_type=tf.int64)[0]
        windows.append(tf.pad(piece, tf.stack([tf.stack([0, missing]), [0, 0]])))
    if views_axis:
        windows = [tf.stack(windows)] if num_views > 1 else [windows[0][None]]
    audio = tf.cast(windows[0], tf.float32) * SCALE
    static = tf.get_static_value(length)
    shape = [None if static is None else int(static), samples.shape[-1]]
    return tf.ensure_shape(audio, [num_views, *shape] if views_axis else shape)
