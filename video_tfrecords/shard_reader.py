"""Reading a split's records by index from its shards, with their checksums checked.

TFRecord shards are read through an offset index into a read-only memory map
(a record is a view into the page cache, no copy); array_record shards
through array_record's own reader (it checks its own hashes on every read).

Checksums: a TFRecord record's CRC32C covers the whole record, so checking it
reads every byte (0.7 ms for a 6.6 MB record, most of it memory bandwidth),
while a clip decodes a few percent of them. Datasets that store each frame's
CRC32C (`frame_crc32c`, builder version 2.1.0 on) are checked in two parts
instead: `CheckedFrames` checks each frame as a clip reads it, and on a
record's first read in the process `SplitReader.check_outside_frames` checks
the record's own CRC32C from its bytes outside the frames and the frames'
stored checksums (CRCs of concatenated blocks combine), so the labels,
metadata and the checksums themselves are covered without reading the
frames. Older datasets get each record's CRC32C checked on its first read in
the process (tf.data checks on every read).
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
import threading

import numpy as np
from awscrt import checksums

from video_tfrecords.dataset_files import Shards
from video_tfrecords.example_parser import ByteValues, parse_example

__all__ = [
    "CheckedFrames",
    "CorruptRecordError",
    "SplitReader",
    "crc32c_outside_frames",
    "note_array_record_use",
]

# The two reads TFDS offers, as array_record options: none of the read-ahead a
# sequential scan wants, which only wastes I/O on random access.
_ARRAY_RECORD_OPTIONS = "readahead_buffer_size:0,max_parallelism:0"
_TFRECORD_HEADER = 12  # uint64 length + uint32 masked CRC of the length
_TFRECORD_FOOTER = 4  # uint32 masked CRC of the data
_CRC_MASK_DELTA = 0xA282EAD8
# Opening a file and indexing it happen once per process, even with reader threads
# (Grain's). Re-entrant: indexing opens the file.
_OPENING = threading.RLock()


def _new_opening_lock() -> None:
    """A fresh lock in a forked child (the parent's may have been held by another thread)."""
    global _OPENING
    _OPENING = threading.RLock()


os.register_at_fork(after_in_child=_new_opening_lock)


class CorruptRecordError(ValueError):
    """A record whose bytes fail their checksum or do not parse as a tf.train.Example."""


def _mask(crc: int) -> int:
    """TFRecord's masking of a CRC32C."""
    return (((crc >> 15) | (crc << 17)) + _CRC_MASK_DELTA) & 0xFFFFFFFF


def _masked_crc(data) -> int:
    """TFRecord's masked CRC32C of a bytes-like object.

    awscrt's CRC32C folds with carry-less multiplies (AVX-512 where the CPU has
    it): about 27 GB/s here, 4.8x google-crc32c's.
    """
    return _mask(checksums.crc32c(data))


def crc32c_outside_frames(record, frames: ByteValues, frame_crcs) -> int:
    """The CRC32C of `record`, taking each frame's from `frame_crcs` instead of its bytes.

    Reads only the bytes between the frames (their headers, the other features)
    and folds in each frame's checksum: the CRC of two concatenated blocks is
    a function of theirs. `frames` must be values parsed from `record`.
    """
    crc32c, combine = checksums.crc32c, checksums.combine_crc32c
    crc, pos = 0, 0
    for start, stop, frame_crc in zip(frames.starts, frames.stops, frame_crcs):
        crc = combine(crc32c(record[pos:start], crc), frame_crc, stop - start)
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
        if checksums.crc32c(frame) != self._expected[index]:
            raise CorruptRecordError(
                f"Frame {index} of {self._where()} is corrupt (CRC32C mismatch)."
            )
        return frame


class _TfRecordShard:
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
            if _masked_crc(view[pos : pos + 8]) != crc:
                raise CorruptRecordError(
                    f"{self.path}: record {len(offsets)} (byte {pos}) has a corrupt length "
                    "(CRC32C mismatch)."
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
            if _masked_crc(data) != crc:
                raise CorruptRecordError(
                    f"{self.path}: record {index} (byte {start}){_video_hint(data)} is corrupt "
                    "(CRC32C mismatch)."
                )
            self._checked[index] = 1
        return data

    def check_outside_frames(self, index: int, data, frames: ByteValues, frame_crcs) -> None:
        """Checks record `index`'s CRC32C from its bytes outside `frames` and their stored
        checksums, on its first read in the process (nothing to do once checked)."""
        if self._checked[index]:
            return
        start = int(self.offsets[index])
        (stored,) = struct.unpack_from("<I", self._file(), start + _TFRECORD_HEADER + data.nbytes)
        try:
            crc = crc32c_outside_frames(data, frames, np.asarray(frame_crcs).tolist())
        except (OverflowError, ValueError, TypeError):  # a stored checksum out of range
            crc = None
        if crc is None or _mask(crc) != stored:
            raise CorruptRecordError(
                f"{self.path}: record {index} (byte {start}){_video_hint(data)} is corrupt "
                "outside its frames (CRC32C mismatch)."
            )
        self._checked[index] = 1

    def read_many(self, indices: list[int]) -> list[memoryview]:
        return [self.read(i) for i in indices]


# array_record (riegeli) keeps process-wide state that a background thread serves; a
# process forked after array_record was read or written (up to about a minute after its
# last use) has the state but not the thread, and its first array_record read crashes
# it (a segfault). The pid of the process that used it, so that a forked child refuses
# with a clear error instead.
_ARRAY_RECORD_OPENED_IN: int | None = None


def note_array_record_use() -> None:
    """Records that this process has read or written array_record files (see above)."""
    global _ARRAY_RECORD_OPENED_IN
    _ARRAY_RECORD_OPENED_IN = os.getpid()


class _ArrayRecordShard:
    """Random access to one array_record file through array_record's reader (it checks hashes)."""

    def __init__(self, path: str):
        self.path = path
        self._reader = None
        self._pid = None

    def __getstate__(self):
        return {"path": self.path}

    def __setstate__(self, state):
        self.__init__(state["path"])

    def _open(self):
        if self._reader is None or self._pid != os.getpid():  # a reader is not fork-safe
            with _OPENING:
                if self._reader is None or self._pid != os.getpid():
                    self._reader = self._new_reader()
                    self._pid = os.getpid()
        return self._reader

    def _new_reader(self):
        from array_record.python import array_record_module

        parent = _ARRAY_RECORD_OPENED_IN
        if parent is not None and parent != os.getpid():
            raise RuntimeError(
                f"Cannot read {self.path}: this process was forked from process {parent} after "
                "that one had read or written array_record files, and array_record's reader "
                "can crash such a child (a segfault: its background thread is not forked). "
                "Start the workers with spawn or forkserver (PyTorch: DataLoader(..., "
                "multiprocessing_context='forkserver')), or read nothing in the main process "
                "before they start."
            )
        try:
            reader = array_record_module.ArrayRecordReader(self.path, _ARRAY_RECORD_OPTIONS)
        except (RuntimeError, ValueError, OSError) as e:
            raise CorruptRecordError(f"{self.path}: cannot open as array_record: {e}") from e
        note_array_record_use()
        return reader

    def close(self) -> None:
        if self._reader is not None and self._pid == os.getpid():
            self._reader.close()
        self._reader = None

    def build_index(self) -> int:
        return self._open().num_records()

    def read_many(self, indices: list[int]) -> list[bytes]:
        reader = self._open()
        try:
            return reader.read(list(indices))
        except (RuntimeError, ValueError, OSError) as e:
            raise CorruptRecordError(f"{self.path}: records {indices} do not read: {e}") from e

    def read(self, index: int) -> bytes:
        return self.read_many([index])[0]


class SplitReader:
    """Records of one split by global index (TFDS's order: shard by shard), opened lazily.

    Pickles without its open files (each process opens its own); the TFRecord
    offset index, once built, travels with it. `check_records=False` leaves a
    TFRecord record's data CRC32C unchecked: for a caller that checks what it
    uses (`CheckedFrames`); headers and lengths are still checked.
    """

    def __init__(self, shards: Shards, check_records: bool = True):
        self.shards = shards
        for path in shards.paths:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"Shard {path} of split {shards.split!r} is missing.")
        if shards.file_format == "array_record":
            self._files = [_ArrayRecordShard(path) for path in shards.paths]
        else:
            self._files = [_TfRecordShard(path, check_records) for path in shards.paths]
        self._checked = [False] * len(self._files)
        self._starts = np.concatenate([[0], np.cumsum(shards.lengths, dtype=np.int64)]).tolist()

    def __len__(self) -> int:
        return self._starts[-1]

    def locate(self, index: int) -> tuple[int, int]:
        """(shard number, index within that shard) of a global record index."""
        if not 0 <= index < len(self):
            raise IndexError(f"record {index} out of range [0, {len(self)}).")
        shard = bisect.bisect_right(self._starts, index) - 1
        return shard, index - self._starts[shard]

    def where(self, index: int) -> str:
        """Words locating a record for error messages: its file and its index there."""
        shard, local = self.locate(index)
        return f"record {local} of {self.shards.paths[shard]}"

    def _shard(self, shard: int):
        """The shard's reader, its record count checked against dataset_info.json once."""
        file = self._files[shard]
        if not self._checked[shard]:
            found, expected = file.build_index(), self.shards.lengths[shard]
            if found != expected:
                raise CorruptRecordError(
                    f"{file.path} holds {found} records, but dataset_info.json says {expected}."
                )
            self._checked[shard] = True
        return file

    def read(self, index: int):
        shard, local = self.locate(index)
        return self._shard(shard).read(local)

    def check_outside_frames(self, index: int, data, frames: ByteValues, frame_crcs) -> None:
        """For a reader without `check_records`: checks a TFRecord record's CRC32C on its
        first read from the bytes outside its frames and the frames' stored checksums
        (`frames` and `frame_crcs` parsed from `data`, the record). array_record checks
        its own hashes on every read."""
        shard, local = self.locate(index)
        file = self._shard(shard)
        if isinstance(file, _TfRecordShard):
            file.check_outside_frames(local, data, frames, frame_crcs)

    def read_many(self, indices) -> list:
        """Records at `indices`, in that order (one batched call per shard for array_record)."""
        by_shard: dict[int, list[tuple[int, int]]] = {}
        for position, index in enumerate(indices):
            shard, local = self.locate(int(index))
            by_shard.setdefault(shard, []).append((position, local))
        out = [None] * len(indices)
        for shard, items in by_shard.items():
            records = self._shard(shard).read_many([local for _, local in items])
            for (position, _), record in zip(items, records):
                out[position] = record
        return out

    def index_all(self) -> None:
        """Indexes every TFRecord shard now (e.g. before pickling to workers, so they need not).

        array_record shards have no index to build, and are not opened: a process
        that has opened one cannot fork workers that read them.
        """
        if self.shards.file_format == "array_record":
            return
        for shard in range(len(self._files)):
            self._shard(shard)

    def close(self) -> None:
        for file in self._files:
            file.close()


def _video_hint(data) -> str:
    """' of video `name`' if the (possibly damaged) record still names its video, else ''."""
    try:
        name = parse_example(data).get("filename")
        return f" of video `{bytes(name[0]).decode('utf-8')}`" if name else ""
    except Exception:  # noqa: BLE001 - only a hint for an error message being raised
        return ""
