"""A clip's plan: its frames, boxes, flips and sizes, with the checks that make it valid.

Both decoders (`decode_np`, `decode_tf`) run `checked_plan` over their
backend's ops, so they decode the same clip. It draws from `sampling` (which
frames), `boxes` (where, and flips) and `geometry` (sizes); its checks (no
frames, too short, not a JPEG, a box larger than the frame) name the video.
Imports neither TensorFlow nor TFDS.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from video_tfrecords.clips import backends, boxes, geometry, jpeg, keys, sampling
from video_tfrecords.util.errors import CorruptRecordError

__all__ = [
    "MAX_FRAMES", "Layout", "checked_plan", "clip_key", "frame_geometry", "resizes_boxes",
    "stored_boxes",
    "video_label",
]  # fmt: skip

# The most frames a stored example may have (a record's lists are refused past it before they
# are parsed whole): a build's 1 GiB example holds fewer frames of 4 KiB (about 100 x 100 px).
MAX_FRAMES = 1 << 18


@dataclasses.dataclass
class Layout:
    """A clip's plan and what decoding it needs to know."""

    plan: dict[str, Any]
    checks: list[Any]  # TF: ops to depend on (NumPy checks have raised already)
    frame_size: tuple[Any, Any] | None = None  # (h, w) of the stored frames
    out_size: tuple[Any, Any] | None = None  # (h, w) after `short_side`, before the crop
    ratio: Any = 1  # JPEG DCT scaling denominator to decode with
    # (y, x, h, w), int64 [num_views] each: the box of each view in the decoded
    # frame, resized to crop_size; None when boxes are cut from whole frames.
    boxes: tuple[Any, Any, Any, Any] | None = None
    # Whether the frames cover a fixed box (None without one): else plan with enlarge=True.
    covers: Any = None


def video_label(ops, frames, name):
    """Message parts naming a video: its name, else its content fingerprint."""
    if name is not None:
        return ("`", name, "`")  # Backticks: tf.debugging.Assert escapes quotes in graph mode.
    fingerprint = ops.signed(keys.fingerprint_u64(ops, frames))
    return ("(fingerprint ", fingerprint, "; see video_tfrecords.clips.keys.video_fingerprint)")


def clip_key(ops, spec, frames, seed, fingerprint=None):
    """uint64 key: from (seed, else spec.seed, and the video content), else fresh."""
    seed = spec.seed if seed is None else seed
    if seed is None:
        return keys.fresh_key(ops)
    return keys.seeded_key(ops, seed, frames, fingerprint)


def _frame_size(ops, frames, index, label, checks):
    """(h, w) of the planned frame `index`, read from its JPEG header once it is checked
    (`jpeg.frame_problem`: no size is taken from a header that claims too many pixels)."""
    data = ops.frame_or_empty(frames, index)
    ok, problem = ops.jpeg_problem(data)
    checks.append(
        ops.corrupt(ok, lambda: ("Frame ", index, " of video ", *label(), " ", problem, "."))
    )
    return ops.after(checks, lambda: ops.jpeg_size(data))


def _stored_size(frame_shape) -> tuple[int, int]:
    """The (h, w) a dataset says its frames have, if it is one a frame can have."""
    height, width = (int(s) for s in frame_shape)
    if not (0 < height and 0 < width and height * width <= jpeg.MAX_PIXELS):
        raise CorruptRecordError(
            f"The stored frame size {width}x{height} is not one a frame can have (1 to "
            f"{jpeg.MAX_PIXELS} pixels)."
        )
    return height, width


def frame_geometry(ops, spec, size):
    """(size after short_side, DCT scaling denominator) for stored frames of `size`."""
    if spec.short_side is None:
        return size, 1
    if isinstance(spec.short_side, tuple):  # jitter: the smallest frame; a scale for the largest
        lo, hi = spec.short_side
        return geometry.resized_size(ops, *size, lo), geometry.reduction(ops, *size, hi)
    return (
        geometry.resized_size(ops, *size, spec.short_side),
        geometry.reduction(ops, *size, spec.short_side),
    )


def _times(ops, spec, frames, timestamps, source_fps):
    """float64 [L] time of each frame for `spec.fps`: the stored timestamps, else i / source_fps."""
    if spec.fps is None:
        return None
    if timestamps is not None:
        return ops.f64(timestamps)
    if source_fps is None:
        raise ValueError(
            f"fps={spec.fps} needs each video's timestamps (or its stored frame rate): "
            "pass timestamps= (or source_fps=)."
        )
    return ops.f64(ops.arange(ops.num_frames(frames))) / ops.f64(source_fps)


