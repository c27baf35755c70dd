"""Where each view's box is, and whether it is flipped: fixed, test-view and random-resized boxes.

Pure functions of (spec, key, frame size) over a backend's ops, so the TF and
NumPy paths draw the same boxes. Fixed boxes are placed at random or centred;
test views (num_crops > 1) are centred across the short side and spread along
the long one (PySlowFast's uniform crop); crop="resized" draws torchvision's
`RandomResizedCrop` box: up to 10 tries of an area fraction uniform in
`crop_area` and a log-aspect uniform in log(`crop_aspect`), rounded half to
even; the first box that fits is placed uniformly; if none fits, the largest
centred box whose aspect is clamped to the range.
"""

from __future__ import annotations

import math

from video_tfrecords.clips import keys

__all__ = ["TRIES", "crop_offsets", "flip_flags", "resized_crop_boxes", "short_sides"]

TRIES = 10
_DRAWS_PER_CLIP = 2 * TRIES + 2


def _uniform(ops, key, counter):
    """A float64 uniform in [0, 1) from the key's stream (53 random bits)."""
    bits = ops.shr(keys.draw(ops, key, counter), 11)
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
    base = keys.RESIZED_BOX_COUNTERS + clip * _DRAWS_PER_CLIP
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
    y = ops.where(found, keys.randint(ops, key, base + 2 * TRIES, room_y + 1), room_y // 2)
    x = ops.where(found, keys.randint(ops, key, base + 2 * TRIES + 1, room_x + 1), room_x // 2)
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
    counters = [keys.clip_counter(c, keys.SLOT_SCALE) for c in range(spec.num_clips)]
    draws = [keys.randint(ops, key, counter, hi - lo + 1) for counter in counters]
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
            y = keys.randint(ops, key, keys.clip_counter(c, keys.SLOT_CROP_Y), room_y + 1)
            x = keys.randint(ops, key, keys.clip_counter(c, keys.SLOT_CROP_X), room_x + 1)
        else:
            y, x = room_y // 2, room_x // 2
        offsets.append(ops.stack([y, x]))
    return ops.stack(offsets)


def flip_flags(ops, spec, key):
    """bool [num_views]: one horizontal-flip coin per view (all False without `flip`)."""
    views = spec.num_clips * spec.num_crops
    if not spec.flip:
        return ops.zeros([views], "bool")
    coins = [keys.draw(ops, key, keys.clip_counter(v, keys.SLOT_FLIP)) & 1 for v in range(views)]
    return ops.stack([coin == 1 for coin in coins])
