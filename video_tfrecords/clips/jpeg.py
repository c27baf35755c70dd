"""JPEG frames: the header every reader checks before decoding, and the NumPy path's decode.

A frame's header is checked before a byte of pixels is allocated for it (`frame_problem`), on
every reader: a record's writer (damage, or anyone who writes a shard) also writes the size a
frame claims, and libjpeg allocates what the header asks for, then fills what the data lacks
with grey. So, as libjpeg-turbo's `TJPARAM_MAXPIXELS` and Pillow's `MAX_IMAGE_PIXELS` do, a
frame must stay under an absolute pixel cap (which a stored size cannot raise); it must also be
the size its video's frames are (the feature's shape, the example's stored size, or the first
frame's), be an encoding the build writes (baseline, 8-bit, 3 components: progressive scans
are libjpeg-turbo's other known bomb, `TJPARAM_SCANLIMIT`), and hold enough bytes for its
pixels. Decoding is libjpeg-turbo through simplejpeg: the accurate integer IDCT, fancy
upsampling and DCT scaling, the pixels of TensorFlow's `decode_jpeg` (which the TF path
uses), straight into a given array. Imports no TensorFlow.
"""

from __future__ import annotations

import numpy as np
import simplejpeg

from video_tfrecords.util.errors import CorruptRecordError

__all__ = [
    "HEADER_BYTES",
    "JPEG_MAGIC",
    "MAX_PIXELS",
    "Headers",
    "decode_rgb",
    "frame_problem",
    "is_whole_jpeg",
    "jpeg_size",
    "read_header",
]

JPEG_MAGIC = b"\xff\xd8\xff"
# The most pixels a stored frame may have: 8192 x 8192 (8K video, 7680 x 4320, and DCI 8K fit;
# 192 MiB decoded). A build refuses to store larger frames.
MAX_PIXELS = 1 << 26
# Where a frame's start-of-frame header must be: the build's (OpenCV's and TF's encoders) is at
# byte 158, after the JFIF segment and the quantization tables; no EXIF or ICC data comes first.
HEADER_BYTES = 1024
# A baseline scan spends at least 2 bits (a DC and an end-of-block code) on each 8x8 block of
# luma alone: fewer bytes than pixels / 256 cannot hold the image (a header that lies).
PIXELS_PER_BYTE = 256
# Start-of-frame markers (they carry the image size): C0-CF but DHT, JPG and DAC.
_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_SEQUENTIAL = (0xC0, 0xC1)  # baseline and extended sequential, Huffman-coded: what the build writes
_KINDS = {0xC2: "progressive", 0xC3: "lossless", 0xC6: "progressive", 0xC7: "lossless"}


