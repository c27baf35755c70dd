"""The frame table (2.6.0): each frame's size and the CRC32C of the stored frame list, so that a
reader places a clip's frames without walking the others and checks a record's CRC32C without
reading them. References: protobuf's own parser and serializer, google-crc32c."""

import os
import pathlib
import struct

import google_crc32c
import hostile
import numpy as np
import pytest
import tensorflow_datasets as tfds
from tensorflow_datasets.proto import tf_example_pb2

import synthetic
from video_tfrecords import ClipSource, VideoConfig
from video_tfrecords.records import checksums, example_parser, schema
from video_tfrecords.util.errors import CorruptRecordError

CONFIG = "table"


def example_of(frames, *, sizes=None, list_crc=None) -> tf_example_pb2.Example:
    """A record of `frames` with their table (protobuf's serialization of the list), as the
    builder writes it; `sizes`/`list_crc` replace the true ones."""
    example = tf_example_pb2.Example()
    feature = example.features.feature
    feature["filename"].bytes_list.value.append(b"v.mp4")
    feature["video"].bytes_list.value.extend(frames)
    true_crc = google_crc32c.value(feature["video"].bytes_list.SerializeToString())
    sizes = [len(f) for f in frames] if sizes is None else sizes
    feature["frame_sizes"].bytes_list.value.append(struct.pack(f"<{len(sizes)}i", *sizes))
    feature["video_crc32c"].int64_list.value.append(true_crc if list_crc is None else list_crc)
    feature["label"].int64_list.value.append(1)
    return example


# Frames whose length varints take 1, 2 and 3 bytes, and an empty one.
FRAMES = [b"a" * 5, b"\xff" * 127, b"b" * 128, b"", b"c" * 300, b"d" * 16384, b"e" * 20000]


def test_frames_are_placed_by_the_table_where_protobuf_has_them():
    record = example_of(FRAMES).SerializeToString()
    parsed = example_parser.parse_example(record, schema.SIZE_TABLES)
    frames = parsed["video"]
    assert isinstance(frames, example_parser.PlacedByteValues)
    assert [bytes(frames[i]) for i in range(len(frames))] == FRAMES
    assert [bytes(f) for f in example_parser.parse_example(record)["video"]] == FRAMES


def test_a_records_crc_follows_from_the_list_crc_without_its_frames():
    record = example_of(FRAMES).SerializeToString()
    parsed = example_parser.parse_example(record, schema.SIZE_TABLES)
    list_crc = int(parsed["video_crc32c"][0])
    assert checksums.crc32c_around_list(record, parsed["video"].span, list_crc) == (
        google_crc32c.value(record)
    )
    wrong = checksums.crc32c_around_list(record, parsed["video"].span, list_crc ^ 1)
    assert wrong != google_crc32c.value(record)


def test_a_table_that_does_not_add_up_is_not_used():
    sizes = [len(f) for f in FRAMES]
    sizes[0] += 1  # one byte more than the list holds
    record = example_of(FRAMES, sizes=sizes).SerializeToString()
    frames = example_parser.parse_example(record, schema.SIZE_TABLES)["video"]
    assert not isinstance(frames, example_parser.PlacedByteValues)
    assert [bytes(f) for f in frames] == FRAMES  # walked


def test_a_table_that_adds_up_but_lies_is_refused_where_it_lies():
    # Two frames' sizes swapped: the same total, every frame after them placed where it is.
    frames = [b"x" * 10, b"y" * 20, b"z" * 30]
    record = example_of(frames, sizes=[20, 10, 30]).SerializeToString()
    placed = example_parser.parse_example(record, schema.SIZE_TABLES)["video"]
    placed.where = lambda: "video `v.mp4`"
    assert bytes(placed[2]) == frames[2]
    for index in (0, 1):
        with pytest.raises(CorruptRecordError, match=f"v.mp4`: value {index} of its video"):
            placed[index]


def test_a_table_of_more_values_than_a_list_may_hold_is_refused_as_the_walk_refuses_them():
    frames = [b""] * (example_parser.MAX_VALUES + 1)  # one byte each as stored: the sizes add up
    record = example_of(frames).SerializeToString()
    for tables in (None, schema.SIZE_TABLES):
        with pytest.raises(ValueError, match=f"more than {example_parser.MAX_VALUES} values"):
            example_parser.parse_example(record, tables)


