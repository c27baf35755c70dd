"""A frame whose header claims a huge size (issue 49): refused by every reader before a byte of
its pixels is allocated, in under a second of CPU and 300 MB, naming the file, record, video
and frame.

The hostile copies are written with protobuf and google-crc32c (`hostile`): every checksum
passes. The references: the frame's own header bytes (set here), the JPEG spec's markers, and
each reader's cost on the same dataset undamaged.
"""

import os

import cv2
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import hostile
import synthetic
from video_tfrecords import ClipDecoder, ClipSource, VideoConfig, clip_dataset
from video_tfrecords.clips import jpeg
from video_tfrecords.records import schema
from video_tfrecords.util.errors import CorruptRecordError
from video_tfrecords.video_tfrecords_dataset_builder import Builder  # noqa: F401 (registers it)

FRAMES, HEIGHT, WIDTH = 12, 48, 64
CLIP = {"num_frames": 2, "mode": "center", "crop_size": (32, 32)}  # frames 5 and 6
SECONDS, MEGABYTES = 1.0, 300


@pytest.fixture(scope="module")
def manual_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("manual")
    for i in range(2):
        frames = synthetic.moving_frames(FRAMES, HEIGHT, WIDTH, seed=i)
        synthetic.write_video(str(folder / f"v{i}.mp4"), frames)
    (folder / "train.txt").write_text("v0.mp4 a\nv1.mp4 b\n")
    return folder


def build(manual_dir, data_dir, name, **fields):
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(data_dir),
        config=VideoConfig(name=name, num_workers=1, short_side=None, **fields),
    )  # fmt: skip
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual_dir))
    )
    return builder


@pytest.fixture(scope="module")
def variable(manual_dir, tmp_path_factory):
    """Frames of each video's own size: the size each example stores is what frames must have."""
    return build(manual_dir, tmp_path_factory.mktemp("variable"), "variable")


@pytest.fixture(scope="module")
def fixed(manual_dir, tmp_path_factory):
    """A config's fixed size: the feature's shape is what frames must have."""
    return build(manual_dir, tmp_path_factory.mktemp("fixed"), "fixed", size=(HEIGHT, WIDTH))


class OldLayout(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """The first layout (1.0.0), frames of any size: no stored size, no checksums, so only the
    pixel cap and the first frame's size can refuse a frame."""

    name = "video_tfrecords"
    VERSION = tfds.core.Version("1.0.0")
    BUILDER_CONFIGS = [tfds.core.BuilderConfig(name="old")]

    def _info(self):
        features = {
            "video": tfds.features.Video((None, None, None, 3), encoding_format="jpeg"),
            "label": tfds.features.ClassLabel(names=["a", "b"]),
            "filename": tfds.features.Text(),
        }
        return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict(features))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        for i in range(2):
            frames = synthetic.moving_frames(FRAMES, HEIGHT, WIDTH, seed=i)
            yield i, {"video": frames, "label": i, "filename": f"old{i}.mp4"}


@pytest.fixture(scope="module")
def old(tmp_path_factory):
    builder = OldLayout(data_dir=str(tmp_path_factory.mktemp("old")))
    builder.download_and_prepare()
    return builder


def with_bomb(builder, root, side: int, frame: int) -> tuple[str, str]:
    """A copy of the dataset under `root` (a data dir) whose first record's `frame` claims
    side x side pixels: (the copy's dataset folder, the record's video)."""
    source = os.fspath(builder.data_path)
    name, version = builder.builder_config.name, str(builder.version)
    folder = os.path.join(root, "video_tfrecords", name, version)
    (shard,) = hostile.shards(source)
    data = hostile.records(shard)
    example = hostile.Example.FromString(data[0])
    frames = example.features.feature["video"].bytes_list.value
    frames[frame] = hostile.bomb(frames[frame], side)
    data[0] = hostile.with_frame_checksums(example).SerializeToString()
    video = example.features.feature["filename"].bytes_list.value[0].decode()
    return hostile.copy_with(source, folder, {0: data}), video


def assert_refused(error, seconds, megabytes, *names):
    assert error is not None, "read the hostile frame without an error"
    assert seconds < SECONDS and megabytes < MEGABYTES, (seconds, megabytes)
    for name in names:
        assert name in str(error), (name, str(error)[:2000])


@pytest.mark.parametrize("side, frame", [(30000, 5), (60000, 6)])  # the first planned, the second
@pytest.mark.parametrize("config", ["variable", "fixed", "old"])
def test_clip_source_refuses_the_frame_before_allocating_it(config, side, frame, request, tmp_path):
    builder = request.getfixturevalue(config)
    folder, video = with_bomb(builder, tmp_path, side, frame)
    for clip in (CLIP, {"num_frames": FRAMES}):  # a crop; whole frames into the clip itself
        source = ClipSource("train", dataset_dir=folder, **clip)
        source[1]  # the undamaged record, read first: the baseline
        _, error, seconds, megabytes = hostile.measured(lambda: source[0])
        assert isinstance(error, CorruptRecordError), error
        shard = source.reader.shards.paths[0]
        assert_refused(error, seconds, megabytes, shard, "record 0", video, f"Frame {frame} ")


