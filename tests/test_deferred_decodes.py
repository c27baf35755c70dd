"""Deferred decodes (`ClipSource.get(deferred=...)`, what clip_dataset's batches use): the clip
is planned at once and filled when the caller runs the deferred callables, with the pixels of an
immediate read (and OpenCV's, within the IDCT's grey level); a damaged frame is still refused,
naming the frame, the video and the record."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import tensorflow_datasets as tfds

import synthetic
from conftest import decode_jpegs
from video_tfrecords import ClipSource, VideoConfig
from video_tfrecords.records.checksums import CorruptRecordError
from video_tfrecords.records.example_parser import parse_example

CONFIG = "deferred"
SEED = 77


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    manual = tmp_path_factory.mktemp("manual")
    lines = []
    for i, length in enumerate((20, 24, 30)):
        synthetic.write_video(str(manual / f"v{i}.mp4"), synthetic.moving_frames(length, 48, 64, i))
        lines.append(f"v{i}.mp4 c{i}\n")
    (manual / "train.txt").write_text("".join(lines))
    root = tmp_path_factory.mktemp("data")
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(root), config=VideoConfig(name=CONFIG, num_workers=1)
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual), num_shards=1)
    )
    return root


def source(root, **kwargs):
    return ClipSource(
        "train", data_dir=str(root), config=CONFIG, num_frames=6, stride=2, seed=SEED, **kwargs
    )  # (`plan(i)` draws with the source's seed: get's below)


@pytest.mark.parametrize("flip", [False, True])
def test_a_deferred_clip_is_the_immediate_one(data_dir, flip):
    clips = source(data_dir, flip=flip)
    for index in range(len(clips)):
        expected = clips.get(index, seed=SEED)["video"].copy()
        out = np.full(expected.shape, 7, np.uint8)
        deferred = []
        example = clips.get(index, seed=SEED, out=out, deferred=deferred)
        assert len(deferred) == 1 and (out == 7).all()  # planned, nothing decoded yet
        for decode in deferred:
            decode()
        assert example["video"].base is out or example["video"] is out
        np.testing.assert_array_equal(out, expected)
        if not flip:  # the stored JPEGs of the planned frames, decoded by OpenCV
            frames = parse_example(clips.reader.read(index))["video"]
            planned = clips.plan(index)["indices"][0]
            reference = decode_jpegs([bytes(frames[i]) for i in planned])
            assert np.abs(out.astype(int) - reference).max() <= 1


def test_without_out_nothing_is_deferred(data_dir):
    deferred = []
    video = source(data_dir).get(0, seed=SEED, deferred=deferred)["video"]
    assert deferred == [] and video.shape == (6, 48, 64, 3)


def test_a_damaged_frame_is_refused_when_its_decode_runs(data_dir, tmp_path):
    damaged = tmp_path / "data"
    shutil.copytree(data_dir, damaged)
    clips = source(damaged)
    planned = clips.plan(1)["indices"][0]
    frame = bytes(parse_example(clips.reader.read(1))["video"][int(planned[2])])
    [shard] = damaged.glob(f"video_tfrecords/{CONFIG}/*/*.tfrecord*")
    data = bytearray(shard.read_bytes())
    at = data.find(frame)
    assert at > 0 and data.find(frame, at + 1) < 0
    data[at + len(frame) // 2] ^= 0xFF  # within the scan: the CRC32C tells
    shard.write_bytes(bytes(data))
    clips = source(damaged)
    out = np.empty((6, 48, 64, 3), np.uint8)
    deferred = []
    clips.get(1, seed=SEED, out=out, deferred=deferred)  # the record and its plan are sound
    words = rf"Frame {int(planned[2])} of video `v1.mp4` \(record 1 of .*\) is corrupt \(CRC32C"
    with pytest.raises(CorruptRecordError, match=words):
        deferred[0]()
