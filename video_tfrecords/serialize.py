"""Serialized tf.train.Example bytes, written one JPEG frame at a time.

TFDS's serializer builds an Example out of nested protos, and each constructor
copies its child: at its peak a video's JPEG bytes are held six times over.
Here each frame goes from the encoder straight into a temp file, already in
protobuf wire format, and the finished example is read back once (by the
build process, even when a worker encoded it), into the one bytes object
TFDS's shard writer keeps. The bytes parse to the same
Example that TFDS's serializer makes (tests check it). Like `video_io`, this
module imports neither TensorFlow nor TFDS.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
import struct
from collections.abc import Mapping

# Protobuf wire types, and the field numbers of tf.train.Example's messages.
_LEN = 2
_EXAMPLE_FEATURES = 1  # Example.features
_FEATURES_MAP = 1  # Features.feature: map entries of key (1) and value (2)
_MAP_KEY, _MAP_VALUE = 1, 2
_BYTES_LIST, _FLOAT_LIST, _INT64_LIST = 1, 2, 3  # the oneof of Feature
_LIST_VALUE = 1  # BytesList.value, FloatList.value, Int64List.value

# Room at the head of the spool file for the headers that precede the frames.
_HEAD_ROOM = 128

Scalar = int | float | str | bytes


def varint(value: int) -> bytes:
    """Protobuf's base-128 varint; a negative int64 takes 10 bytes (two's complement)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _header(field: int, length: int) -> bytes:
    """Tag and length of a length-delimited field with a `length`-byte payload."""
    return varint(field << 3 | _LEN) + varint(length)


def _field(field: int, payload: bytes) -> bytes:
    return _header(field, len(payload)) + payload


def feature(value: Scalar) -> bytes:
    """A tf.train.Feature holding one value, as TFDS stores a scalar or a text."""
    if isinstance(value, numbers.Integral):
        return _field(_INT64_LIST, _field(_LIST_VALUE, varint(int(value))))
    if isinstance(value, numbers.Real):
        return _field(_FLOAT_LIST, _field(_LIST_VALUE, struct.pack("<f", float(value))))
    if isinstance(value, str):
        value = value.encode("utf-8")
    if isinstance(value, bytes):
        return _field(_BYTES_LIST, _field(_LIST_VALUE, value))
    raise TypeError(f"no tf.train.Feature for a {type(value).__name__}: {value!r}")


def map_entry(name: str, feature_bytes: bytes) -> bytes:
    """One (name, Feature) entry of the Features map."""
    return _field(
        _FEATURES_MAP, _field(_MAP_KEY, name.encode()) + _field(_MAP_VALUE, feature_bytes)
    )


@dataclasses.dataclass(frozen=True)
class Spooled:
    """A finished Example left in its spool file: `size` bytes at offset `start`.

    Small to pickle: a build worker sends this rather than the bytes, and the
    build process reads them itself (bytes that come through a pipe, into a
    reader thread's memory, proved 3-6x slower for the kernel to write out
    to the shard files).
    """

    path: str
    start: int
    size: int

    def take(self) -> bytes:
        """The Example's bytes, read once; the spool file is removed."""
        try:
            with open(self.path, "rb", buffering=0) as file:
                serialized = os.pread(file.fileno(), self.size, self.start)
        finally:
            os.unlink(self.path)
        if len(serialized) != self.size:
            raise OSError(f"read {len(serialized)} of the {self.size} bytes spooled to {self.path}")
        return serialized


class FrameSpool:
    """The frames of one example, in wire format in a file at `path` until `finish`.

    The file starts with room for the headers that the frames' total length
    decides (the BytesList, the Feature, the map entry and the Features), so
    `finish` writes them in front of the frames, and the Example can be read
    back with a single read of exactly its size. `seal` closes the file between
    the last frame and `finish`, so that a video of many segments does not
    hold a file descriptor per segment.
    """

    def __init__(self, path: str, name: str = "video"):
        self.path = path
        self.name = name
        self.num_frames = 0
        self.jpeg_bytes = 0
        self._list_bytes = 0  # of the BytesList payload: each frame and its header
        self._file = open(path, "wb")  # noqa: SIM115 (seal() closes it)
        self._file.write(bytes(_HEAD_ROOM))

    def append(self, frame: bytes) -> None:
        head = _header(_LIST_VALUE, len(frame))
        self._file.write(head)
        self._file.write(frame)
        self._list_bytes += len(head) + len(frame)
        self.num_frames += 1
        self.jpeg_bytes += len(frame)

    def seal(self) -> None:
        self._file.close()

    def finish(self, scalars: Mapping[str, Scalar]) -> Spooled:
        """Completes the serialized Example: the frames as feature `name`, one feature per scalar."""
        self.seal()
        list_head = _header(_BYTES_LIST, self._list_bytes)
        feature_bytes = len(list_head) + self._list_bytes
        entry = _field(_MAP_KEY, self.name.encode()) + _header(_MAP_VALUE, feature_bytes)
        entry_head = _header(_FEATURES_MAP, len(entry) + feature_bytes) + entry + list_head
        tail = b"".join(map_entry(k, feature(v)) for k, v in scalars.items())
        features_bytes = len(entry_head) + self._list_bytes + len(tail)
        head = _header(_EXAMPLE_FEATURES, features_bytes) + entry_head
        if len(head) > _HEAD_ROOM:
            raise ValueError(f"feature name too long for the spool's head room: {self.name!r}")
        start, size = _HEAD_ROOM - len(head), len(head) + self._list_bytes + len(tail)
        with open(self.path, "r+b", buffering=0) as file:
            file.seek(0, os.SEEK_END)
            file.write(tail)
            os.pwrite(file.fileno(), head, start)
        return Spooled(self.path, start, size)
