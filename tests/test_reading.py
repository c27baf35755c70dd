"""Reading at scale: disjoint shards per host, tf.data service, array_record + data_source."""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import synthetic
from conftest import decode_jpegs, psnr
from video_tfrecords import ClipDecoder, VideoConfig

NUM_TRAIN = 6


@pytest.fixture(scope="module")
def manual_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("manual")
    for i in range(NUM_TRAIN):
        synthetic.write_video(str(folder / f"v{i}.mp4"), synthetic.moving_frames(3 + i, 32, 48, i))
    (folder / "train.txt").write_text("".join(f"v{i}.mp4 c{i % 2}\n" for i in range(NUM_TRAIN)))
    return folder


def build(manual_dir, data_dir, **kwargs):
    builder = tfds.builder(
        "video_tfrecords",
        data_dir=str(data_dir),
        config=VideoConfig(name="reading", num_workers=1),
        **kwargs,
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual_dir), num_shards=3)
    )
    return builder


@pytest.fixture(scope="module")
def builder(manual_dir, tmp_path_factory):
    return build(manual_dir, tmp_path_factory.mktemp("data"))


def filenames(dataset):
    return [e["filename"] for e in tfds.as_numpy(dataset)]


def test_two_hosts_read_disjoint_shards_covering_the_split(builder):
    assert builder.info.splits["train"].num_shards == 3
    per_host = []
    for host in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=host)
        dataset = builder.as_dataset(
            split="train", read_config=tfds.ReadConfig(input_context=context)
        )
        per_host.append(set(filenames(dataset)))
    assert per_host[0] and per_host[1]
    assert not per_host[0] & per_host[1]
    assert len(per_host[0] | per_host[1]) == NUM_TRAIN


def test_tf_data_service_with_two_workers_serves_each_video_once(builder):
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    workers = [
        tf.data.experimental.service.WorkerServer(
            tf.data.experimental.service.WorkerConfig(dispatcher_address=address)
        )
        for _ in range(2)
    ]
    # distributed_epoch splits the dataset by file across workers, so no worker
    # sees the whole split: TFDS's cardinality assertion must be off.
    read_config = tfds.ReadConfig(assert_cardinality=False)
    dataset = builder.as_dataset(split="train", read_config=read_config)
    dataset = dataset.map(lambda e: e["filename"])
    served = dataset.apply(
        tf.data.experimental.service.distribute(
            processing_mode="distributed_epoch", service=dispatcher.target
        )
    )
    assert sorted(served.as_numpy_iterator()) == sorted(filenames(builder.as_dataset("train")))
    del workers


def test_array_record_data_source_gives_random_access(manual_dir, builder, tmp_path):
    build(manual_dir, tmp_path, file_format="array_record")
    source = tfds.data_source("video_tfrecords/reading", split="train", data_dir=str(tmp_path))
    assert len(source) == NUM_TRAIN
    by_name = {source[i]["filename"]: source[i] for i in range(len(source))}
    reference = {e["filename"]: e for e in tfds.as_numpy(builder.as_dataset("train"))}
    assert set(by_name) == set(reference)
    for name, example in by_name.items():
        # data_source decodes JPEG with OpenCV, tf.data with TensorFlow's libjpeg:
        # the same bytes, slightly different rounding (chroma upsampling).
        frames = np.asarray(example["video"])
        assert frames.shape == reference[name]["video"].shape
        assert psnr(frames, reference[name]["video"]) >= 40


def test_tfds_load_with_clip_decoder_gives_runs_of_the_video(builder):
    encoded = {
        e["filename"]: e["video"]
        for e in tfds.as_numpy(
            builder.as_dataset("train", decoders={"video": tfds.decode.SkipDecoding()})
        )
    }
    clips = builder.as_dataset("train", decoders={"video": ClipDecoder(3, mode="center")})
    for example in tfds.as_numpy(clips):
        video = decode_jpegs(encoded[example["filename"]])
        start = (len(video) - 3) // 2
        np.testing.assert_array_equal(example["video"], video[start : start + 3])


def test_data_source_with_clip_decoder_numpy_path(manual_dir, tmp_path):
    build(manual_dir, tmp_path, file_format="array_record")
    source = tfds.data_source(
        "video_tfrecords/reading",
        split="train",
        data_dir=str(tmp_path),
        decoders={"video": ClipDecoder(2, stride=2, seed=7)},  # span 3: fits every video
    )
    raw = tfds.data_source("video_tfrecords/reading", split="train", data_dir=str(tmp_path))
    for index in range(len(source)):
        clip = source[index]["video"]
        assert isinstance(clip, np.ndarray) and clip.shape == (2, 32, 48, 3)
        video = np.asarray(raw[index]["video"])  # decoded by TFDS with OpenCV
        runs = [video[s : s + 3 : 2] for s in range(len(video) - 2)]
        assert any(np.array_equal(clip, run) for run in runs)
        np.testing.assert_array_equal(source[index]["video"], clip)  # seeded: same clip again


def test_tfrecords_written_without_tensorflow_are_tensorflows(tmp_path):
    """`write_tfrecord` (what the Spark build writes) gives the bytes tf.io.TFRecordWriter
    writes, and tf.data reads each record back (it checks both CRCs)."""
    from etils import epath

    from video_tfrecords.records.tfrecord_shard import write_tfrecord

    records = [b"", b"x", bytes(range(256)) * 300, b"last record"]
    ours, theirs = tmp_path / "ours.tfrecord", tmp_path / "theirs.tfrecord"
    write_tfrecord(epath.Path(ours), iter(records))
    with tf.io.TFRecordWriter(str(theirs)) as writer:
        for record in records:
            writer.write(record)
    assert ours.read_bytes() == theirs.read_bytes()
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(ours))] == records
