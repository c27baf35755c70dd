"""Record and frame checksums: TFRecord's masked CRC32C, and checking only the frames read.

A TFRecord record's CRC32C covers the whole record, so checking it reads every
byte (0.7 ms for a 6.6 MB record, most of it memory bandwidth), while a clip
decodes a few percent of them. Datasets that store each frame's CRC32C
(`frame_crc32c`, builder version 2.1.0 on) are checked in two parts instead:
`CheckedFrames` checks each frame as a clip reads it, and on a record's first
read `crc32c_outside_frames` gives the record's own CRC32C from its bytes
outside the frames and the frames' stored checksums (CRCs of concatenated
blocks combine), so labels, metadata and the checksums themselves are covered
without reading the frames.
"""

from __future__ import annotations

from awscrt.checksums import combine_crc32c, crc32c

from video_tfrecords.records.example_parser import ByteValues
from video_tfrecords.util.errors import CorruptRecordError

__all__ = [
    "CheckedFrames", "CorruptRecordError", "crc32c_around_list", "crc32c_outside_frames", "mask",
    "masked_crc",
]  # fmt: skip

_CRC_MASK_DELTA = 0xA282EAD8


def mask(crc: int) -> int:
    """TFRecord's masking of a CRC32C."""
    return (((crc >> 15) | (crc << 17)) + _CRC_MASK_DELTA) & 0xFFFFFFFF


def masked_crc(data) -> int:
    """TFRecord's masked CRC32C of a bytes-like object.

    awscrt's CRC32C folds with carry-less multiplies (AVX-512 where the CPU has
    it): about 27 GB/s here, 4.8x google-crc32c's.
    """
    return mask(crc32c(data))


def crc32c_around_list(record, span: tuple[int, int], list_crc: int) -> int:
    """The CRC32C of `record`, taking that of its bytes from `span[0]` to `span[1]` (a video's
    frame list) from `list_crc` (its stored `video_crc32c`, 2.6.0 on): two reads of the bytes
    around the frames and one fold, however many frames the video has."""
    start, stop = span
    crc = combine_crc32c(crc32c(record[:start]), list_crc, stop - start)
    return crc32c(record[stop:], crc)


def crc32c_outside_frames(record, frames: ByteValues, frame_crcs) -> int:
    """The CRC32C of `record`, taking each frame's from `frame_crcs` instead of its bytes.

    Reads only the bytes between the frames (their headers, the other features)
    and folds in each frame's checksum: the CRC of two concatenated blocks is
    a function of theirs. `frames` must be values parsed from `record`.
    """
    crc, pos = 0, 0
    for start, stop, frame_crc in zip(frames.starts, frames.stops, frame_crcs):
        crc = combine_crc32c(crc32c(record[pos:start], crc), frame_crc, stop - start)
        pos = stop
    return crc32c(record[pos:], crc)


class CheckedFrames:
    """A video's frames whose CRC32C is checked as each one is read (the clip's, no others).

    A sequence like the list of frames it wraps; `frames[i]` raises
    CorruptRecordError naming the frame and `where()` if its bytes do not match
    `expected[i]` (the record's `frame_crc32c`).
    """

    def __init__(self, frames, expected, where):
        if len(expected) != len(frames):
            raise CorruptRecordError(
                f"{where()} has {len(frames)} frames but {len(expected)} frame checksums."
            )
        self._frames = frames
        self._expected = expected
        self._where = where

    def __len__(self) -> int:
        return len(self._frames)

    def __getitem__(self, index: int):
        frame = self._frames[index]
        if crc32c(frame) != self._expected[index]:
            raise CorruptRecordError(
                f"Frame {index} of {self._where()} is corrupt (CRC32C mismatch)."
            )
        return frame
