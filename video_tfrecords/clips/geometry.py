"""Frame sizes of a clip: the size after `short_side`, and the JPEG DCT scale to decode at.

Pure functions over a backend's ops (`backends`), shared by both decoders.
"""

from __future__ import annotations

import numpy as np

from video_tfrecords.clips.backends import NP_OPS

__all__ = ["REDUCTIONS", "coarsest_scale", "covering_size", "covers", "reduction", "resized_size"]

REDUCTIONS = (1, 2, 4, 8)  # JPEG DCT scaling denominators (see `reduction`).


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


def covers(ops, height, width, box_h, box_w):
    """Whether frames of height x width (each clip's, with scale jitter) hold the box."""
    if type(height) is int and type(width) is int:  # a dataset's fixed size (NumPy's `all` costs)
        return height >= box_h and width >= box_w
    fits = ops.logical_and(height >= box_h, width >= box_w)
    if ops is NP_OPS:
        return bool(np.all(fits))
    return ops.tf.reduce_all(fits)


def covering_size(ops, height, width, box_h, box_w):
    """(h, w) enlarged, aspect kept, to the smallest size that holds the box; unchanged if it
    does already (as torchvision's and PySlowFast's scaling would before their crop).

    The axis that needs the larger scale becomes the box's side; the other is rounded half
    up, which keeps it at least the box's (its exact value is).
    """
    height, width = ops.i64(height), ops.i64(width)
    by_height = box_h * width >= box_w * height
    new_h = ops.where(by_height, ops.i64(box_h), (height * box_w + width // 2) // width)
    new_w = ops.where(by_height, (width * box_h + height // 2) // height, ops.i64(box_w))
    fits = ops.logical_and(height >= box_h, width >= box_w)
    return ops.where(fits, height, new_h), ops.where(fits, width, new_w)
