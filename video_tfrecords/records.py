"""Reading a prepared dataset without TensorFlow: find it, index its shards, parse its examples.

TFDS's own readers (`tfds.data_source`, `builder_from_directory`) build the
features' decoders, and the Video feature needs TensorFlow. This module reads
what TFDS wrote directly instead: `dataset_info.json` and `features.json` for
the splits, shards and features; TFRecord shards through an offset index into
a read-only memory map; array_record shards through their own reader (it
checks its own hashes on every read); and `tf.train.Example` with a small
wire-format parser that hands out the frames as views into the record (no
copy of the JPEG bytes).

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
import collections.abc
import dataclasses
import json
import mmap
import os
import struct
import threading

import numpy as np
import tensorflow_datasets as tfds
from awscrt import checksums

__all__ = [
    "DATASET_NAME",
    "FINGERPRINT",
    "FRAME_CHECKSUMS",
    "ByteValues",
    "CheckedFrames",
    "CorruptRecordError",
    "Feature",
    "SplitReader",
    "find_dataset_dir",
    "parse_example",
    "read_features",
    "read_label_names",
    "split_shards",
]

DATASET_NAME = "video_tfrecords"
FRAME_CHECKSUMS = "frame_crc32c"  # the feature holding each frame's CRC32C
FINGERPRINT = "video_fingerprint"  # the stored clip_plan.video_fingerprint (2.2.0 on)
FILE_FORMATS = ("tfrecord", "array_record")
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


# ---------------------------------------------------------------------------
# Finding the dataset, its splits and its features.
# ---------------------------------------------------------------------------


def default_data_dir() -> str:
    """TFDS's default data dir (TFDS_DATA_DIR, else ~/tensorflow_datasets), as tfds.load uses."""
    return tfds.core.constants.get_default_data_dir()


def _subfolders(path: str) -> list[str]:
    return sorted(e.name for e in os.scandir(path) if e.is_dir()) if os.path.isdir(path) else []


def _versions(config_dir: str) -> list[tfds.core.Version]:
    """The complete versions prepared in a config folder (those with a dataset_info.json)."""
    versions = []
    for name in _subfolders(config_dir):
        if os.path.isfile(os.path.join(config_dir, name, "dataset_info.json")):
            try:
                versions.append(tfds.core.Version(name))
            except ValueError:
                continue  # TFDS's "incomplete.*" folders of a build in progress
    return sorted(versions)


def find_dataset_dir(
    data_dir: str | os.PathLike | None, config: str, version: str | None = None
) -> str:
    """The folder of a prepared config, as tfds.load finds it: data_dir/name/config/version.

    Without `version`, the latest complete version present. Errors say what exists.
    """
    data_dir = os.path.expanduser(os.fspath(data_dir or default_data_dir()))
    dataset_dir = os.path.join(data_dir, DATASET_NAME)
    configs = [c for c in _subfolders(dataset_dir) if _versions(os.path.join(dataset_dir, c))]
    if not configs:
        raise FileNotFoundError(
            f"No prepared {DATASET_NAME} dataset in {data_dir} (nothing in {dataset_dir}). "
            f"Build one with `tfds build {DATASET_NAME} --manual_dir=... --data_dir={data_dir}`."
        )
    if config not in configs:
        raise FileNotFoundError(
            f"No prepared config {config!r} of {DATASET_NAME} in {dataset_dir}; "
            f"prepared configs: {', '.join(configs)}."
        )
    versions = _versions(os.path.join(dataset_dir, config))
    if version is None:
        chosen = versions[-1]
    else:
        matches = [v for v in versions if str(v) == str(version)]
        if not matches:
            listed = ", ".join(map(str, versions))
            raise FileNotFoundError(
                f"No version {version} of {DATASET_NAME}/{config} in {dataset_dir}; "
                f"prepared versions: {listed}."
            )
        chosen = matches[0]
    return os.path.join(dataset_dir, config, str(chosen))


