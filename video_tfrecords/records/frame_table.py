"""Where each frame lies in a record, without walking the frames (2.6.0 on).

A record stores a video's frames as one list: each frame is a tag byte (0x0A), its length as
a varint, then its JPEG bytes. Finding frame i means reading the i lengths before it, which
for a 16-frame clip of a 250-frame video is most of a record's parse, and touches a memory
page of every frame. The build stores each frame's size (`frame_sizes`), from which a reader
places every frame at once, and the CRC32C of the whole list as stored (`frames_crc32c`),
from which the record's own CRC32C follows on a first read without reading the frames: the
frames the clip decodes are checked by their own `frame_crc32c`.
"""

from __future__ import annotations

import numpy as np
from awscrt.checksums import combine_crc32c, crc32c

__all__ = ["list_crc32c", "places", "sizes", "varint"]

_TAG = 0x0A  # field 1, length-delimited: a BytesList's value


def varint(value: int) -> bytes:
    """`value` (not negative) as a protobuf base-128 varint."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def sizes(frames) -> np.ndarray:
    """Each frame's size in bytes (int32: a record is under 2 GiB): the build's `frame_sizes`,
    stored as its bytes."""
    return np.fromiter((len(f) for f in frames), np.int32, len(frames))


def list_crc32c(frames, frame_crcs) -> int:
    """The CRC32C of `frames` as a record stores them (tag, length, bytes, frame after frame),
    from each frame's own CRC32C (`frame_crcs`) without reading its bytes again."""
    crc = 0
    for frame, frame_crc in zip(frames, frame_crcs, strict=True):
        crc = crc32c(bytes([_TAG]) + varint(len(frame)), crc)
        crc = combine_crc32c(crc, int(frame_crc), len(frame))
    return crc


def places(stored_sizes: np.ndarray, start: int, end: int) -> tuple[list[int], list[int]] | None:
    """Where each frame's bytes start and stop in a record whose frame list lies from `start`
    to `end`, if `stored_sizes` (the record's `frame_sizes`) account for exactly those bytes;
    None otherwise (the reader then walks the list)."""
    if stored_sizes.ndim != 1 or (stored_sizes.size and stored_sizes.min() < 0):
        return None
    sized = stored_sizes.astype(np.int64)
    head = 2 + (sized >= 1 << 7) + (sized >= 1 << 14) + (sized >= 1 << 21) + (sized >= 1 << 28)
    stops = start + np.cumsum(head + sized)
    if (stops[-1] if stops.size else start) != end:
        return None
    return (stops - sized).tolist(), stops.tolist()


def head_matches(record, frame_start: int, size: int) -> bool:
    """Whether the bytes before a frame placed by `places` are its tag and length, as a
    record's own frame list has them (a frame of a damaged or forged table does not)."""
    head = bytes([_TAG]) + varint(size)
    return frame_start >= len(head) and record[frame_start - len(head) : frame_start] == head