def read_header(data) -> tuple[int, int, int, int, int, int] | None:
    """(marker, precision, height, width, components, where the header ends) of the
    start-of-frame header within the first HEADER_BYTES bytes, or None if there is none (not a
    JPEG, or malformed)."""
    view = memoryview(data).cast("B")[:HEADER_BYTES]
    end = len(view)
    if bytes(view[:3]) != JPEG_MAGIC:
        return None
    pos = 2
    while pos + 4 <= end:
        if view[pos] != 0xFF:
            return None
        marker = view[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in _SOF_MARKERS:
            if pos + 10 > end:
                return None
            components = view[pos + 9]
            if view[pos + 2] << 8 | view[pos + 3] != 8 + 3 * components:
                return None
            height = view[pos + 5] << 8 | view[pos + 6]
            width = view[pos + 7] << 8 | view[pos + 8]
            end = pos + 10 + 3 * components
            return marker, view[pos + 4], height, width, components, end
        if marker in (0xD9, 0xDA):  # end of image, start of scan: no size before them
            return None
        pos += 2 + (view[pos + 2] << 8 | view[pos + 3])
    return None


def jpeg_size(data) -> tuple[int, int] | None:
    """(height, width) from a JPEG's start-of-frame header, or None if there is none."""
    header = read_header(data)
    return None if header is None else (header[2], header[3])


def frame_problem(data, size=None, length: int | None = None) -> str | None:
    """What is wrong with a stored frame's header, in words (a phrase after "Frame i of video
    v"), or None: checked before it is decoded.

    `data`: the frame (or at least its first HEADER_BYTES bytes); `size`: the (height, width)
    its video's frames have, if known; `length`: its whole length in bytes (default len(data)).
    """
    header = read_header(data)
    if header is None:
        if bytes(memoryview(data).cast("B")[:3]) != JPEG_MAGIC:
            return "is not a valid JPEG"
        return f"is not a valid JPEG (no start-of-frame header in its first {HEADER_BYTES} bytes)"
    marker, precision, height, width, components, _ = header
    if marker not in _SEQUENTIAL:
        kind = _KINDS.get(marker, "hierarchical" if marker in (0xC5, 0xCD) else "arithmetic-coded")
        return f"is a {kind} JPEG (marker 0x{marker:02X}): the build writes baseline JPEGs only"
    if precision != 8:
        return f"is a {precision}-bit JPEG: the build writes 8-bit JPEGs only"
    if components != 3:
        return f"has {components} colour components: the build writes 3 (YCbCr)"
    if size is not None and (height, width) != tuple(size):
        return f"is {width}x{height}, but its video's frames are {size[1]}x{size[0]}"
    if not 0 < height * width <= MAX_PIXELS:
        return f"claims {width}x{height} pixels: a stored frame has 1 to {MAX_PIXELS} of them"
    length = len(memoryview(data).cast("B")) if length is None else int(length)
    return _too_short(length, height, width)


def _too_short(length: int, height: int, width: int) -> str | None:
    if length * PIXELS_PER_BYTE < height * width:
        return f"is {length} bytes: too few to hold {width}x{height} pixels"
    return None


class Headers:
    """`frame_problem` for each frame of a video, at the cost of a byte comparison for all but
    the first: the build writes every frame of a video with one encoder, size and quality, so
    its bytes up to the end of the start-of-frame header are the same in every frame. A frame
    whose bytes there equal the last fully checked passing frame's gets its verdict (those bytes
    decide it; its length is checked on its own); any other is checked in full. `size`: the
    (height, width) every frame must have, else the first frame's. With a size, one instance
    serves every video of that size (`for_size`), in any thread: a dataset's frames share
    their header bytes, so a clip's first frame takes the quick route too."""

    def __init__(self, size=None):
        self.size = None if size is None else tuple(int(s) for s in size)
        # (header bytes, the fewest bytes a frame of `size` may have): one value, set at once
        self._known: tuple[bytes, int] | None = None
        self._decoded: dict[int, tuple[int, int]] = {}  # DCT scaling -> decoded (h, w)

    @classmethod
    def for_size(cls, size) -> Headers:
        """The shared instance for frames of `size` (height, width)."""
        size = (int(size[0]), int(size[1]))
        headers = _SHARED_HEADERS.get(size)
        if headers is None:
            if len(_SHARED_HEADERS) >= 256:  # (datasets of many sizes: start over)
                _SHARED_HEADERS.clear()
            headers = _SHARED_HEADERS[size] = cls(size)
        return headers

    def passes(self, view: memoryview) -> bool:
        """Whether a frame (a byte memoryview of it whole) passes by the quick route alone:
        known header bytes, and enough bytes for its pixels. When not, `problem` says what is
        wrong, if anything."""
        known = self._known
        return (
            known is not None and len(view) >= known[1]
            and bytes(view[: len(known[0])]) == known[0]
        )  # fmt: skip

    def decoded_size(self, ratio: int) -> tuple[int, int]:
        """(h, w) of a frame of `size` decoded at 1/`ratio` (DCT scaling rounds up)."""
        found = self._decoded.get(ratio)
        if found is None:
            found = self._decoded[ratio] = (-(-self.size[0] // ratio), -(-self.size[1] // ratio))
        return found

    def problem(self, data, length: int | None = None) -> str | None:
        """What is wrong with a frame's header (`frame_problem`'s words), or None. `data`: the
        frame, or at least its first HEADER_BYTES bytes; `length`: its whole length."""
        view = memoryview(data).cast("B")
        length = len(view) if length is None else int(length)
        known = self._known
        if known is not None and bytes(view[: len(known[0])]) == known[0]:
            return _too_short(length, *self.size)
        problem = frame_problem(view, self.size, length)
        if problem is None:
            _, _, height, width, _, end = read_header(view)
            if self.size is None:
                self.size = (height, width)
            # (`_too_short`'s bound; the size is `size`'s, which the header's must equal)
            self._known = (bytes(view[:end]), -(-height * width // PIXELS_PER_BYTE))
        return problem


_SHARED_HEADERS: dict[tuple[int, int], Headers] = {}


def is_whole_jpeg(buffer) -> bool:
    """Whether the bytes start like a JPEG and end with its end-of-image marker.

    OpenCV decodes a truncated JPEG with a warning (grey rows); TensorFlow
    fails. The marker cannot occur inside the entropy-coded data (0xFF is
    always followed by 0x00 or a restart marker there); up to 62 bytes of
    padding after it are allowed.
    """
    view = memoryview(buffer).cast("B")
    return bytes(view[:3]) == JPEG_MAGIC and _ends_image(view)


_END_OF_IMAGE = b"\xff\xd9"


def _ends_image(view: memoryview) -> bool:
    return _END_OF_IMAGE in bytes(view[-64:])


def decode_rgb(data, ratio: int, out: np.ndarray, where, headers: Headers) -> np.ndarray:
    """Decodes JPEG bytes at 1/`ratio` scale into `out` (uint8 RGB [h, w, 3]), returning it.

    libjpeg-turbo through simplejpeg: the accurate integer IDCT, fancy
    upsampling and DCT scaling as in TensorFlow's `decode_jpeg(ratio=...)`
    (equal pixels), EXIF orientation ignored as TensorFlow does, and straight
    into `out`, the clip's own memory where it can be. The header is checked
    first (`headers`: the video's, and the size every frame of it has); `where()`
    names the frame in errors: a frame that fails the check, is cut short or
    does not decode raises CorruptRecordError.
    """
    view = memoryview(data).cast("B")
    if not headers.passes(view):  # (every frame but the first passes by the quick route)
        problem = headers.problem(view)
        if problem is not None:
            raise CorruptRecordError(f"{where()} {problem}.")
    # (it starts like a JPEG: its header passed; the marker is most often the last two bytes)
    if bytes(view[-2:]) != _END_OF_IMAGE and not _ends_image(view):
        raise CorruptRecordError(f"{where()} is not a valid JPEG (no end-of-image marker).")
    found = headers.decoded_size(ratio)
    if found != out.shape[:2]:  # the caller's slot is of the video's decoded size
        raise ValueError(f"{where()} decodes to {found[1]}x{found[0]}, not {out.shape[1]}x"
                         f"{out.shape[0]}.")  # fmt: skip
    try:
        return simplejpeg.decode_jpeg(
            view, "RGB", min_height=found[0], min_width=found[1], min_factor=ratio, buffer=out
        )
    except ValueError as e:
        raise CorruptRecordError(f"{where()} is not a valid JPEG ({e}).") from None
