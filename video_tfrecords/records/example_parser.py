"""Parsing a serialized `tf.train.Example` without TensorFlow or protobuf.

A clip decodes a few of a video's frames, so the parser hands out each bytes
value as a view into the record (`ByteValues`): no copy of the JPEG bytes.
It reads the protobuf wire format directly: the encoding TFDS's writer
produces first (one loop per frame is the cost that matters), then any other
valid encoding of an Example through the general field loop.
"""

from __future__ import annotations

import collections.abc

import numpy as np

from video_tfrecords.clips.plan import MAX_FRAMES
from video_tfrecords.records import frame_table
from video_tfrecords.util.errors import CorruptRecordError

__all__ = ["MAX_VALUES", "ByteValues", "PlacedByteValues", "parse_example"]

# The most values a list may hold: a video's frames, their times and checksums are one a frame.
# A longer list is refused before it is parsed whole, so that a record of millions of tiny
# values costs neither the time nor the memory of listing them.
MAX_VALUES = MAX_FRAMES
# The most values and fields a record may hold in all (its frames, times and checksums, and a
# few dozen others): what bounds a parse's time and memory, whatever the record's size.
MAX_PARSED = 4 * MAX_VALUES


class _Budget:
    """What is left of MAX_PARSED for one record: every value and field read spends it."""

    __slots__ = ("left",)

    def __init__(self):
        self.left = MAX_PARSED

    def spend(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise ValueError(f"more than {MAX_PARSED} values and fields in one record")


class ByteValues(collections.abc.Sequence):
    """The values of a BytesList: where each lies in the record, viewed when accessed.

    A sequence of memoryviews into the record (no copy); a clip reads a few of
    a video's frames, so only those get a view.
    """

    __slots__ = ("record", "span", "starts", "stops")

    def __init__(self, record: memoryview, starts: list[int], stops: list[int], span=None):
        self.record, self.starts, self.stops = record, starts, stops
        self.span = span  # (start, stop) of the whole list in the record, when parsed from one

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self.record[self.starts[index] : self.stops[index]]


class PlacedByteValues(ByteValues):
    """A list's values placed by a stored size table (`frame_table.places`) instead of a walk:
    each value's tag and length are checked against the table as it is viewed."""

    __slots__ = ("name", "where")

    def __init__(self, record: memoryview, starts, stops, span, name: str):
        super().__init__(record, starts, stops, span)
        self.name = name
        self.where = lambda: "a record"  # what errors name: the reader sets the video's

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start, stop = self.starts[index], self.stops[index]
        if not frame_table.head_matches(self.record, start, stop - start):
            raise CorruptRecordError(
                f"{self.where()}: value {index % len(self)} of its {self.name} is not where "
                "its size table places it."
            )
        return self.record[start:stop]


class _Unwalked(tuple):
    """(start, stop) of a bytes list left for its size table (`parse_example`'s `tables`)."""


def _placed(data: memoryview, span: _Unwalked, name: str, table, budget: _Budget) -> ByteValues:
    """The values of the bytes list at `span`, placed by its size `table` if the record has
    one that accounts for the list's bytes, else walked."""
    found = None
    if isinstance(table, ByteValues) and len(table) == 1 and not len(table[0]) % 4:
        sizes = np.frombuffer(table[0], "<i4")
        if len(sizes) <= MAX_VALUES:  # a longer list is the walk's to refuse
            found = frame_table.places(sizes, *span)
    if found is None:
        return _bytes_values(data, *span, budget)
    budget.spend(len(found[0]))
    return PlacedByteValues(data, *found, tuple(span), name)


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


def _fields(data, pos: int, end: int, budget: _Budget):
    """Yields (field number, wire type, value or (start, end) of a length-delimited field)."""
    while pos < end:
        budget.spend(1)
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


def _bytes_values(data: memoryview, pos: int, end: int, budget: _Budget) -> ByteValues:
    """The values of a BytesList, as views into `data` (the hot loop: 1 item per frame)."""
    starts, stops, first = [], [], pos
    add_start, add_stop = starts.append, stops.append
    for _ in range(MAX_VALUES):
        if pos >= end:
            break
        if data[pos] != 0x0A:  # field 1, length-delimited: the only field of a BytesList
            raise ValueError("unexpected field in a BytesList")
        # The length varint, inlined for 1 to 3 bytes (frames under 2 MB): the loop's cost.
        size = data[pos + 1]
        if size < 0x80:
            pos += 2
        else:
            second = data[pos + 2]
            if second < 0x80:
                size = size & 0x7F | second << 7
                pos += 3
            else:
                third = data[pos + 3]
                if third < 0x80:
                    size = size & 0x7F | (second & 0x7F) << 7 | third << 14
                    pos += 4
                else:
                    size, pos = _varint(data, pos + 1)
        add_start(pos)
        pos += size
        add_stop(pos)
    else:
        if pos < end:
            raise ValueError(f"a bytes list of more than {MAX_VALUES} values")
    if pos > end:
        raise ValueError("a bytes value runs past its list")
    budget.spend(len(starts))
    return ByteValues(data, starts, stops, span=(first, end))


def _to_int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _packed_varints(run, budget: _Budget) -> np.ndarray:
    """The int64 values of a run of packed varints, decoded with array operations.

    A video's frame checksums are 250 5-byte varints: a Python loop over them
    costs more than parsing the rest of the record.
    """
    if len(run) > 10 * MAX_VALUES:  # (its values take 1 to 10 bytes each)
        raise ValueError(f"an int64 list of more than {MAX_VALUES} values")
    budget.spend(1)
    if 0 < len(run) <= 2 and run[-1] < 0x80 and (len(run) == 1 or run[0] >= 0x80):  # one, < 2**14
        return np.array([run[0] if len(run) == 1 else run[0] & 0x7F | run[1] << 7], np.int64)
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
    if ends.size > MAX_VALUES:
        raise ValueError(f"an int64 list of more than {MAX_VALUES} values")
    budget.spend(ends.size)
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


def _number_values(data, pos: int, end: int, floats: bool, budget: _Budget) -> np.ndarray:
    """The values of a FloatList (float32) or Int64List (int64), packed or not."""
    packed = _single_field(data, pos, end, 0x0A)  # field 1, one packed run
    if packed is not None:
        if not floats:
            return _packed_varints(data[packed:end], budget)
        if end - packed > 4 * MAX_VALUES:
            raise ValueError(f"a float list of more than {MAX_VALUES} values")
        budget.spend((end - packed) // 4 + 1)
        return np.frombuffer(data[packed:end], "<f4")
    values = []
    for field, wire, value in _fields(data, pos, end, budget):
        if field != 1:
            continue
        if wire == 2 and floats:
            budget.spend((value[1] - value[0]) // 4)
            values.append(np.frombuffer(data[value[0] : value[1]], "<f4"))
        elif wire == 2:
            values.append(_packed_varints(data[value[0] : value[1]], budget))
        elif wire == 5 and floats:
            values.append(np.frombuffer(value, "<f4"))
        elif wire == 0 and not floats:
            values.append(np.array([_to_int64(value)], np.int64))
        else:
            raise ValueError(f"wire type {wire} in a {'Float' if floats else 'Int64'}List")
    if not values:
        return np.zeros(0, np.float32 if floats else np.int64)
    return np.concatenate(values).astype(np.float32 if floats else np.int64, copy=False)


def _list_values(
    data: memoryview, field: int, pos: int, end: int, budget: _Budget, defer: bool = False
):
    """The values of a Feature's list: field 1 BytesList, 2 FloatList, 3 Int64List; with
    `defer`, a BytesList is left `_Unwalked`."""
    if field == 1:
        return _Unwalked((pos, end)) if defer else _bytes_values(data, pos, end, budget)
    return _number_values(data, pos, end, field == 2, budget)


def _feature_values(data: memoryview, pos: int, end: int, budget: _Budget, defer: bool = False):
    """A Feature's values: byte views (`ByteValues`), or a float32 / int64 array."""
    if pos < end and data[pos] in (0x0A, 0x12, 0x1A):  # one list, the usual case
        start = _single_field(data, pos, end, data[pos])
        if start is not None:
            return _list_values(data, data[pos] >> 3, start, end, budget, defer)
    result = []
    for field, wire, value in _fields(data, pos, end, budget):
        if wire == 2 and field in (1, 2, 3):
            result = _list_values(data, field, *value, budget)
    return result


def _map_entry(data: memoryview, pos: int, end: int, budget: _Budget, defer=frozenset()):
    """(name, values) of one Features.feature map entry; name None if it has none. A bytes
    list named in `defer` is left `_Unwalked`."""
    if pos < end and data[pos] == 0x0A:  # the usual case: the name, then the Feature
        size, key_start = _varint(data, pos + 1)
        key_end = key_start + size
        value_start = _single_field(data, key_end, end, 0x12)
        if value_start is not None:
            key = bytes(data[key_start:key_end]).decode("utf-8")
            return key, _feature_values(data, value_start, end, budget, key in defer)
    key, values = None, []
    for part, part_wire, part_value in _fields(data, pos, end, budget):
        if part == 1 and part_wire == 2:
            key = bytes(data[part_value[0] : part_value[1]]).decode("utf-8")
        elif part == 2 and part_wire == 2:
            values = _feature_values(data, *part_value, budget)
    return key, values


def parse_example(record, tables: dict[str, str] | None = None) -> dict:
    """Parses a serialized tf.train.Example: name -> bytes views, or a NumPy array.

    Bytes values are a sequence of memoryviews into `record` (`ByteValues`: the
    frames are not copied);
    floats come as float32 arrays, ints as int64 arrays. Raises ValueError if
    the bytes are not a well-formed Example, or hold a list of more than MAX_VALUES
    values or more than MAX_PARSED values and fields in all (read no further).

    `tables` names, for a bytes list, the feature that holds each value's size (a video's
    `frame_sizes`: one bytes value of little-endian int32): a record that has one gets its
    values placed from it without walking them (`PlacedByteValues`); one without, or whose
    sizes do not add up, is walked.
    """
    view = memoryview(record).cast("B")
    defer = frozenset(tables or ())
    try:
        budget = _Budget()
        features = _written_example(view, budget, defer)
        if features is None:  # another valid encoding, or a damaged one: the general loop's say
            budget = _Budget()
            features = _any_example(view, budget, defer)
        for name in defer:
            if isinstance(features.get(name), _Unwalked):
                table = features.get(tables[name])
                features[name] = _placed(view, features[name], name, table, budget)
    except (ValueError, IndexError, UnicodeDecodeError) as e:
        raise ValueError(f"not a well-formed tf.train.Example ({e})") from None
    return features


def _any_example(view: memoryview, budget: _Budget, defer=frozenset()) -> dict:
    """Any valid encoding of an Example, field by field (`_fields`)."""
    features = {}
    for field, wire, value in _fields(view, 0, len(view), budget):
        if field != 1 or wire != 2:  # Example.features
            continue
        for entry_field, entry_wire, entry in _fields(view, *value, budget):
            if entry_field != 1 or entry_wire != 2:  # Features.feature (a map entry)
                continue
            key, values = _map_entry(view, *entry, budget, defer)
            if key is not None:
                features[key] = values
    return features


def _written_example(view: memoryview, budget: _Budget, defer=frozenset()) -> dict | None:
    """The encoding TFDS's writer produces, read with a few steps a feature: one Features
    field of map entries, each tagged with one byte. None for any other encoding (the
    general loop then reads it whole); the same values and errors as that loop otherwise, as
    it would meet them in the same order."""
    end = len(view)
    if end < 2 or view[0] != 0x0A:  # Example.features, length-delimited
        return None
    size, pos = _varint(view, 1)
    if pos + size != end:
        return None
    budget.spend(1)
    features = {}
    while pos < end:
        if view[pos] != 0x0A:  # Features.feature, length-delimited
            return None
        budget.spend(1)
        size, start = _varint(view, pos + 1)
        pos = start + size
        if pos > end:
            return None
        key, values = _written_entry(view, start, pos, budget, defer)
        if key is not None:
            features[key] = values
    return features


def _written_entry(data: memoryview, pos: int, end: int, budget: _Budget, defer=frozenset()):
    """`_map_entry`, with the writer's usual short entry read in place: a name, then a Feature
    of one list, each under 128 bytes (every feature but a video's lists)."""
    name_end = pos + 2 + data[pos + 1] if end - pos >= 6 else end
    start = name_end + 4  # the list's
    if (
        start <= end
        and data[pos] == 0x0A  # the name
        and data[pos + 1] < 0x80
        and data[name_end] == 0x12  # the Feature
        and data[name_end + 1] == end - name_end - 2
        and data[name_end + 2] in (0x0A, 0x12, 0x1A)  # its list: bytes, floats or ints
        and data[name_end + 3] == end - start
        and max(data[name_end + 1], data[name_end + 3]) < 0x80
    ):
        name = str(data[pos + 2 : name_end], "utf-8")
        return name, _list_values(data, data[name_end + 2] >> 3, start, end, budget, name in defer)
    return _map_entry(data, pos, end, budget, defer)
