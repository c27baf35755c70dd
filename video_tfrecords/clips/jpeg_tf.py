"""The frame header check (`jpeg.Headers`) in a TF graph, before any frame of a clip is decoded.

A `tf.numpy_function` costs ~0.2 ms a call (more than the check itself), so the usual case
runs in graph ops: the first planned frame's header walked segment by segment to its
start-of-frame (baseline, 8-bit, 3 components, the expected size, at most `jpeg.MAX_PIXELS`),
then every other frame's bytes up to there compared with the first's, and each frame's length
checked against its pixels (`jpeg.Headers`' own shortcut: a video's frames share one encoder's
header). Anything else (a header the walk cannot settle, a frame whose header differs) goes
to `jpeg.Headers` itself through `tf.numpy_function`, which passes it or names the first bad
frame, as the NumPy path does. TensorFlow is imported by these functions only, on first use.
"""

from __future__ import annotations

import numpy as np

from video_tfrecords.clips import jpeg
from video_tfrecords.clips.plan import video_label

__all__ = ["checked_headers"]

FAST_BYTES = 256  # the bytes walked in the graph (the build's start-of-frame ends at 177)
STEPS = 6  # segments walked in the graph (the build's start-of-frame is the 4th)
# What a marker byte after 0xFF starts: 0 no segment (a fill byte, a scan, the end, 0x00), 1 a
# segment with a length, 2 a start-of-frame header (of any kind: the walk stops at it).
_KINDS = np.zeros(256, np.int64)
_KINDS[[m for m in range(0x01, 0xFF) if m not in (0xD9, 0xDA)]] = 1
_KINDS[[m for m in range(0xC0, 0xD0) if m not in (0xC4, 0xC8, 0xCC)]] = 2
# A start-of-frame header the build writes: FF C0 (or C1), length 17, 8 bits, the height and
# width, 3 components; C0 | 1 == C1, and the size bytes are compared when one is expected.
_SOF_BYTES = np.array([0xFF, 0xC1, 0, 17, 8, 0xFF, 0xFF, 0xFF, 0xFF, 3], np.int64)
_SOF_MASK = np.array([0, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0], np.int64)


def checked_headers(ops, frames, wanted, size, name):
    """An op that checks the headers of `frames[wanted]` (in plan order) against `size` (h, w;
    None: the first one's), raising InvalidArgumentError "CorruptRecordError: Frame i of video
    ... <what is wrong>." as the NumPy path words it."""
    tf = ops.tf
    chosen = tf.gather(frames, wanted)
    first = chosen[0]
    settled, end, pixels = _first_header(tf, first, size)
    end = tf.cast(end, tf.int32)
    same = tf.equal(tf.strings.substr(chosen, 0, end), tf.strings.substr(first, 0, end))
    whole = tf.cast(tf.strings.length(chosen), tf.int64) * jpeg.PIXELS_PER_BYTE >= pixels
    passed = tf.logical_and(settled, tf.reduce_all(tf.logical_and(same, whole)))

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


def _first_header(tf, frame, size):
    """(whether the frame's header passes, where its start-of-frame header ends, its pixels),
    in a few dozen graph ops; False where the walk cannot tell (fill bytes, a start-of-frame
    past FAST_BYTES or STEPS segments): `jpeg.Headers` decides those."""
    n = FAST_BYTES
    r = tf.cast(tf.io.decode_raw(frame, tf.uint8, fixed_length=n + 4), tf.int64)
    kind = tf.gather(_KINDS, r[1 : n + 1]) * tf.cast(tf.equal(r[:n], 0xFF), tf.int64)
    following = tf.range(2, n + 2, dtype=tf.int64) + r[2 : n + 2] * 256 + r[3 : n + 3]
    following = tf.minimum(following, n - 1)  # (past the bytes walked: no segment there)
    chain = [tf.constant(2, tf.int64)]
    for _ in range(STEPS - 1):
        chain.append(tf.gather(following, chain[-1]))
    chain = tf.stack(chain)
    kinds = tf.gather(kind, chain)
    step = tf.argmax(tf.not_equal(kinds, 1), output_type=tf.int64)  # the first non-segment
    at = tf.gather(chain, step)
    header = tf.gather(r, at + tf.range(10, dtype=tf.int64))
    if size is None:
        mask, expected = _SOF_MASK, _SOF_BYTES
    else:
        height, width = (tf.cast(s, tf.int64) for s in size)
        mask = _SOF_MASK * np.array([1] * 5 + [0] * 4 + [1])
        sizes = [height // 256, height % 256, width // 256, width % 256]
        expected = tf.stack([*_SOF_BYTES[:5].tolist(), *sizes, 3])
    fields = tf.reduce_all(tf.equal(tf.bitwise.bitwise_or(header, mask), expected))
    rows = tf.reshape(header[5:9], [2, 2])  # (height, width), big-endian bytes
    pixels = tf.reduce_prod(tf.linalg.matvec(rows, tf.constant([256, 1], tf.int64)))
    checks = [
        fields, tf.equal(tf.gather(kinds, step), 2), at + 19 <= n,
        tf.logical_and(pixels > 0, pixels <= jpeg.MAX_PIXELS),
        tf.reduce_all(tf.equal(r[:3], [0xFF, 0xD8, 0xFF])),
    ]  # fmt: skip
    return tf.reduce_all(tf.stack(checks)), at + 19, pixels
