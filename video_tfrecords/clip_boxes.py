"""Random-resized crop boxes (Inception / torchvision `RandomResizedCrop`), planned per clip.

Kept apart from `clip_plan` (frames, fixed boxes, flips): this is the one box
whose size is random. Written over the same ops, so the TF and NumPy paths
draw the same box for a key. The algorithm is torchvision's: up to 10 tries
of an area fraction uniform in `crop_area` and a log-aspect uniform in
log(`crop_aspect`), rounded half to even; the first box that fits is placed
uniformly; if none fits, the largest centred box whose aspect is clamped to
the range.
"""

from __future__ import annotations

import math

from video_tfrecords.clip_plan import _draw, _randint  # noqa: PLC2701  (this package's draws)

__all__ = ["TRIES", "resized_crop_boxes"]

TRIES = 10
_COUNTERS = 2**33  # Draw counters of these boxes (past clip_plan's slots and segments).
_DRAWS_PER_CLIP = 2 * TRIES + 2


def _uniform(ops, key, counter):
    """A float64 uniform in [0, 1) from the key's stream (53 random bits)."""
    bits = ops.shr(_draw(ops, key, counter), 11)
    return ops.f64(bits) * 2.0**-53


def _fallback(ops, spec, height, width):
    """torchvision's fallback: the whole frame, its aspect clamped to crop_aspect, centred."""
    lo, hi = spec.crop_aspect
    h, w = ops.f64(height), ops.f64(width)
    ratio = w / h
    narrow_h = ops.round_i64(w / lo)  # frame narrower than the range: full width
    wide_w = ops.round_i64(h * hi)  # frame wider than the range: full height
    box_h = ops.where(ratio < lo, narrow_h, ops.i64(height))
    box_w = ops.where(ratio > hi, wide_w, ops.i64(width))
    return box_h, box_w


def _one_box(ops, spec, key, clip, height, width):
    """(y, x, h, w) int64 of one clip's box in a height x width frame."""
    base = _COUNTERS + clip * _DRAWS_PER_CLIP
    area = ops.f64(height) * ops.f64(width)
    (area_lo, area_hi), (aspect_lo, aspect_hi) = spec.crop_area, spec.crop_aspect
    log_lo, log_hi = math.log(aspect_lo), math.log(aspect_hi)
    box_h, box_w = _fallback(ops, spec, height, width)
    found = ops.i64(0) > 0  # False, as an op
    for k in range(TRIES):
        target = area * (area_lo + (area_hi - area_lo) * _uniform(ops, key, base + 2 * k))
        aspect = ops.exp(log_lo + (log_hi - log_lo) * _uniform(ops, key, base + 2 * k + 1))
        w = ops.round_i64(ops.sqrt(target * aspect))
        h = ops.round_i64(ops.sqrt(target / aspect))
        fits_w = ops.logical_and(w > 0, w <= ops.i64(width))
        fits = ops.logical_and(fits_w, ops.logical_and(h > 0, h <= ops.i64(height)))
        take = ops.logical_and(fits, ops.logical_not(found))
        box_h, box_w = ops.where(take, h, box_h), ops.where(take, w, box_w)
        found = ops.logical_or(found, fits)
    room_y, room_x = ops.i64(height) - box_h, ops.i64(width) - box_w
    y = ops.where(found, _randint(ops, key, base + 2 * TRIES, room_y + 1), room_y // 2)
    x = ops.where(found, _randint(ops, key, base + 2 * TRIES + 1, room_x + 1), room_x // 2)
    return y, x, box_h, box_w


def resized_crop_boxes(ops, spec, key, height, width):
    """(offsets, sizes): int64 [num_clips, 2] (y, x) and (h, w) of each clip's box.

    `height`, `width`: the frame's size, or int64 [num_clips] per clip (scale jitter).
    """
    per_clip = isinstance(spec.short_side, tuple)
    offsets, sizes = [], []
    for c in range(spec.num_clips):
        frame_h, frame_w = (height[c], width[c]) if per_clip else (height, width)
        y, x, h, w = _one_box(ops, spec, key, c, frame_h, frame_w)
        offsets.append(ops.stack([y, x]))
        sizes.append(ops.stack([h, w]))
    return ops.stack(offsets), ops.stack(sizes)