def test_negative_sizes_are_not_used():
    for size in (-1, -(2**31)):
        record = example_of([b"x" * 10], sizes=[size]).SerializeToString()
        frames = example_parser.parse_example(record, schema.SIZE_TABLES)["video"]
        assert not isinstance(frames, example_parser.PlacedByteValues)
        assert bytes(frames[0]) == b"x" * 10


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    manual = tmp_path_factory.mktemp("manual")
    for i, length in enumerate((12, 20)):
        frames = synthetic.moving_frames(length, 48, 64, seed=i)
        synthetic.write_video(str(manual / f"v{i}.mp4"), frames)
    (manual / "train.txt").write_text("v0.mp4 a\nv1.mp4 b\n")
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(tmp_path_factory.mktemp("data")),
        config=VideoConfig(name=CONFIG, num_workers=1, segment_frames=8),
    )  # fmt: skip
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual))
    )
    return os.fspath(builder.data_path)


def test_the_builder_stores_each_frames_size_and_the_lists_crc(built):
    records = [r for shard in hostile.shards(built) for r in hostile.records(shard)]
    assert len(records) == 5  # 12 frames in 2 pieces of at most 8, 20 in 3
    for record in records:
        feature = tf_example_pb2.Example.FromString(record).features.feature
        frames = feature["video"].bytes_list
        (sizes,) = feature["frame_sizes"].bytes_list.value
        assert list(struct.unpack(f"<{len(frames.value)}i", sizes)) == [
            len(f) for f in frames.value
        ]
        assert list(feature["video_crc32c"].int64_list.value) == [
            google_crc32c.value(frames.SerializeToString())
        ]


def test_clip_source_reads_placed_frames_and_refuses_a_wrong_list_crc(built, tmp_path):
    data_dir = pathlib.Path(built).parents[2]  # DATA_DIR/video_tfrecords/CONFIG/VERSION
    source = ClipSource("train", data_dir=data_dir, config=CONFIG, num_frames=8, mode="center")
    record = hostile.records(hostile.shards(built)[0])[0]
    example = tf_example_pb2.Example.FromString(record)
    protobuf_frames = list(example.features.feature["video"].bytes_list.value)
    stored = source.examples.interpret(0, source.reader.read(0), source.spec, seeded=False)
    assert [bytes(stored.frames[i]) for i in range(len(stored.frames))] == protobuf_frames
    clip = source[0]["video"]
    assert clip.shape[0] == 8 and clip.dtype == np.uint8

    # The list's stored CRC32C changed, every other checksum recomputed to match: the record's
    # own CRC32C then fails on a first read, naming the shard and the video.
    crc = example.features.feature["video_crc32c"].int64_list.value
    crc[0] ^= 1
    copy = tmp_path / pathlib.Path(built).relative_to(data_dir)
    folder = hostile.copy_with(built, copy, {0: [example.SerializeToString()]})
    fresh = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=8, mode="center")
    with pytest.raises(CorruptRecordError, match="outside its frames") as error:
        fresh[0]
    assert hostile.shards(folder)[0] in str(error.value)


def test_tfds_load_gives_the_sizes_and_the_lists_crc(built):
    data_dir = pathlib.Path(built).parents[2]
    loaded = tfds.load("video_tfrecords", split="train", data_dir=str(data_dir), builder_kwargs={"config": CONFIG},
                       decoders={"video": tfds.decode.SkipDecoding()})  # fmt: skip
    records = [r for shard in hostile.shards(built) for r in hostile.records(shard)]
    by_name_and_segment = {}
    for record in records:
        feature = tf_example_pb2.Example.FromString(record).features.feature
        key = (feature["filename"].bytes_list.value[0], feature["segment"].int64_list.value[0])
        by_name_and_segment[key] = feature["video"].bytes_list
    for example in tfds.as_numpy(loaded):
        frames = by_name_and_segment[(example["filename"], example["segment"])]
        assert example["frame_sizes"].tolist() == [len(f) for f in frames.value]
        assert example["video_crc32c"] == google_crc32c.value(frames.SerializeToString())
