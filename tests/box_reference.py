"""Reference pixels of a box cut after a resize, written from the definition, not from the package.

A clip's box is planned in the frame resized to its short side (PySlowFast's
scale, then crop). The package resizes the box alone: the box's rows
[y, y + h) of a frame resized to `out` rows are rows [y * d / out,
(y + h) * d / out) of the `d` decoded rows, both ends rounded to the nearest
row, resized to the box's size: bilinear (PySlowFast's and MMAction2's
interpolation), area averaging when the box is at least twice the output on
both sides.
"""

from __future__ import annotations

import cv2
import numpy as np


def source_span(start: int, length: int, out: int, decoded: int) -> tuple[int, int]:
    """(first row, rows) in the decoded frame of rows [start, start + length) of `out` rows."""
    first = round_half_up(start * decoded / out)
    last = round_half_up((start + length) * decoded / out)
    return first, max(last - first, 1)


def round_half_up(value: float) -> int:
    return int(np.floor(value + 0.5))


def resized_box(decoded: np.ndarray, offset, box, out_size, size) -> np.ndarray:
    """The box (y, x) + (h, w) of `decoded` resized to `out_size`, as pixels of `size` (h, w)."""
    y, h = source_span(offset[0], box[0], out_size[0], decoded.shape[0])
    x, w = source_span(offset[1], box[1], out_size[1], decoded.shape[1])
    return resized(decoded[y : y + h, x : x + w], size)


def resized(box: np.ndarray, size) -> np.ndarray:
    """`box` at `size` (h, w): as is, bilinear, or area when it halves (or more) both sides."""
    if box.shape[:2] == tuple(size):
        return box
    halves = box.shape[0] >= 2 * size[0] and box.shape[1] >= 2 * size[1]
    method = cv2.INTER_AREA if halves else cv2.INTER_LINEAR
    return cv2.resize(box, (size[1], size[0]), interpolation=method)