def read_info(dataset_dir: str) -> dict:
    """The parsed dataset_info.json of a prepared dataset folder."""
    path = os.path.join(dataset_dir, "dataset_info.json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise FileNotFoundError(f"Cannot read the dataset info {path}: {e}") from e


@dataclasses.dataclass(frozen=True)
class Shards:
    """The files of one split, in TFDS's read order, with their number of examples."""

    split: str
    file_format: str
    paths: tuple[str, ...]
    lengths: tuple[int, ...]


def split_shards(dataset_dir: str, split: str, info: dict | None = None) -> Shards:
    """The shard files of `split`, named as TFDS names them; an error lists the splits."""
    info = info if info is not None else read_info(dataset_dir)
    splits = {s["name"]: s for s in info.get("splits", [])}
    if split not in splits:
        raise ValueError(
            f"No split {split!r} in {dataset_dir}; splits: {', '.join(splits) or 'none'}."
        )
    file_format = info.get("fileFormat") or "tfrecord"
    if file_format not in FILE_FORMATS:
        raise ValueError(
            f"{dataset_dir} is stored as {file_format!r}; readable formats: {FILE_FORMATS}."
        )
    lengths = tuple(int(n) for n in splits[split].get("shardLengths", []))
    template = tfds.core.ShardedFileTemplate(
        data_dir=tfds.core.Path(dataset_dir),
        template=splits[split].get("filepathTemplate")
        or "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}",
        dataset_name=info.get("name", DATASET_NAME),
        split=split,
        filetype_suffix=file_format,
    )
    paths = tuple(os.fspath(p) for p in template.sharded_filepaths(len(lengths)))
    return Shards(split, file_format, paths, lengths)


@dataclasses.dataclass(frozen=True)
class Feature:
    """What features.json says about one feature: its TFDS class, dtype and shape."""

    kind: str  # TFDS class name: "Video", "ClassLabel", "Text", "Scalar", "Tensor", ...
    dtype: str | None = None
    shape: tuple[int, ...] | None = None

    @property
    def is_scalar(self) -> bool:
        """Whether an example holds one value of it (a label, a string, a number)."""
        return self.kind in ("ClassLabel", "Text") or (
            self.kind in ("Scalar", "Tensor") and self.shape == ()
        )


def read_features(dataset_dir: str) -> dict[str, Feature]:
    """The top-level features of a prepared dataset, from its features.json."""
    path = os.path.join(dataset_dir, "features.json")
    try:
        with open(path, encoding="utf-8") as f:
            features = json.load(f)["featuresDict"]["features"]
    except (OSError, ValueError, KeyError) as e:
        raise FileNotFoundError(f"Cannot read the features of {path}: {e!r}") from e
    parsed = {}
    for name, feature in features.items():
        kind = feature.get("pythonClassName", "").rsplit(".", 1)[-1]
        tensor = feature.get("tensor") or {}
        dims = tensor.get("shape", {}).get("dimensions", [])
        parsed[name] = Feature(kind, tensor.get("dtype"), tuple(int(d) for d in dims))
    return parsed


def read_label_names(dataset_dir: str, feature: str = "label") -> list[str] | None:
    """Class names of a ClassLabel feature (line i = id i), or None if TFDS wrote none."""
    path = os.path.join(dataset_dir, f"{feature}.labels.txt")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return [line for line in f.read().splitlines() if line]


def index_range(length: int, shard_index: int, num_shards: int) -> range:
    """The `shard_index`-th of `num_shards` contiguous, disjoint, near-equal parts of the range."""
    if not (isinstance(num_shards, int) and num_shards > 0):
        raise ValueError(f"num_shards must be a positive int, got {num_shards!r}.")
    if not (isinstance(shard_index, int) and 0 <= shard_index < num_shards):
        raise ValueError(f"shard_index must be an int in [0, {num_shards}), got {shard_index!r}.")
    return range(length * shard_index // num_shards, length * (shard_index + 1) // num_shards)


# ---------------------------------------------------------------------------
# Reading records.
# ---------------------------------------------------------------------------


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


class ByteValues(collections.abc.Sequence):
    """The values of a BytesList: where each lies in the record, viewed when accessed.

    A sequence of memoryviews into the record (no copy); a clip reads a few of
    a video's frames, so only those get a view.
    """

    __slots__ = ("record", "starts", "stops")

    def __init__(self, record: memoryview, starts: list[int], stops: list[int]):
        self.record, self.starts, self.stops = record, starts, stops

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self.record[self.starts[index] : self.stops[index]]


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


# ---------------------------------------------------------------------------
# Parsing tf.train.Example (protobuf wire format).
# ---------------------------------------------------------------------------


def _varint(data, pos: int) -> tuple[int, int]:
    """Decodes a base-128 varint at `pos`: (value, position after it)."""
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def _fields(data, pos: int, end: int):
    """Yields (field number, wire type, value or (start, end) of a length-delimited field)."""
    while pos < end:
        key, pos = _varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > end:
                raise ValueError(f"field {field} runs past its message")
            yield field, wire, (pos, pos + size)
            pos += size
        elif wire == 0:
            value, pos = _varint(data, pos)
            yield field, wire, value
        elif wire == 5:
            yield field, wire, data[pos : pos + 4]
            pos += 4
        elif wire == 1:
            yield field, wire, data[pos : pos + 8]
            pos += 8
        else:
            raise ValueError(f"unsupported wire type {wire}")
    if pos != end:
        raise ValueError("message runs past its end")


def _bytes_values(data: memoryview, pos: int, end: int) -> ByteValues:
    """The values of a BytesList, as views into `data` (the hot loop: 1 item per frame)."""
    starts, stops = [], []
    add_start, add_stop = starts.append, stops.append
    while pos < end:
        if data[pos] != 0x0A:  # field 1, length-delimited: the only field of a BytesList
            raise ValueError("unexpected field in a BytesList")
        # The length varint, inlined for 1 to 3 bytes (frames under 2 MB): the loop's cost.
        size = data[pos + 1]
        if size < 0x80:
            pos += 2
        elif data[pos + 2] < 0x80:
            size = (size & 0x7F) | data[pos + 2] << 7
            pos += 3
        elif data[pos + 3] < 0x80:
            size = (size & 0x7F) | (data[pos + 2] & 0x7F) << 7 | data[pos + 3] << 14
            pos += 4
        else:
            size, pos = _varint(data, pos + 1)
        add_start(pos)
        pos += size
        add_stop(pos)
    if pos > end:
        raise ValueError("a bytes value runs past its list")
    return ByteValues(data, starts, stops)


def _to_int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _packed_varints(run) -> np.ndarray:
    """The int64 values of a run of packed varints, decoded with array operations.

    A video's frame checksums are 250 5-byte varints: a Python loop over them
    costs more than parsing the rest of the record.
    """
    if len(run) <= 16:  # a scalar or a few: a plain loop is faster
        values, pos = [], 0
        while pos < len(run):
            number, pos = _varint(run, pos)
            values.append(_to_int64(number))
        if pos != len(run):
            raise ValueError("a packed varint runs past its list")
        return np.array(values, np.int64)
    raw = np.frombuffer(run, np.uint8)
    ends = np.flatnonzero(raw < 0x80)  # the last byte of each varint
    if not ends.size or ends[-1] != raw.size - 1:
        raise ValueError("a packed varint runs past its list")
    starts = np.empty_like(ends)
    starts[0], starts[1:] = 0, ends[:-1] + 1
    if (ends - starts).max() >= 10:
        raise ValueError("varint longer than 10 bytes")
    # Each byte's 7 bits, shifted to their place in its varint, OR-ed varint by varint.
    place = np.arange(raw.size) - np.repeat(starts, ends - starts + 1)
    bits = (raw & 0x7F).astype(np.uint64) << (place * 7).astype(np.uint64)
    return np.bitwise_or.reduceat(bits, starts).view(np.int64)


def _single_field(data, pos: int, end: int, tag: int) -> int | None:
    """Where the value of a message made of one length-delimited field `tag` starts, if it is.

    What every writer produces for a Feature, its list and a map entry's value,
    so the parser takes this path before the general one (`_fields`).
    """
    if pos >= end or data[pos] != tag:
        return None
    size, start = _varint(data, pos + 1)
    return start if start + size == end else None


def _number_values(data, pos: int, end: int, floats: bool) -> np.ndarray:
    """The values of a FloatList (float32) or Int64List (int64), packed or not."""
    packed = _single_field(data, pos, end, 0x0A)  # field 1, one packed run
    if packed is not None:
        if floats:
            return np.frombuffer(data[packed:end], "<f4")
        return _packed_varints(data[packed:end])
    values = []
    for field, wire, value in _fields(data, pos, end):
        if field != 1:
            continue
        if wire == 2 and floats:
            values.append(np.frombuffer(data[value[0] : value[1]], "<f4"))
        elif wire == 2:
            values.append(_packed_varints(data[value[0] : value[1]]))
        elif wire == 5 and floats:
            values.append(np.frombuffer(value, "<f4"))
        elif wire == 0 and not floats:
            values.append(np.array([_to_int64(value)], np.int64))
        else:
            raise ValueError(f"wire type {wire} in a {'Float' if floats else 'Int64'}List")
    if not values:
        return np.zeros(0, np.float32 if floats else np.int64)
    return np.concatenate(values).astype(np.float32 if floats else np.int64, copy=False)


def _list_values(data: memoryview, field: int, pos: int, end: int):
    """The values of a Feature's list: field 1 BytesList, 2 FloatList, 3 Int64List."""
    if field == 1:
        return _bytes_values(data, pos, end)
    return _number_values(data, pos, end, floats=field == 2)


def _feature_values(data: memoryview, pos: int, end: int):
    """A Feature's values: byte views (`ByteValues`), or a float32 / int64 array."""
    if pos < end and data[pos] in (0x0A, 0x12, 0x1A):  # one list, the usual case
        start = _single_field(data, pos, end, data[pos])
        if start is not None:
            return _list_values(data, data[pos] >> 3, start, end)
    result = []
    for field, wire, value in _fields(data, pos, end):
        if wire == 2 and field in (1, 2, 3):
            result = _list_values(data, field, *value)
    return result


def _map_entry(data: memoryview, pos: int, end: int):
    """(name, values) of one Features.feature map entry; name None if it has none."""
    if pos < end and data[pos] == 0x0A:  # the usual case: the name, then the Feature
        size, key_start = _varint(data, pos + 1)
        key_end = key_start + size
        value_start = _single_field(data, key_end, end, 0x12)
        if value_start is not None:
            key = bytes(data[key_start:key_end]).decode("utf-8")
            return key, _feature_values(data, value_start, end)
    key, values = None, []
    for part, part_wire, part_value in _fields(data, pos, end):
        if part == 1 and part_wire == 2:
            key = bytes(data[part_value[0] : part_value[1]]).decode("utf-8")
        elif part == 2 and part_wire == 2:
            values = _feature_values(data, *part_value)
    return key, values


def parse_example(record) -> dict:
    """Parses a serialized tf.train.Example: name -> bytes views, or a NumPy array.

    Bytes values are a sequence of memoryviews into `record` (`ByteValues`: the
    frames are not copied);
    floats come as float32 arrays, ints as int64 arrays. Raises ValueError if
    the bytes are not a well-formed Example.
    """
    view = memoryview(record).cast("B")
    features = {}
    try:
        for field, wire, value in _fields(view, 0, len(view)):
            if field != 1 or wire != 2:  # Example.features
                continue
            for entry_field, entry_wire, entry in _fields(view, *value):
                if entry_field != 1 or entry_wire != 2:  # Features.feature (a map entry)
                    continue
                key, values = _map_entry(view, *entry)
                if key is not None:
                    features[key] = values
    except (ValueError, IndexError, UnicodeDecodeError) as e:
        raise ValueError(f"not a well-formed tf.train.Example ({e})") from None
    return features


def _video_hint(data) -> str:
    """' of video `name`' if the (possibly damaged) record still names its video, else ''."""
    try:
        name = parse_example(data).get("filename")
        return f" of video `{bytes(name[0]).decode('utf-8')}`" if name else ""
    except Exception:  # noqa: BLE001 - only a hint for an error message being raised
        return ""
