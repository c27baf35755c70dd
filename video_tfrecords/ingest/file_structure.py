"""What a video file's own structure says of its length, read without FFmpeg.

MP4/MOV boxes, AVI's RIFF chunks and Matroska's segment state their sizes: a file shorter
than that was cut (a download or a copy that stopped early), and an MP4 without its `moov`
box was never finished. FFmpeg reports neither plainly; `video_io` words them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

__all__ = ["declared_size", "is_mp4_without_index"]

_MP4_TOP = {b"ftyp", b"moov", b"mdat", b"free", b"skip", b"wide", b"pnot"}  # QuickTime: no ftyp


def declared_size(path: str) -> int:
    """The bytes the container's structure says the file has, 0 when it does not say.

    MP4/MOV boxes and AVI's RIFF chunks state their sizes, Matroska/WebM its segment's:
    a file shorter than that was cut (a download or a copy that stopped early).
    """
    with open(path, "rb") as file:
        head = file.read(4096)
        if head[:4] == b"\x1a\x45\xdf\xa3":  # EBML
            return _matroska_end(head)
        if head[:4] == b"RIFF" or head[4:8] in _MP4_TOP:
            return max((end for _, end in _top_level(file, riff=head[:4] == b"RIFF")), default=0)
    return 0


def is_mp4_without_index(path: str) -> bool:
    """An MP4/MOV file whose top level has no `moov` box: its writer never finished."""
    with open(path, "rb") as file:
        if file.read(8)[4:8] not in _MP4_TOP:
            return False
        return all(kind != b"moov" for kind, _ in _top_level(file, riff=False))


def _top_level(file, riff: bool) -> Iterator[tuple[bytes, int]]:
    """(type, end offset) of each top-level MP4 box or RIFF chunk, as its header states.

    An MP4 box's size counts its header, is 64-bit when it says 1 and runs to the end when
    it says 0; a RIFF chunk's does not count its header and is padded to even.
    """
    size = os.fstat(file.fileno()).st_size
    position = 0
    while position + 8 <= size:
        file.seek(position)
        header = file.read(16)
        if riff:
            kind, length = header[:4], 8 + int.from_bytes(header[4:8], "little")
            length += length & 1
        else:
            kind, length = header[4:8], int.from_bytes(header[:4], "big")
            if length == 1 and len(header) == 16:
                length = int.from_bytes(header[8:16], "big")
            elif length == 0:
                length = size - position
        if length < 8 or not kind.isalnum():  # not a box: trailing bytes, not structure
            return
        position += length
        yield kind, position


def _matroska_end(head: bytes) -> int:
    """Where the Segment after the EBML header ends; 0 when its size is unknown (live)."""
    header_size, position = _ebml_size(head, 4)  # after the EBML header's 4-byte id
    if header_size is None or head[position + header_size : position + header_size + 4] != (
        b"\x18\x53\x80\x67"  # the Segment's id
    ):
        return 0
    segment_size, start = _ebml_size(head, position + header_size + 4)
    return 0 if segment_size is None else start + segment_size


def _ebml_size(data: bytes, position: int) -> tuple[int | None, int]:
    """(size, where the data starts) of an EBML size field; None if unreadable or unknown.

    The leading zero bits of its first byte say how many bytes follow; all ones means unknown.
    """
    if position >= len(data) or data[position] == 0:
        return None, position
    width = 9 - data[position].bit_length()
    value = int.from_bytes(data[position : position + width], "big") & ((1 << 7 * width) - 1)
    return (None if value == (1 << 7 * width) - 1 else value), position + width