def _checked_times(ops, spec, frames, timestamps, source_fps, label, checks):
    """`_times`, once the stored values they come from are checked: as many timestamps as
    frames, each finite, >= 0 and none before the one before it; or a frame rate > 0. With
    `audio` and no `fps`, the stored timestamps (which place the audio) are checked all the
    same, and None is returned."""
    if spec.fps is None:
        if spec.audio and timestamps is not None:
            _check_times(ops, frames, ops.f64(timestamps), label, checks)
        return None
    if timestamps is None and source_fps is not None:
        checks.append(
            ops.corrupt(
                ops.valid_rate(source_fps),
                lambda: ("Video ", *label(), " has a stored frame rate of ", source_fps,
                         ": not a frame rate."),
            )
        )  # fmt: skip
    times = ops.after(checks, lambda: _times(ops, spec, frames, timestamps, source_fps))
    _check_times(ops, frames, times, label, checks)
    return ops.after(checks, lambda: ops.identity(times))


def _check_times(ops, frames, times, label, checks) -> None:
    """Adds the checks of the frames' `times`: one a frame, each a time, in order."""
    length = ops.num_frames(frames)
    checks.append(
        ops.corrupt(
            ops.size(times) == length,
            lambda: ("Video ", *label(), " has ", length, " frames but ", ops.size(times),
                     " timestamps."),
        )
    )  # fmt: skip
    checks.append(
        ops.corrupt(
            ops.valid_times(times),
            lambda: ("Video ", *label(), (" has timestamps that are not times (each must be "
                                          "finite, >= 0, and none before the one before it).")),
        )
    )  # fmt: skip


def checked_plan(
    ops,
    spec,
    frames,
    seed,
    name,
    *,
    frame_shape=None,
    need_size=False,
    fingerprint=None,
    timestamps=None,
    source_fps=None,
    enlarge=False,
):
    """The clip's `Layout`, after the checks that make the plan valid (errors name the video).

    A frame smaller than a fixed box (`crop_size` after `short_side`) sets `layout.covers`
    false: plan again with `enlarge=True` to scale such frames up, aspect kept, until they
    cover the box (`geometry.covering_size`), each view's box resized alone.
    """
    length = ops.num_frames(frames)
    label = lambda: video_label(ops, frames, name)
    counted = lambda: (
        "Video ", *label(), " has ", length, f" frames: a stored example has 1 to {MAX_FRAMES}."
    )  # fmt: skip
    checks = [ops.corrupt(ops.logical_and(length > 0, length <= MAX_FRAMES), counted)]
    times = _checked_times(ops, spec, frames, timestamps, source_fps, label, checks)
    if times is not None:
        units = ops.after(checks, lambda: sampling.tick_count(ops, times, spec.fps))
        unit_name = f" ticks of 1/{spec.fps} s"
    else:
        units, unit_name = length, " frames"
    if spec.short_video == "error":
        too_short = (
            f"{unit_name}, but a clip of num_frames={spec.num_frames} with stride={spec.stride} "
            f"spans {spec.min_span} frames (short_video: error)."
        )
        checks.append(
            ops.check(
                units >= spec.min_span, lambda: ("Video ", *label(), " has ", units, too_short)
            )
        )
    key = ops.after(checks, lambda: clip_key(ops, spec, frames, seed, fingerprint))
    indices = ops.after(checks, lambda: sampling.clip_frames(ops, spec, key, length, times))
    layout = Layout({"indices": indices}, checks)
    if need_size or spec.crop_size is not None or spec.short_side is not None:
        if frame_shape is not None:  # Static sizes: plain ints, decided while tracing.
            frame_shape = _stored_size(frame_shape)
            out, ratio = frame_geometry(backends.NP_OPS, spec, frame_shape)
            out, ratio = (int(out[0]), int(out[1])), int(ratio)
            layout.frame_size = frame_shape
        else:
            layout.frame_size = _frame_size(ops, frames, indices[0, 0], label, checks)
            out, ratio = frame_geometry(ops, spec, layout.frame_size)
        layout.out_size, layout.ratio = out, ratio
    if spec.crop_size is None:
        layout.plan["crop_offsets"] = boxes.crop_offsets(ops, spec, key, None, None)
    elif spec.crop == "resized":  # any frame holds a box: it is resized to crop_size
        if isinstance(spec.short_side, tuple):
            out = _jittered_sizes(ops, spec, key, layout)
        offsets, sizes = boxes.resized_crop_boxes(ops, spec, key, *out)
        layout.plan["crop_offsets"], layout.plan["box_size"] = offsets, sizes
    else:
        if isinstance(spec.short_side, tuple):
            out = _jittered_sizes(ops, spec, key, layout)
        # Static sizes (a feature's fixed shape) decide while tracing: a bool, not a tensor.
        layout.covers = geometry.covers(backends.ops_for(*out), *out, *spec.crop_size)
        if enlarge:
            out = geometry.covering_size(ops, *out, *spec.crop_size)
            layout.ratio = 1
            layout.out_size = tuple(
                ops.repeat(ops.i64(s), spec.num_crops) if isinstance(spec.short_side, tuple) else s
                for s in out
            )
        layout.plan["crop_offsets"] = ops.after(
            checks, lambda: boxes.crop_offsets(ops, spec, key, *out)
        )
    layout.plan["flip"] = boxes.flip_flags(ops, spec, key)
    if resizes_boxes(spec) or enlarge:
        if spec.crop == "resized":  # boxes of their own sizes: the scale that still covers them
            layout.ratio = ops.after(checks, lambda: _drawn_box_reduction(ops, spec, layout))
        layout.boxes = ops.after(checks, lambda: _source_boxes(ops, spec, layout, layout.ratio))
    return layout