def tfds_clips(folder, decoder):
    builder = tfds.builder_from_directory(folder)
    config = tfds.ReadConfig(try_autocache=False)
    return builder.as_dataset(split="train", decoders={"video": decoder}, read_config=config)


def read_all(dataset):
    for _ in dataset:
        pass


def measured_pipeline(dataset):
    """`hostile.measured` of reading a tf.data pipeline, its iterator made first (tracing and
    graph optimization are its start-up, not its reads)."""
    iterator = iter(dataset)
    return hostile.measured(lambda: read_all(iterator))


@pytest.mark.parametrize(
    "config, side, frame, clip",
    [
        ("variable", 30000, 5, {"num_frames": 2, "mode": "center"}),  # whole frames
        ("fixed", 30000, 6, CLIP),  # (a crop of frames of a static size: no header read)
        ("fixed", 60000, 5, {"num_frames": 2, "mode": "center"}),
    ],
)
def test_tfds_load_with_clip_decoder_refuses_it(config, side, frame, clip, request, tmp_path):
    """The graph's check runs before any decode op: TensorFlow's InvalidArgumentError, whose
    message is CorruptRecordError's (a tf.data pipeline raises no other type)."""
    builder = request.getfixturevalue(config)
    read_all(tfds_clips(os.fspath(builder.data_path), ClipDecoder(**clip)))  # TF's start-up
    folder, _ = with_bomb(builder, tmp_path, side, frame)
    _, error, seconds, megabytes = measured_pipeline(tfds_clips(folder, ClipDecoder(**clip)))
    assert isinstance(error, tf.errors.InvalidArgumentError), error
    assert_refused(error, seconds, megabytes, f"CorruptRecordError: Frame {frame} ")
    assert f"{side}x{side}" in str(error)


def test_decode_features_names_the_video_and_the_record(variable, tmp_path):
    folder, video = with_bomb(variable, tmp_path, 30000, 6)
    config = tfds.ReadConfig(try_autocache=False, add_tfds_id=True)
    dataset = tfds.builder_from_directory(folder).as_dataset(
        split="train", decoders={"video": tfds.decode.SkipDecoding()}, read_config=config
    )
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        read_all(dataset.map(ClipDecoder(2, mode="center").decode_features))
    message = str(error.value)
    for name in (f"CorruptRecordError: Frame 6 of video `{video}", "tfrecord-00000-of-00001__0"):
        assert name in message, message[:2000]


@pytest.mark.parametrize("config, side", [("variable", 60000), ("old", 30000)])
def test_clip_dataset_refuses_it(config, side, request, tmp_path):
    builder = request.getfixturevalue(config)
    name = builder.builder_config.name

    def pipeline(root):
        return clip_dataset(
            "train", data_dir=str(root), builder_kwargs={"config": name}, batch_size=1,
            training=False, dtype=tf.uint8, **CLIP,
        )  # fmt: skip

    read_all(pipeline(builder.data_dir_root))  # TF's start-up
    _, video = with_bomb(builder, tmp_path, side, 5)
    _, error, seconds, megabytes = measured_pipeline(pipeline(tmp_path))
    assert isinstance(error, tf.errors.InvalidArgumentError), error
    assert_refused(error, seconds, megabytes, "CorruptRecordError: Frame 5 ", video, "record 0 of")


def test_the_build_stores_every_frames_size(variable, fixed):
    for builder in (variable, fixed):
        for data in hostile.records(hostile.shards(os.fspath(builder.data_path))[0]):
            feature = hostile.Example.FromString(data).features.feature
            frames = feature["video"].bytes_list.value
            decoded = {cv2.imdecode(np.frombuffer(f, np.uint8), 1).shape[:2] for f in frames}
            assert decoded == {(HEIGHT, WIDTH)}
            names = (schema.FRAME_HEIGHT, schema.FRAME_WIDTH)
            assert [feature[n].int64_list.value[0] for n in names] == [HEIGHT, WIDTH]


def test_the_header_reader_agrees_with_opencv():
    rng = np.random.default_rng(0)
    for height, width in [(1, 1), (17, 33), (256, 341), (720, 1280)]:
        image = rng.integers(0, 256, (height, width, 3), np.uint8)
        data = cv2.imencode(".jpg", image)[1].tobytes()
        decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        assert jpeg.jpeg_size(data) == decoded.shape[:2]
        assert jpeg.frame_problem(data, decoded.shape[:2]) is None
