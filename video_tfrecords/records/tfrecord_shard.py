"""One TFRecord shard: read by random access (an index of record offsets into a read-only
memory map), and written without TensorFlow.

A record is a view into the page cache (no copy), and a read touches only the
pages it uses. Record headers are checked when the file is indexed; a
record's data CRC32C on its first read in the process (or, for a reader that
checks the frames it uses, from the bytes outside them: `checksums`).
"""

from __future__ import annotations

import mmap
import os
import struct
import threading
from collections.abc import Iterable

import numpy as np
from awscrt.checksums import crc32c

from video_tfrecords.records.checksums import (
    CorruptRecordError,
    crc32c_around_list,
    crc32c_outside_frames,
    mask,
    masked_crc,
)
from video_tfrecords.records.example_parser import ByteValues, parse_example
from video_tfrecords.util.fork_safe import ForkSafeLock

__all__ = ["TfRecordShard", "write_tfrecord"]

_TFRECORD_HEADER = 12  # uint64 length + uint32 masked CRC of the length
_TFRECORD_FOOTER = 4  # uint32 masked CRC of the data
# Protobuf's limit on a message (the build writes at most 1 GiB): a longer record is refused.
MAX_RECORD_BYTES = (1 << 31) - 1
# Frames past which a record's first check reads all its bytes (27 GB/s) rather than folding in
# each frame's checksum (a Python step a frame).
_FOLDED_FRAMES = 4096
# Opening a file and indexing it happen once per process, even with reader threads
# (Grain's). Re-entrant: indexing opens the file.
_OPENING = ForkSafeLock(threading.RLock)


