"""JPEG frames: the header's size, a whole-file check, and the NumPy path's decode.

Decoding is libjpeg-turbo through simplejpeg: the accurate integer IDCT, fancy
upsampling and DCT scaling, the pixels of TensorFlow's `decode_jpeg` (which
the TF path uses), straight into a given array. Imports no TensorFlow.
"""

from __future__ import annotations

import numpy as np
import simplejpeg

__all__ = ["JPEG_MAGIC", "decode_rgb", "is_whole_jpeg", "jpeg_size"]

JPEG_MAGIC = b"\xff\xd8\xff"
# Start-of-frame markers (they carry the image size): C0-CF but DHT, JPG and DAC.
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def jpeg_size(data) -> tuple[int, int] | None:
    """(height, width) from a JPEG's start-of-frame header, or None if there is none."""
    view = memoryview(data).cast("B")
    if bytes(view[:3]) != JPEG_MAGIC:
        return None
    pos = 2
    while pos + 4 <= len(view):
        if view[pos] != 0xFF:
            return None
        marker = view[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in _SOF_MARKERS:
            if pos + 9 > len(view):
                return None
            return (view[pos + 5] << 8 | view[pos + 6], view[pos + 7] << 8 | view[pos + 8])
        if marker in (0xD9, 0xDA):  # end of image, start of scan: no size before them
            return None
        pos += 2 + (view[pos + 2] << 8 | view[pos + 3])
    return None


def is_whole_jpeg(buffer: np.ndarray) -> bool:
    """Whether the bytes start like a JPEG and end with its end-of-image marker.

    OpenCV decodes a truncated JPEG with a warning (grey rows); TensorFlow
    fails. The marker cannot occur inside the entropy-coded data (0xFF is
    always followed by 0x00 or a restart marker there); up to 62 bytes of
    padding after it are allowed.
    """
    if bytes(buffer[:3]) != JPEG_MAGIC:
        return False
    tail = bytes(buffer[-64:])
    return tail.rfind(b"\xff\xd9") >= 0


def decode_rgb(data, ratio: int, out: np.ndarray, where) -> np.ndarray:
    """Decodes JPEG bytes at 1/`ratio` scale into `out` (uint8 RGB [h, w, 3]), returning it.

    libjpeg-turbo through simplejpeg: the accurate integer IDCT, fancy
    upsampling and DCT scaling as in TensorFlow's `decode_jpeg(ratio=...)`
    (equal pixels), EXIF orientation ignored as TensorFlow does, and straight
    into `out`, the clip's own memory where it can be. `where()` names the
    frame in errors: a truncated or corrupt JPEG, or one that decodes to
    another size than `out`'s, raises ValueError.
    """
    buffer = np.frombuffer(data, np.uint8)
    if not is_whole_jpeg(buffer):
        raise ValueError(f"{where()} is not a valid JPEG.")
    try:
        height, width, _, _ = simplejpeg.decode_jpeg_header(buffer)
    except ValueError as e:
        raise ValueError(f"{where()} is not a valid JPEG ({e}).") from None
    found, size = (-(-height // ratio), -(-width // ratio)), out.shape[:2]
    if found != size:
        raise ValueError(
            f"{where()} decodes to {found[1]}x{found[0]}, other frames to {size[1]}x{size[0]}; "
            "frames must have one size."
        )
    try:
        return simplejpeg.decode_jpeg(
            buffer, "RGB", min_height=found[0], min_width=found[1], min_factor=ratio, buffer=out
        )
    except ValueError as e:
        raise ValueError(f"{where()} is not a valid JPEG ({e}).") from None
