"""The frame header check (`jpeg.Headers`) in a TF graph, before any frame of a clip is decoded.

A graph op costs microseconds and a `tf.numpy_function` ~0.2 ms a call, so the usual case is a
few array ops: the frames' first 177 bytes against the header the build's encoders (OpenCV's,
and TensorFlow's for datasets TFDS wrote) put there: SOI, a JFIF segment, two 8-bit
quantization tables and a baseline start-of-frame header, 8-bit, 4:2:0 YCbCr, of the expected
size (the quantization values and JFIF density may be anything), at most `jpeg.MAX_PIXELS`
pixels, and each frame's length enough for them. That header walks to its start-of-frame at a
fixed place, so matching it settles what `jpeg.frame_problem` asks. A frame with any other
header goes to `jpeg.Headers` itself, through `tf.numpy_function`, which passes it or names the
first bad frame in the NumPy path's words. TensorFlow is imported by these functions only.
"""

from __future__ import annotations

import numpy as np

from video_tfrecords.clips import jpeg
from video_tfrecords.clips.plan import video_label

__all__ = ["checked_headers"]

# The build's header, byte by byte (None: any value): SOI; APP0 "JFIF" of 16 bytes (version,
# density: any); DQT of table 0 and DQT of table 1, 64 values each (any); SOF0 of 17 bytes:
# 8 bits, height, width (checked on their own), 3 components: Y 2x2 and Cb, Cr 1x1.
_HEADER = (
    [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, *b"JFIF\0", None, None, None, None, None, None, None,
     None, None]
    + [0xFF, 0xDB, 0x00, 0x43, 0x00] + [None] * 64 + [0xFF, 0xDB, 0x00, 0x43, 0x01] + [None] * 64
    + [0xFF, 0xC0, 0x00, 0x11, 0x08, None, None, None, None, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]
)  # fmt: skip
_SIZE_AT = 163  # the start-of-frame's height and width: 4 bytes, big-endian
_TEMPLATE = np.array([0xFF if b is None else b for b in _HEADER], np.uint8)
_MASK = np.array([0xFF if b is None else 0 for b in _HEADER], np.uint8)


def checked_headers(ops, frames, wanted, size, name, chosen=None):
    """An op that checks the headers of `frames[wanted]` (in plan order; `chosen`: those frames,
    if the caller has gathered them) against `size` (h, w; None: the first one's), raising
    InvalidArgumentError "CorruptRecordError: Frame i of video ... <what is wrong>." as the
    NumPy path words it."""
    tf = ops.tf
    chosen = tf.gather(frames, wanted) if chosen is None else chosen
    rows = tf.io.decode_raw(chosen, tf.uint8, fixed_length=len(_HEADER))
    lengths = tf.strings.length(chosen)
    usual = tf.reduce_all(tf.equal(tf.bitwise.bitwise_or(rows, _MASK), _TEMPLATE))
    found = tf.cast(rows[:, _SIZE_AT : _SIZE_AT + 4], tf.int64)  # [n, 4]
    if size is None:
        expected = found[0]
    else:
        height, width = (tf.cast(s, tf.int64) for s in size)
        expected = tf.stack([height // 256, height % 256, width // 256, width % 256])
    pixels = (expected[0] * 256 + expected[1]) * (expected[2] * 256 + expected[3])
    passed = tf.reduce_all(
        tf.stack([
            usual, tf.reduce_all(tf.equal(found, expected)),
            pixels > 0, pixels <= jpeg.MAX_PIXELS,
            tf.reduce_all(tf.cast(lengths, tf.int64) * jpeg.PIXELS_PER_BYTE >= pixels),
        ])
    )  # fmt: skip

    def checked_in_python():
        height, width = (tf.cast(s, tf.int64) for s in (size or (-1, -1)))
        heads = tf.io.decode_raw(chosen, tf.uint8, fixed_length=jpeg.HEADER_BYTES)
        position, problem = tf.numpy_function(
            _first_problem, [heads, tf.strings.length(chosen), height, width],
            [tf.int64, tf.uint8], stateful=False,
        )  # fmt: skip
        bad = tf.gather(wanted, tf.maximum(position, 0))
        words = tf.strings.unicode_encode(tf.reshape(tf.cast(problem, tf.int32), [-1]), "UTF-8")
        label = lambda: video_label(ops, frames, name)
        return ops.corrupt(
            tf.less(position, 0), lambda: ("Frame ", bad, " of video ", *label(), " ", words, ".")
        )

    if tf.executing_eagerly():
        return tf.constant(True) if bool(passed) else checked_in_python()
    return tf.cond(passed, lambda: tf.constant(True), checked_in_python)


def _first_problem(heads, lengths, height, width):
    """(position of the first frame `jpeg.Headers` refuses, its words as bytes) of the frames
    whose first HEADER_BYTES bytes are `heads` (uint8 rows); (-1, b"") if none is."""
    headers = jpeg.Headers(None if height < 0 else (height, width))
    for position, (head, length) in enumerate(zip(heads, lengths.tolist())):
        problem = headers.problem(head.tobytes()[:length], length)
        if problem is not None:
            return np.int64(position), np.frombuffer(problem.encode(), np.uint8)
    return np.int64(-1), np.zeros(0, np.uint8)