class TfRecordShard:
    """Random access to one TFRecord file: an index of record offsets into a read-only map.

    The file is memory-mapped, so a record is a view into the page cache (no
    copy) and a read touches only the pages it uses. With `check_data`, each
    record's CRC32C is checked on its first read in the process (a forked child
    keeps its parent's checks); later reads of it check its length field only,
    as the file is assumed unchanged while it is open (as the offset index
    already assumes). Without it, the reader checks the frames it uses itself.
    """

    def __init__(self, path: str, check_data: bool = True):
        self.path = path
        self.check_data = check_data
        self.offsets: np.ndarray | None = None  # byte offset of each record's header
        self.sizes: np.ndarray | None = None  # length of each record's data
        self._map: mmap.mmap | None = None
        self._view: memoryview | None = None  # of the whole map
        self._checked: bytearray | None = None  # 1 = record's CRC32C checked in this process

    def __getstate__(self):
        return {
            "path": self.path,
            "check_data": self.check_data,
            "offsets": self.offsets,
            "sizes": self.sizes,
        }

    def __setstate__(self, state):
        self.__init__(state["path"], state.get("check_data", True))
        self.offsets, self.sizes = state["offsets"], state["sizes"]

    def _file(self) -> memoryview:
        """A view of the whole file, mapped read-only on first use (a map stays valid in a fork)."""
        if self._view is None:
            with _OPENING:
                if self._view is None:
                    with open(self.path, "rb") as f:
                        size = os.fstat(f.fileno()).st_size
                        if size:  # an empty file cannot be mapped
                            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                    self._view = memoryview(self._map) if size else memoryview(b"")
        return self._view

    def close(self) -> None:
        """Drops the map; it is unmapped once no record view into it is left."""
        self._view = self._map = None

    def build_index(self) -> int:
        """Reads every record header (checking its CRC); returns the number of records."""
        if self.offsets is None:
            with _OPENING:
                if self.offsets is None:  # offsets last: another thread checks them unlocked
                    offsets, self.sizes = self._scan(self._file())
                    self.offsets = offsets
        if self._checked is None:
            self._checked = bytearray(len(self.offsets))
        return len(self.offsets)

    def _scan(self, view: memoryview) -> tuple[np.ndarray, np.ndarray]:
        """(offsets, data sizes) of every record, from their headers."""
        end = len(view)
        offsets, sizes, pos = [], [], 0
        while pos < end:
            if pos + _TFRECORD_HEADER > end:
                raise CorruptRecordError(
                    f"{self.path}: truncated record header at byte {pos} (record {len(offsets)})."
                )
            size, crc = struct.unpack_from("<QI", view, pos)
            if masked_crc(view[pos : pos + 8]) != crc:
                raise CorruptRecordError(
                    f"{self.path}: record {len(offsets)} (byte {pos}) has a corrupt length "
                    "(CRC32C mismatch)."
                )
            if size > MAX_RECORD_BYTES:
                raise CorruptRecordError(
                    f"{self.path}: record {len(offsets)} (byte {pos}) claims {size} bytes: more "
                    f"than a tf.train.Example holds ({MAX_RECORD_BYTES})."
                )
            if pos + _TFRECORD_HEADER + size + _TFRECORD_FOOTER > end:
                raise CorruptRecordError(
                    f"{self.path}: record {len(offsets)} (byte {pos}) is cut short: the file ends "
                    "inside it."
                )
            offsets.append(pos)
            sizes.append(size)
            pos += _TFRECORD_HEADER + size + _TFRECORD_FOOTER
        return np.array(offsets, np.int64), np.array(sizes, np.int64)

    def read(self, index: int) -> memoryview:
        """The data of record `index`, a view into the map (its CRC32C checked on first read,
        with `check_data`)."""
        self.build_index()
        view = self._file()
        start, size = int(self.offsets[index]), int(self.sizes[index])
        data_start = start + _TFRECORD_HEADER
        if len(view) < data_start + size + _TFRECORD_FOOTER or (
            struct.unpack_from("<Q", view, start)[0] != size
        ):
            raise CorruptRecordError(
                f"{self.path}: record {index} (byte {start}) changed since the file was indexed."
            )
        data = view[data_start : data_start + size]
        if self.check_data and not self._checked[index]:
            (crc,) = struct.unpack_from("<I", view, data_start + size)
            if masked_crc(data) != crc:
                raise CorruptRecordError(
                    f"{self.path}: record {index} (byte {start}){_video_hint(data)} is corrupt "
                    "(CRC32C mismatch)."
                )
            self._checked[index] = 1
        return data

    def check_outside_frames(
        self, index: int, data, frames: ByteValues, frame_crcs, list_crc: int | None = None
    ) -> None:
        """Checks record `index`'s CRC32C from its bytes outside `frames` and their stored
        checksums (`list_crc`: that of the whole list, when the record stores it), on its first
        read in the process (nothing to do once checked)."""
        if self._checked[index]:
            return
        start = int(self.offsets[index])
        (stored,) = struct.unpack_from("<I", self._file(), start + _TFRECORD_HEADER + data.nbytes)
        try:
            if list_crc is not None and frames.span is not None:
                crc = crc32c_around_list(data, frames.span, list_crc)
            elif len(frames) > _FOLDED_FRAMES:  # the frames are checked one by one as read anyway
                crc = crc32c(data)
            else:
                crc = crc32c_outside_frames(data, frames, np.asarray(frame_crcs).tolist())
        except (OverflowError, ValueError, TypeError):  # a stored checksum out of range
            crc = None
        if crc is None or mask(crc) != stored:
            raise CorruptRecordError(
                f"{self.path}: record {index} (byte {start}){_video_hint(data)} is corrupt "
                "outside its frames (CRC32C mismatch)."
            )
        self._checked[index] = 1

    def read_many(self, indices: list[int]) -> list[memoryview]:
        return [self.read(i) for i in indices]


def _video_hint(data) -> str:
    """' of video `name`' if the (possibly damaged) record still names its video, else ''."""
    try:
        name = parse_example(data).get("filename")
        return f" of video `{bytes(name[0]).decode('utf-8')}`" if name else ""
    except Exception:  # noqa: BLE001 - only a hint for an error message being raised
        return ""


def write_tfrecord(path, records: Iterable[bytes]) -> None:
    """Writes a TFRecord file at `path` (an `etils.epath.Path`, local or remote): each record
    as its length, the length's masked CRC32C, the data and the data's masked CRC32C, as
    `tf.io.TFRecordWriter` does."""
    with path.open("wb") as f:
        for data in records:
            length = struct.pack("<Q", len(data))
            f.write(length + struct.pack("<I", masked_crc(length)))
            f.write(data)
            f.write(struct.pack("<I", masked_crc(data)))