def resizes_boxes(spec) -> bool:
    """Whether each view's box is resized on its own (not cut from a resized whole frame).

    So with a drawn box (crop="resized") and with `short_side` before a single
    box: a 224 crop after scale jitter resizes a ~180 px box, not a 455x256
    frame. Three test crops (num_crops=3) after a fixed `short_side` cover the
    frame: one whole-frame resize serves them all.
    """
    if spec.crop_size is None:
        return False
    jitter = isinstance(spec.short_side, tuple)
    return spec.crop == "resized" or jitter or (spec.short_side is not None and spec.num_crops == 1)


def _drawn_box_reduction(ops, spec, layout):
    """The coarsest DCT scaling at which every drawn box still covers `crop_size`.

    A 900x700 box resized to 224x224 decodes at 1/2 (450x350; at 1/4, 175
    rows would not cover 224).
    """
    _, _, heights, widths = _source_boxes(ops, spec, layout, 1)  # at full size
    crop_h, crop_w = spec.crop_size

    def covers(r):
        views = range(spec.num_views)
        fits = [ops.logical_and(heights[v] >= r * crop_h, widths[v] >= r * crop_w) for v in views]
        return functools.reduce(ops.logical_and, fits)

    return geometry.coarsest_scale(ops, *(ops.i64(s) for s in layout.frame_size), covers)


def _source_boxes(ops, spec, layout, ratio):
    """Each view's box mapped from the frame after `short_side` to the frame decoded at 1/ratio.

    A box [y, y + h) of a frame resized to `out` rows covers [y * d / out,
    (y + h) * d / out) of the `d` decoded rows; both ends are rounded to the
    nearest row, so the box is within half a decoded pixel of the exact area.
    """
    offsets = layout.plan["crop_offsets"]
    sizes = layout.plan.get("box_size")
    per_axis = []
    for axis in range(2):
        start = offsets[:, axis]
        length = sizes[:, axis] if sizes is not None else start * 0 + spec.crop_size[axis]
        out = ops.i64(layout.out_size[axis])
        decoded = (ops.i64(layout.frame_size[axis]) + ratio - 1) // ratio
        begin = (2 * start * decoded + out) // (2 * out)
        end = (2 * (start + length) * decoded + out) // (2 * out)
        per_axis.append((begin, ops.maximum(end - begin, 1)))
    (y, h), (x, w) = per_axis
    return y, x, h, w


def stored_boxes(ops, spec, layout):
    """(y, x, h, w), int64 [num_views] each: each view's box in the stored frame's pixels (the
    whole frame without a crop). For showing what a clip takes; needs `layout.out_size`."""
    if spec.crop_size is None:
        height, width = (ops.i64(s) for s in layout.frame_size)
        zeros = ops.i64(ops.arange(spec.num_views)) * 0
        return zeros, zeros, zeros + height, zeros + width
    return _source_boxes(ops, spec, layout, 1)


def _jittered_sizes(ops, spec, key, layout):
    """Scale jitter: each clip's frame size after its drawn short side, [num_clips] per axis.

    Records the short side of every view in the plan and their frame sizes in
    `layout.out_size` (int64 [num_views] per axis).
    """
    sides = boxes.short_sides(ops, spec, key)
    out = geometry.resized_size(ops, *layout.frame_size, sides)
    layout.plan["short_side"] = ops.repeat(sides, spec.num_crops)
    layout.out_size = tuple(ops.repeat(ops.i64(s), spec.num_crops) for s in out)
    return out
