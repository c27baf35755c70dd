"""A split's records by global index, from its TFRecord or array_record shards.

TFDS's order (shard by shard); each shard's record count is checked against
dataset_info.json once. TFRecord shards go through an offset index into a
memory map (`tfrecord_shard`), array_record shards through array_record's
reader (`array_record_shard`); checksums are in `checksums`.
"""

from __future__ import annotations

import bisect
import os

import numpy as np

from video_tfrecords.records.array_record_shard import ArrayRecordShard
from video_tfrecords.records.checksums import CorruptRecordError
from video_tfrecords.records.dataset_files import Shards
from video_tfrecords.records.example_parser import ByteValues
from video_tfrecords.records.tfrecord_shard import TfRecordShard

__all__ = ["SplitReader"]

_TFRECORD_BYTES = 16  # the least a TFRecord record takes: its length, data and CRCs


class SplitReader:
    """Records of one split by global index (TFDS's order: shard by shard), opened lazily.

    Pickles without its open files (each process opens its own); the TFRecord
    offset index, once built, travels with it. `check_records=False` leaves a
    TFRecord record's data CRC32C unchecked: for a caller that checks what it
    uses (`CheckedFrames`); headers and lengths are still checked.
    """

    def __init__(self, shards: Shards, check_records: bool = True):
        self.shards = shards
        for path, length in zip(shards.paths, shards.lengths):
            if not os.path.isfile(path):
                raise FileNotFoundError(f"Shard {path} of split {shards.split!r} is missing.")
            size = os.path.getsize(path)
            if length * (_TFRECORD_BYTES if shards.file_format == "tfrecord" else 1) > size:
                raise CorruptRecordError(
                    f"dataset_info.json says {path} holds {length} records: more than its "
                    f"{size} bytes can."
                )
        if shards.file_format == "array_record":
            self._files = [ArrayRecordShard(path) for path in shards.paths]
        else:
            self._files = [TfRecordShard(path, check_records) for path in shards.paths]
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

    def check_outside_frames(
        self, index: int, data, frames: ByteValues, frame_crcs, list_crc: int | None = None
    ) -> None:
        """For a reader without `check_records`: checks a TFRecord record's CRC32C on its
        first read from the bytes outside its frames and the frames' stored checksums
        (`frames` and `frame_crcs` parsed from `data`, the record). array_record checks
        its own hashes on every read."""
        shard, local = self.locate(index)
        file = self._shard(shard)
        if isinstance(file, TfRecordShard):
            file.check_outside_frames(local, data, frames, frame_crcs, list_crc)

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
