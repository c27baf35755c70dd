"""Resizing frames and boxes with OpenCV, the same calls on the NumPy and TF paths (the TF
graph calls them through `tf.numpy_function`), so both give the same pixels."""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["area_resize", "resize_box"]


def resize_box(box: np.ndarray, height: int, width: int, out=None, flip=False) -> np.ndarray:
    """A box at the output size, mirrored if `flip`, into `out` if given (else a new array).

    Bilinear, as PySlowFast, PyTorchVideo and MMAction2 resize; area averaging
    when the box is at least twice the output on both sides, where bilinear
    would alias. OpenCV's bilinear costs a fifth of its area resize at these
    sizes, and a quarter of TensorFlow's (so both paths resize boxes here).
    """
    if box.shape[:2] != (height, width):
        halves = box.shape[0] >= 2 * height and box.shape[1] >= 2 * width
        method = cv2.INTER_AREA if halves else cv2.INTER_LINEAR
        box = cv2.resize(box, (width, height), dst=None if flip else out, interpolation=method)
        if not flip:
            return box
    if flip:
        return cv2.flip(box, 1, dst=out)
    if out is None:
        return np.array(box)
    np.copyto(out, box)
    return out


def area_resize(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """Resizes with pixel-area averaging (OpenCV's INTER_AREA)."""
    return cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)

