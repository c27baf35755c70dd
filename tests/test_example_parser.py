"""The tf.train.Example parser against protobuf's, on encodings written by hand.

The encoding TFDS's writer produces is checked on a built dataset in
test_clip_source.py; these are the other valid encodings (the parser's general
path) and damaged ones.
"""

import numpy as np
import pytest
from tensorflow_datasets.proto import tf_example_pb2

from video_tfrecords.records.example_parser import parse_example


def test_parse_example_reads_other_valid_encodings_as_protobuf_does():
    """Encodings TFDS's writer does not produce (the parser's general path), against protobuf."""

    def varint(n):
        return bytes([n & 0x7F | 0x80]) + varint(n >> 7) if n >= 0x80 else bytes([n])

    def field(number, payload, wire=2):
        if wire == 2:
            return bytes([number << 3 | 2]) + varint(len(payload)) + payload
        return bytes([number << 3 | wire]) + payload

    def entry(parts):
        return field(1, parts)  # one Features.feature map entry

    floats = np.array([1.5, -2.25], "<f4").tobytes()
    entries = [
        # the Feature before the name
        field(2, field(3, field(1, bytes([7])))) + field(1, b"value_first"),
        # an Int64List unpacked (one varint field per value), then a packed run
        field(1, b"unpacked")
        + field(
            2,
            field(
                3,
                field(1, bytes([0xAC, 0x02]), 0)
                + field(1, bytes([9]), 0)
                + field(1, bytes([1, 2])),
            ),
        ),
        # a FloatList unpacked (fixed32 fields) and packed
        field(1, b"floats") + field(2, field(2, field(1, floats[:4], 5) + field(1, floats[4:]))),
        # a Feature with two lists: the last one counts (a oneof)
        field(1, b"two_lists") + field(2, field(1, field(1, b"x")) + field(3, field(1, b"\x04"))),
        # empty bytes values, and an empty Feature
        field(1, b"empty_bytes")
        + field(2, field(1, field(1, b"") + field(1, b"") + field(1, b"a"))),
        field(1, b"no_list") + field(2, b""),
    ]
    record = field(1, b"".join(entry(e) for e in entries))
    reference = tf_example_pb2.Example.FromString(record).features.feature
    parsed = parse_example(record)
    assert set(parsed) == set(reference)
    for name, feature in reference.items():
        kind = feature.WhichOneof("kind")
        expected = list(getattr(feature, kind).value) if kind else []
        if kind == "bytes_list":
            assert [bytes(v) for v in parsed[name]] == expected, name
        else:
            assert list(parsed[name]) == expected, name
    assert list(parsed["unpacked"]) == [300, 9, 1, 2]  # the reference is not empty


def test_a_packed_varint_running_past_its_list_is_refused():
    def field(number, payload):  # a length-delimited protobuf field (payloads under 128 bytes)
        return bytes([number << 3 | 2, len(payload)]) + payload

    def example(packed):  # written by hand: protobuf's map order differs between processes
        n = field(1, b"n") + field(2, field(3, field(1, packed)))  # Int64List, packed
        z = field(1, b"z") + field(2, field(1, field(1, b"more data after the list")))
        return field(1, field(1, n) + field(1, z))

    whole = example(bytes([0xAC, 0x02, 0x05]))  # 300, 5
    reference = tf_example_pb2.Example.FromString(whole).features.feature["n"]
    assert list(reference.int64_list.value) == [300, 5]
    assert parse_example(whole)["n"].tolist() == [300, 5]
    damaged = example(bytes([0xAC, 0x02, 0x85]))  # the last varint claims a byte past its list
    with pytest.raises(ValueError, match="not a well-formed"):
        parse_example(damaged)
    long = bytes([0xAC, 0x02] * 30)  # 30 values: decoded with array operations
    assert parse_example(example(long))["n"].tolist() == [300] * 30
    for bad in (long[:-1], long[:-1] + bytes([0x82]), long + bytes([0xFF] * 10 + [0x01])):
        with pytest.raises(ValueError, match="not a well-formed"):
            parse_example(example(bad))


def test_the_writers_encoding_at_the_edges_of_its_short_entries_as_protobuf_reads_it():
    """protobuf's own encoding (the writer's) of values at the edges of the parser's in-place
    reads (one-byte lengths and names, one- and two-byte varints), against protobuf."""
    example = tf_example_pb2.Example()
    features = example.features.feature
    ints = [0, 1, 127, 128, 300, 16383, 16384, 2**31, 2**63 - 1, -1, -(2**63)]
    for value in ints:
        features[f"int_{value}"].int64_list.value.append(value)
    features["ints"].int64_list.value.extend(ints)
    features["no_ints"].int64_list.value.extend([])
    features["floats"].float_list.value.extend([1.5, -2.25])
    features["one_float"].float_list.value.append(0.1)
    for size in (0, 1, 100, 120, 121, 127, 128, 300):
        features[f"bytes_{size}"].bytes_list.value.append(bytes(i % 256 for i in range(size)))
    features["two_bytes"].bytes_list.value.extend([b"a", b"bc"])
    features["n" * 127].int64_list.value.append(5)
    features["m" * 128].int64_list.value.append(6)
    features["é"].bytes_list.value.append("ü".encode())
    record = example.SerializeToString()
    parsed = parse_example(record)
    assert set(parsed) == set(features)
    for name, feature in features.items():
        kind = feature.WhichOneof("kind")
        expected = list(getattr(feature, kind).value) if kind else []
        if kind == "bytes_list":
            assert [bytes(v) for v in parsed[name]] == expected, name
        else:
            assert parsed[name].tolist() == expected, name
            assert parsed[name].dtype == (np.float32 if kind == "float_list" else np.int64), name
