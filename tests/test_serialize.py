"""The build's own serialized examples: the same tf.train.Example TFDS's serializer makes."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from tensorflow_datasets.core import example_serializer

from video_tfrecords import generate, manifest, serialize, video_io


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    """The builder's features, class names set as a build sets them from the manifests.

    An empty data dir of its own: in the default one, a dataset built earlier
    (the README's quick start) would bring its own class names.
    """
    data_dir = tmp_path_factory.mktemp("data")
    features = tfds.builder("video_tfrecords", data_dir=str(data_dir)).info.features
    features["label"].names = ["jumping", "walking", "swimming"]
    return features


def tfds_serialized(features, example: dict) -> bytes:
    serializer = example_serializer.ExampleSerializer(features.get_serialized_info())
    return serializer.serialize_example(features.encode_example(example))


def parsed(serialized: bytes) -> tf.train.Example:
    return tf.train.Example.FromString(serialized)


def scalars(**overrides):
    values = {
        "label": 2,
        "filename": "clips/vidéo d'été.mp4",  # spaces, quotes, non-ASCII
        "fps": 29.97,
        "source_height": 1080,
        "source_width": 1920,
        "source_num_frames": 300,
        "segment": 0,
        "start_frame": 0,
    }
    return {**values, **overrides}


def spooled(tmp_path, frames, values) -> bytes:
    spool = serialize.FrameSpool(str(tmp_path / "spool"))
    for frame in frames:
        spool.append(frame)
    serialized = spool.finish(values).take()
    assert not (tmp_path / "spool").exists()  # taking the bytes removes the spool
    return serialized


def test_a_spooled_example_is_the_example_tfds_serializes(features, tmp_path):
    rng = np.random.default_rng(0)
    # Lengths on both sides of each varint size (1, 2 and 3 bytes), and an empty frame.
    sizes = [0, 1, 127, 128, 16383, 16384, 40000, *rng.integers(1, 30000, 50)]
    frames = [rng.bytes(int(size)) for size in sizes]
    ours = spooled(tmp_path, frames, scalars())
    theirs = tfds_serialized(features, {"video": frames, **scalars()})
    assert parsed(ours) == parsed(theirs)
    assert len(ours) == len(theirs)


@pytest.mark.parametrize("value", [-1, -(2**31), 2**31 - 1, 0])
def test_extreme_integers_match_tfds(features, tmp_path, value):
    values = scalars(start_frame=value, segment=value)
    ours = spooled(tmp_path, [b"\xff\xd8"], values)
    assert parsed(ours) == parsed(tfds_serialized(features, {"video": [b"\xff\xd8"], **values}))


def test_a_video_of_no_frames_and_the_parsed_values(tmp_path):
    example = parsed(spooled(tmp_path, [], scalars()))
    feature = example.features.feature
    assert list(feature["video"].bytes_list.value) == []
    assert feature["filename"].bytes_list.value == ["clips/vidéo d'été.mp4".encode()]
    assert feature["fps"].float_list.value == [pytest.approx(29.97, rel=1e-6)]
    assert feature["source_width"].int64_list.value == [1920]


def test_a_value_with_no_feature_type_is_refused():
    with pytest.raises(TypeError, match="no tf.train.Feature for a list"):
        serialize.feature([1, 2])


def task_for(path, segment_frames=None) -> generate.Task:
    entry = manifest.Entry("train.txt", 1, os.path.basename(path), "walking")
    options = video_io.EncodeOptions(short_side=None)
    return generate.Task("train", entry, 1, str(path), options, segment_frames)


@pytest.mark.parametrize("segment_frames", [None, 3])
def test_a_build_serializes_what_tfds_would_from_the_example_dicts(
    features, make_video, segment_frames
):
    task = task_for(make_video(num_frames=7), segment_frames)
    ours = generate.take(generate.run(task))
    dicts = generate.run(task, serialized=False)
    assert [key for key, _ in ours.examples] == [key for key, _ in dicts.examples]
    assert len(ours.examples) == (3 if segment_frames else 1)
    for (_, serialized), (_, example) in zip(ours.examples, dicts.examples):
        assert parsed(serialized) == parsed(tfds_serialized(features, example))


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_segments_hold_one_open_file_and_leave_none_behind(make_video, tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    path = make_video(num_frames=12)
    before = open_files()
    with generate.SegmentSpools(segment_frames=1) as frames:
        video_io.encode_video(str(path), video_io.EncodeOptions(short_side=None), frames)
        assert len(frames.spools) == 12
        assert open_files() <= before + 1
        spooled = [spool.finish(scalars()) for spool in frames.spools]
    assert open_files() == before
    assert len(os.listdir(tmp_path / "scratch")) == 12  # the finished examples' files
    assert all(parsed(example.take()) for example in spooled)
    assert os.listdir(tmp_path / "scratch") == []


def test_a_video_that_fails_midway_leaves_no_spool_behind(make_video, tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    path = make_video(num_frames=12)
    with pytest.raises(video_io.VideoError), generate.SegmentSpools(segment_frames=5) as frames:
        video_io.encode_video(str(path), video_io.EncodeOptions(short_side=None), frames)
        raise video_io.VideoError("failed after three segments")
    assert len(frames.spools) == 3
    assert os.listdir(tmp_path / "scratch") == []


def test_a_bad_video_leaves_no_spool_behind(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    (tmp_path / "bad.mp4").write_bytes(b"not a video at all")
    outcome = generate.run(task_for(tmp_path / "bad.mp4"))
    assert outcome.skipped and "cannot open" in outcome.skipped["reason"]
    assert os.listdir(tmp_path / "scratch") == []


def test_an_oversized_example_stops_the_encoding_at_the_limit(make_video, monkeypatch):
    monkeypatch.setattr(generate, "MAX_EXAMPLE_BYTES", 1)
    with (
        pytest.raises(video_io.VideoError, match="set segment_frames"),
        generate.SegmentSpools(segment_frames=None) as frames,
    ):
        video_io.encode_video(str(make_video(num_frames=12)), video_io.EncodeOptions(), frames)
    assert len(frames) == 1  # the first frame already passed the limit
