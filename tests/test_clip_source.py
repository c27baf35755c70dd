"""ClipSource (TF-free reading) against TensorFlow's own reading of the same dataset.

References: tfds + ClipDecoder (the TF graph path) for clips, protobuf's parser
for records, OpenCV decoding every frame for unseeded clips, TFDS's own writer
for a dataset of the old (1.0.0) layout.
"""

import os
import pathlib
import pickle
import shutil
import struct
import subprocess
import sys

import google_crc32c
import hostile
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds
from tensorflow_datasets.proto import tf_example_pb2

import synthetic
from conftest import decode_jpegs
from video_tfrecords import Builder, ClipDecoder, ClipSource, VideoConfig, fold_in
from video_tfrecords.clips import keys
from video_tfrecords.records import dataset_files
from video_tfrecords.records.checksums import CorruptRecordError
from video_tfrecords.records.dataset_files import split_shards
from video_tfrecords.records.example_parser import parse_example
from video_tfrecords.records.schema import DATASET_VERSION, FINGERPRINT, FRAME_CHECKSUMS
from video_tfrecords.records.split_reader import SplitReader

CONFIG = "reader"
LENGTHS = (12, 15, 18, 21, 24, 3)  # the last one is shorter than most clips
SEED = 1234


@pytest.fixture(scope="module")
def manual_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("manual")
    lines = []
    for i, length in enumerate(LENGTHS):
        frames = synthetic.moving_frames(length, 48, 64, seed=i)
        synthetic.write_video(str(folder / f"v{i}.mp4"), frames)
        lines.append(f"v{i}.mp4 c{i % 3}\n")
    (folder / "train.txt").write_text("".join(lines))
    (folder / "test.txt").write_text("".join(lines[:3]))
    return folder


def build(manual_dir, data_dir, file_format="tfrecord", num_shards=3):
    builder = tfds.builder(
        "video_tfrecords",
        data_dir=str(data_dir),
        config=VideoConfig(name=CONFIG, num_workers=1),
        file_format=file_format,
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(
            manual_dir=str(manual_dir), num_shards=num_shards
        )
    )
    return builder


@pytest.fixture(scope="module")
def tfrecord(manual_dir, tmp_path_factory):
    return build(manual_dir, tmp_path_factory.mktemp("tfrecord"))


@pytest.fixture(scope="module")
def array_record(manual_dir, tmp_path_factory):
    return build(manual_dir, tmp_path_factory.mktemp("array_record"), "array_record", 2)


def source_of(builder, **kwargs):
    kwargs.setdefault("num_frames", 4)
    return ClipSource("train", data_dir=builder.data_dir_root, config=CONFIG, **kwargs)


def tf_clips(builder, num_frames=4, **kwargs):
    """filename -> clip from TFDS's tf.data reading with ClipDecoder (the TF path)."""
    decoders = {"video": ClipDecoder(num_frames, **kwargs)}
    dataset = builder.as_dataset(split="train", decoders=decoders, shuffle_files=False)
    return {e["filename"].decode(): e for e in tfds.as_numpy(dataset)}


def all_examples(source):
    return [source[i] for i in range(len(source))]


def test_parse_example_matches_protobuf(tfrecord):
    reader = SplitReader(split_shards(tfrecord.data_path, "train"))
    assert len(reader) == len(LENGTHS)
    for index in range(len(reader)):
        data = reader.read(index)
        reference = tf_example_pb2.Example.FromString(bytes(data)).features.feature
        parsed = parse_example(data)
        assert set(parsed) == set(reference)
        for name, feature in reference.items():
            kind = feature.WhichOneof("kind")
            expected = list(getattr(feature, kind).value)
            if kind == "bytes_list":
                assert [bytes(v) for v in parsed[name]] == expected, name
            else:
                np.testing.assert_array_equal(parsed[name], np.asarray(expected, np.float64))


def test_order_and_scalar_features_match_tfds(tfrecord):
    source = source_of(tfrecord, num_frames=1)
    reference = list(tfds.as_numpy(tfrecord.as_dataset(split="train", shuffle_files=False)))
    assert len(source) == len(reference)
    for example, expected in zip(all_examples(source), reference):
        assert example["filename"] == expected["filename"].decode()
        assert example["label"] == expected["label"] and isinstance(example["label"], int)
        for name in ("fps", "codec", "source_num_frames", "display_width", "rotation", "segment"):
            value = expected[name]
            assert example[name] == (value.decode() if isinstance(value, bytes) else value), name
        assert "timestamps" not in example  # not a scalar: a batch could not stack it


CLIP_ARGS = [
    {"stride": (1, 3), "crop_size": (32, 40), "flip": True},
    {"mode": "uniform", "num_clips": 3, "stride": 2, "crop_size": (40, 40), "crop": "center"},
    {"num_clips": 2, "crop_size": (24, 24), "flip": True, "short_video": "pad"},
    {"mode": "center", "short_video": "repeat_last", "short_side": 24},
]


@pytest.mark.parametrize("clip_args", CLIP_ARGS)
def test_seeded_clips_equal_the_tf_path(tfrecord, array_record, clip_args):
    expected = tf_clips(tfrecord, seed=SEED, **clip_args)
    for builder in (tfrecord, array_record):
        source = source_of(builder, seed=SEED, **clip_args)
        for example in all_examples(source):
            reference = expected[example["filename"]]["video"]
            assert example["video"].dtype == np.uint8
            np.testing.assert_array_equal(example["video"], reference)


def test_epochs_move_to_fold_in_seeds(tfrecord):
    source = source_of(tfrecord, seed=SEED, crop_size=(32, 32), flip=True)
    first = all_examples(source)
    assert source.seed == SEED
    for epoch, seed in ((0, SEED), (3, fold_in(SEED, 3))):  # epoch 0: the seed itself
        source.set_epoch(epoch)
        expected = tf_clips(tfrecord, seed=seed, crop_size=(32, 32), flip=True)
        clips = all_examples(source)
        for example in clips:
            np.testing.assert_array_equal(example["video"], expected[example["filename"]]["video"])
        assert any(not np.array_equal(a["video"], b["video"]) for a, b in zip(first, clips)) == (
            epoch > 0
        )
    with pytest.raises(ValueError, match="epoch"):
        source.set_epoch(-1)


def test_unseeded_reads_draw_fresh_clips_of_the_video(tfrecord):
    source = source_of(tfrecord, num_frames=2)
    encoded = {
        e["filename"].decode(): e["video"]
        for e in tfds.as_numpy(
            tfrecord.as_dataset(split="train", decoders={"video": tfds.decode.SkipDecoding()})
        )
    }
    index = next(i for i in range(len(source)) if len(encoded[source[i]["filename"]]) >= 18)
    video = decode_jpegs(encoded[source[index]["filename"]])
    runs = [video[s : s + 2] for s in range(len(video) - 1)]
    clips = [source[index]["video"] for _ in range(12)]
    for clip in clips:
        assert any(np.array_equal(clip, run) for run in runs)
    assert len({clip.tobytes() for clip in clips}) > 1


def test_shards_are_disjoint_and_cover_the_split(tfrecord, array_record):
    for builder in (tfrecord, array_record):
        whole = [e["filename"] for e in all_examples(source_of(builder, num_frames=1))]
        parts = [
            [
                e["filename"]
                for e in all_examples(source_of(builder, num_frames=1, shard_index=i, num_shards=4))
            ]
            for i in range(4)
        ]
        assert [len(p) for p in parts] == [1, 2, 1, 2]
        assert [name for part in parts for name in part] == whole
    with pytest.raises(ValueError, match="shard_index"):
        source_of(tfrecord, shard_index=4, num_shards=4)


def test_indices_and_batched_reads(array_record):
    source = source_of(array_record, seed=SEED)
    batch = source.__getitems__([3, 0, 3, -1])
    assert [e["filename"] for e in batch] == [source[i]["filename"] for i in (3, 0, 3, 5)]
    np.testing.assert_array_equal(batch[0]["video"], source[3]["video"])
    with pytest.raises(IndexError):
        source[-len(source) - 1]
    assert len(list(source)) == len(source)  # iteration stops at the end


def test_an_index_past_the_end_carries_its_epoch(tfrecord):
    source = source_of(tfrecord, seed=SEED, crop_size=(32, 32), flip=True)
    n = len(source)
    epoch_two = source_of(tfrecord, seed=SEED, crop_size=(32, 32), flip=True)
    epoch_two.set_epoch(2)
    for i in range(n):
        np.testing.assert_array_equal(source[2 * n + i]["video"], epoch_two[i]["video"])
        assert source[n + i]["filename"] == source[i]["filename"]
    assert [e["filename"] for e in source.__getitems__([n + 1, 1])] == [source[1]["filename"]] * 2


def epochs_through_persistent_workers(builder, torch, num_epochs=2):
    """filename -> clip, per epoch, from a DataLoader whose two workers live across epochs."""
    source = source_of(builder, seed=7, crop_size=(32, 32), flip=True)
    sampler = source.sampler(shuffle=True, seed=3)
    loader = torch.utils.data.DataLoader(
        source, batch_size=2, sampler=sampler, num_workers=2, persistent_workers=True
    )
    epochs = []
    for epoch in range(num_epochs):
        sampler.set_epoch(epoch)
        epochs.append(
            {n: v for b in loader for n, v in zip(b["filename"], b["video"].numpy())}
        )
    return epochs


def test_epochs_reach_persistent_dataloader_workers(tfrecord):
    torch = pytest.importorskip("torch")
    epochs = epochs_through_persistent_workers(tfrecord, torch)
    reference = source_of(tfrecord, seed=7, crop_size=(32, 32), flip=True)
    for epoch, clips in enumerate(epochs):
        reference.set_epoch(epoch)  # one process: the clips each epoch must give
        expected = {e["filename"]: e["video"] for e in all_examples(reference)}
        assert clips.keys() == expected.keys()
        for name, video in clips.items():
            np.testing.assert_array_equal(video, expected[name])
    assert any(not np.array_equal(epochs[0][k], epochs[1][k]) for k in epochs[0])
    again = epochs_through_persistent_workers(tfrecord, torch)  # a rerun replays them
    for first, second in zip(epochs, again):
        for name in first:
            np.testing.assert_array_equal(first[name], second[name])


def test_the_sampler_yields_every_example_once_per_epoch_in_a_seeded_order(tfrecord):
    sampler = source_of(tfrecord).sampler(shuffle=True, seed=5)
    n = len(sampler)
    orders = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        order = list(sampler)
        assert sorted(order) == list(range(epoch * n, (epoch + 1) * n))
        orders.append([i - epoch * n for i in order])
    assert orders[0] != orders[1] or orders[1] != orders[2]
    sampler.set_epoch(1)
    assert [i - n for i in sampler] == orders[1]


def test_pickled_source_gives_the_same_clips(tfrecord):
    source = source_of(tfrecord, seed=SEED, crop_size=(32, 32), flip=True)
    before = all_examples(source)  # files are open and indexed now
    source.set_epoch(2)
    copy = pickle.loads(pickle.dumps(source))
    source.set_epoch(2)
    for a, b in zip(all_examples(source), all_examples(copy)):
        np.testing.assert_array_equal(a["video"], b["video"])
    copy_before = pickle.loads(
        pickle.dumps(source_of(tfrecord, seed=SEED, crop_size=(32, 32), flip=True))
    )
    for a, b in zip(before, all_examples(copy_before)):
        np.testing.assert_array_equal(a["video"], b["video"])


def test_torch_dataloader_with_workers(tfrecord):
    torch = pytest.importorskip("torch")
    source = source_of(tfrecord, seed=SEED, crop_size=(32, 32))
    source[0]  # the main process reads too: TFRecord workers may still be forked
    loader = torch.utils.data.DataLoader(source, batch_size=2, num_workers=2)
    batches = list(loader)
    assert [tuple(b["video"].shape) for b in batches] == [(2, 4, 32, 32, 3)] * 3
    filenames = [name for b in batches for name in b["filename"]]
    videos = torch.cat([b["video"] for b in batches]).numpy()
    for i, (name, video) in enumerate(zip(filenames, videos)):
        expected = source[i]
        assert name == expected["filename"]
        np.testing.assert_array_equal(video, expected["video"])


ARRAY_RECORD_WORKERS = """
import sys, numpy as np, torch
from video_tfrecords import ClipSource

def clips(source, context):
    loader = torch.utils.data.DataLoader(
        source, batch_size=2, num_workers=2, multiprocessing_context=context
    )
    return np.concatenate([b["video"].numpy() for b in loader])

source = ClipSource("train", data_dir=sys.argv[1], config=sys.argv[2], num_frames=4, seed=7)
forked = clips(source.index_all(), "fork")  # the main process has opened no array_record file
expected = np.stack([source[i]["video"] for i in range(len(source))])
np.testing.assert_array_equal(forked, expected)
np.testing.assert_array_equal(clips(source, "forkserver"), expected)
try:
    clips(source, "fork")  # forked after the main process read: refused, not a segfault
except RuntimeError as e:
    print(e)
"""


def run_fresh(script: str, *args) -> str:
    """Runs a Python script in a fresh process (no array_record used yet); its stdout."""
    result = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_array_record_in_dataloader_workers(array_record):
    pytest.importorskip("torch")
    # In a fresh process: the fixture's own array_record writing would count as a read.
    out = run_fresh(ARRAY_RECORD_WORKERS, array_record.data_dir_root, CONFIG)
    assert "was forked from process" in out
    assert "multiprocessing_context='forkserver'" in out


BUILD_THEN_FORK = """
import sys, torch, tensorflow_datasets as tfds
from video_tfrecords import ClipSource, VideoConfig

config = VideoConfig(name="reader", num_workers=1)
builder = tfds.builder(
    "video_tfrecords", data_dir=sys.argv[2], config=config, file_format="array_record"
)
builder.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=sys.argv[1]))
source = ClipSource("train", data_dir=sys.argv[2], config="reader", num_frames=4)
try:  # TFDS's array_record writer ran in this process: forked readers are refused
    list(torch.utils.data.DataLoader(source, num_workers=2, multiprocessing_context="fork"))
except RuntimeError as e:
    print(e)
"""


def test_workers_forked_after_an_array_record_build_are_refused(manual_dir, tmp_path):
    pytest.importorskip("torch")
    out = run_fresh(BUILD_THEN_FORK, manual_dir, tmp_path / "data")
    assert "read or written array_record files" in out


def test_grain_map_dataset(tfrecord):
    grain = pytest.importorskip("grain")
    source = source_of(tfrecord, seed=SEED, crop_size=(32, 32))
    dataset = grain.MapDataset.source(source).map(lambda e: (e["video"], e["label"])).batch(3)
    batches = list(dataset)
    assert [b[0].shape for b in batches] == [(3, 4, 32, 32, 3)] * 2
    np.testing.assert_array_equal(batches[1][0][0], source[3]["video"])
    fresh = source_of(tfrecord, seed=SEED, crop_size=(32, 32))  # files opened by the threads
    threaded = grain.MapDataset.source(fresh).to_iter_dataset(grain.ReadOptions(num_threads=4))
    examples = list(threaded)
    assert [e["filename"] for e in examples] == [source[i]["filename"] for i in range(len(source))]
    for i, example in enumerate(examples):
        np.testing.assert_array_equal(example["video"], source[i]["video"])


# ---------------------------------------------------------------------------
# Finding the dataset, and bad input.
# ---------------------------------------------------------------------------


def test_default_data_dir_and_latest_version(tfrecord, tmp_path, monkeypatch):
    config_dir = tmp_path / "video_tfrecords" / CONFIG
    shutil.copytree(tfrecord.data_path, config_dir / "1.0.0")
    shutil.copytree(tfrecord.data_path, config_dir / "10.0.0")
    (config_dir / "incomplete.XYZ_11.0.0").mkdir()
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path))
    source = ClipSource("train", config=CONFIG, num_frames=1)
    assert source.dataset_dir == str(config_dir / "10.0.0")
    old = ClipSource("train", config=CONFIG, version="1.0.0", num_frames=1)
    assert old.dataset_dir == str(config_dir / "1.0.0")
    assert len(source) == len(old) == len(LENGTHS)


def test_default_config_is_the_builders_first():
    assert dataset_files.default_config("video_tfrecords") == Builder.BUILDER_CONFIGS[0].name


def test_missing_dataset_config_split_and_version_say_what_exists(tfrecord, tmp_path):
    with pytest.raises(FileNotFoundError, match="No prepared video_tfrecords dataset in"):
        ClipSource("train", data_dir=tmp_path, num_frames=1)
    with pytest.raises(FileNotFoundError, match=f"prepared configs: {CONFIG}"):
        ClipSource("train", data_dir=tfrecord.data_dir_root, num_frames=1)  # "default"
    with pytest.raises(ValueError, match="No split 'val' .* splits: (train, test|test, train)"):
        ClipSource("val", data_dir=tfrecord.data_dir_root, config=CONFIG, num_frames=1)
    with pytest.raises(FileNotFoundError, match=f"prepared versions: {DATASET_VERSION}"):
        source_of(tfrecord, version="9.9.9")


def copy_dataset(builder, tmp_path):
    target = tmp_path / "video_tfrecords" / CONFIG / str(builder.info.version)
    shutil.copytree(builder.data_path, target)
    return target


def flip_a_byte(path, offset, mask=0x40):
    """Damages one byte of a file in place (an open memory map of it sees the change)."""
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ mask]))


def first_record(shard) -> bytes:
    """The data of the shard's first TFRecord record (after its 12-byte header)."""
    with open(shard, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        f.seek(12)
        return f.read(length)


def frame_offset(shard, frame: int) -> int:
    """Byte offset in the shard of the middle of frame `frame` of its first record."""
    data = first_record(shard)
    jpeg = tf_example_pb2.Example.FromString(data).features.feature["video"].bytes_list.value[frame]
    return 12 + data.index(jpeg) + len(jpeg) // 2


def test_the_builder_stores_each_frames_crc32c(tfrecord):
    reader = SplitReader(split_shards(tfrecord.data_path, "train"))
    for index in range(len(reader)):
        feature = tf_example_pb2.Example.FromString(bytes(reader.read(index))).features.feature
        frames = feature["video"].bytes_list.value
        stored = list(feature[FRAME_CHECKSUMS].int64_list.value)
        assert stored == [google_crc32c.value(frame) for frame in frames]


def test_the_builder_stores_each_videos_fingerprint(tfrecord):
    # TF's graph of the fingerprint (the TF path's own) is the reference.
    reader = SplitReader(split_shards(tfrecord.data_path, "train"))
    for index in range(len(reader)):
        feature = tf_example_pb2.Example.FromString(bytes(reader.read(index))).features.feature
        frames = list(feature["video"].bytes_list.value)
        (stored,) = feature[FINGERPRINT].int64_list.value
        assert stored == int(keys.video_fingerprint(tf.constant(frames, tf.string)))


def test_a_seeded_read_takes_the_stored_fingerprint(tfrecord, monkeypatch):
    def hashed(frames):
        raise AssertionError("hashed the frames")

    monkeypatch.setattr(keys, "video_fingerprint", hashed)
    source = source_of(tfrecord, num_frames=3, seed=SEED)
    assert source[0]["video"].shape[0] == 3


def test_a_corrupt_frame_is_caught_when_a_clip_reads_it(tfrecord, tmp_path):
    # Each frame's CRC32C is checked when a clip reads it; frames no clip reads are not.
    folder = copy_dataset(tfrecord, tmp_path)
    count = len(parse_example(source_of(tfrecord).reader.read(0))["video"])
    assert count >= 5  # so that the middle frames of a 2-frame center clip are not frame 0
    source = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=count)
    name = source[0]["filename"]  # every frame of the first record, read before the damage
    shard = str(folder / os.path.basename(source.reader.shards.paths[0]))
    flip_a_byte(shard, frame_offset(shard, 0))
    center = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=2, mode="center")
    assert center[0]["video"].shape == (2, 48, 64, 3)  # two middle frames: not damaged
    fresh = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=count)
    for whole in (fresh, source):
        with pytest.raises(CorruptRecordError, match="CRC32C") as error:
            whole[0]  # a fresh source, and one that had read the record before the damage
        assert "Frame 0 " in str(error.value)
        assert shard in str(error.value) and name in str(error.value)


def test_a_pickled_copy_checks_frames_too(tfrecord, tmp_path):
    folder = copy_dataset(tfrecord, tmp_path)
    source = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=3, mode="center")
    source = source.index_all()
    name = source[0]["filename"]
    middle = len(parse_example(source.reader.read(0))["video"]) // 2
    worker_copy = pickle.dumps(source)
    shard = str(folder / os.path.basename(source.reader.shards.paths[0]))
    flip_a_byte(shard, frame_offset(shard, middle), 0x01)
    with pytest.raises(CorruptRecordError, match=f"Frame {middle} .*CRC32C") as error:
        pickle.loads(worker_copy)[0]
    assert shard in str(error.value) and name in str(error.value)


def test_damage_outside_the_frames_is_caught_on_a_first_read(tfrecord, tmp_path):
    # The label, filename, metadata and the frame checksums themselves are covered by the
    # record's CRC32C, checked on a record's first read in a process without reading frames.
    for damage in ("filename", "checksum"):
        folder = copy_dataset(tfrecord, tmp_path / damage)
        source = ClipSource("train", data_dir=tmp_path / damage, config=CONFIG, num_frames=2)
        shard = str(folder / os.path.basename(source.reader.shards.paths[0]))
        data = first_record(shard)
        feature = tf_example_pb2.Example.FromString(data).features.feature
        name = feature["filename"].bytes_list.value[0]
        if damage == "filename":
            target = data.index(name) + 1
        else:  # the low bit of the first byte of the first frame's stored checksum
            first = feature[FRAME_CHECKSUMS].int64_list.value[0]
            varint = bytes(
                [
                    (first >> 7 * i & 0x7F) | (0x80 if first >> 7 * (i + 1) else 0)
                    for i in range(5)
                    if i == 0 or first >> 7 * i
                ]
            )
            target = data.index(varint)
        worker_copy = pickle.dumps(source.index_all())
        flip_a_byte(shard, 12 + target, 0x01)
        for reader in (source, pickle.loads(worker_copy)):
            with pytest.raises(CorruptRecordError, match="outside its frames") as error:
                reader[0]
            assert shard in str(error.value)


def test_check_records_checks_every_byte_on_a_first_read(tfrecord, tmp_path):
    folder = copy_dataset(tfrecord, tmp_path)
    center = {"data_dir": tmp_path, "config": CONFIG, "num_frames": 2, "mode": "center"}
    shard = str(folder / os.path.basename(ClipSource("train", **center).reader.shards.paths[0]))
    assert len(parse_example(first_record(shard))["video"]) >= 5
    flip_a_byte(shard, frame_offset(shard, 0))  # a frame the center clip does not read
    assert ClipSource("train", **center)[0]["video"].shape == (2, 48, 64, 3)
    with pytest.raises(CorruptRecordError, match="is corrupt .CRC32C mismatch"):
        ClipSource("train", check_records=True, **center)[0]


def test_frame_and_checksum_counts_must_match(tfrecord, tmp_path):
    folder = copy_dataset(tfrecord, tmp_path)
    source = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=2)
    shard = str(folder / os.path.basename(source.reader.shards.paths[0]))
    raw = first_record(shard)
    example = tf_example_pb2.Example.FromString(raw)
    del example.features.feature[FRAME_CHECKSUMS].int64_list.value[-1]
    with open(shard, "rb") as f:
        rest = f.read()[12 + len(raw) + 4 :]
    with open(shard, "wb") as f:
        f.write(frame_record(example) + rest)
    with pytest.raises(CorruptRecordError, match="frames but .* frame checksums"):
        ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=2)[0]


def frame_record(example: tf_example_pb2.Example) -> bytes:
    """A TFRecord record with correct checksums (the format's spec, written independently)."""

    def masked(data):
        crc = google_crc32c.value(data)
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    data = example.SerializeToString()
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))


def test_corrupt_jpeg_with_valid_checksum_names_the_video_and_file(tfrecord, tmp_path):
    folder = copy_dataset(tfrecord, tmp_path)
    source = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=2)
    shard = str(folder / os.path.basename(source.reader.shards.paths[0]))
    raw = bytes(source.reader.read(0))
    example = tf_example_pb2.Example.FromString(raw)
    frames = example.features.feature["video"].bytes_list.value
    name = example.features.feature["filename"].bytes_list.value[0].decode()
    for i in range(len(frames)):
        frames[i] = frames[i][: len(frames[i]) // 2]  # cut short: no end-of-image marker
    hostile.with_frame_checksums(example)  # checksums and sizes that match the damage
    with open(shard, "rb") as f:
        rest = f.read()[12 + len(raw) + 4 :]
    with open(shard, "wb") as f:
        f.write(frame_record(example) + rest)
    fresh = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=2)
    with pytest.raises(ValueError, match="not a valid JPEG") as error:
        fresh[0]
    assert name in str(error.value) and shard in str(error.value)


def test_corrupt_array_record_names_the_file(array_record, tmp_path):
    folder = copy_dataset(array_record, tmp_path)
    shard = min(folder.glob("*train.array_record*"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 4] ^= 0x40
    shard.write_bytes(bytes(data))
    source = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=2)
    with pytest.raises(CorruptRecordError, match=str(shard)):
        all_examples(source)


def test_record_count_must_match_dataset_info(tfrecord, tmp_path):
    folder = copy_dataset(tfrecord, tmp_path)
    source = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=2)
    shard = folder / os.path.basename(source.reader.shards.paths[-1])
    assert source.reader.shards.lengths[-1] == 2
    shard.write_bytes(first_record_whole(shard))  # one record of two
    fresh = ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=2)
    with pytest.raises(CorruptRecordError, match="holds 1 records, but dataset_info.json says 2"):
        fresh[len(fresh) - 1]
    shard.write_bytes(b"")  # too few bytes for the records it should hold: refused on opening
    with pytest.raises(CorruptRecordError, match=f"{shard} holds 2 records: more than its 0 b"):
        ClipSource("train", data_dir=tmp_path, config=CONFIG, num_frames=2)


def first_record_whole(path) -> bytes:
    """A TFRecord file's first record with its length and checksums, as stored."""
    data = pathlib.Path(path).read_bytes()
    (size,) = struct.unpack_from("<Q", data)
    return data[: 12 + size + 4]


# ---------------------------------------------------------------------------
# A dataset of the first layout (1.0.0: video, label and filename only).
# ---------------------------------------------------------------------------


class FirstLayout(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """The three features every version of the builder writes, written by TFDS itself."""

    name = "video_tfrecords"
    VERSION = tfds.core.Version("1.0.0")
    BUILDER_CONFIGS = [tfds.core.BuilderConfig(name="default")]

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict(
                {
                    "video": tfds.features.Video((None, 32, 48, 3), encoding_format="jpeg"),
                    "label": tfds.features.ClassLabel(names=["a", "b"]),
                    "filename": tfds.features.Text(),
                }
            ),
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        for i in range(3):
            frames = synthetic.moving_frames(6 + i, 32, 48, seed=i)
            yield i, {"video": frames, "label": i % 2, "filename": f"old{i}.mp4"}


def test_reads_a_dataset_of_the_first_layout(tmp_path):
    builder = FirstLayout(data_dir=str(tmp_path))
    builder.download_and_prepare()
    source = ClipSource("train", data_dir=tmp_path, num_frames=3, seed=SEED, flip=True)
    assert source.dataset_dir.endswith(os.path.join("video_tfrecords", "default", "1.0.0"))
    decoders = {"video": ClipDecoder(3, seed=SEED, flip=True)}
    expected = {
        e["filename"].decode(): e
        for e in tfds.as_numpy(builder.as_dataset(split="train", decoders=decoders))
    }
    examples = all_examples(source)
    assert sorted(e["filename"] for e in examples) == sorted(expected)
    for example in examples:
        assert set(example) == {"video", "label", "filename"}
        assert example["label"] == expected[example["filename"]]["label"]
        np.testing.assert_array_equal(example["video"], expected[example["filename"]]["video"])
    assert source.label_names == ["a", "b"]


def test_a_dataset_without_frame_checksums_gets_each_record_checked(tmp_path):
    # Datasets built before frame_crc32c: a record's CRC32C is checked on its first read
    # in each process, so damage done after the parent's read is caught by a worker.
    builder = FirstLayout(data_dir=str(tmp_path))
    builder.download_and_prepare()
    source = ClipSource("train", data_dir=tmp_path, num_frames=2, mode="center").index_all()
    name = source[0]["filename"]
    worker_copy = pickle.dumps(source)
    shard = source.reader.shards.paths[0]
    flip_a_byte(shard, frame_offset(shard, 0))  # a frame the center clip does not read
    with pytest.raises(CorruptRecordError, match="CRC32C") as error:
        pickle.loads(worker_copy)[0]
    assert shard in str(error.value) and name in str(error.value)


@pytest.mark.parametrize(
    "clip_args",
    [
        {"fps": 10.0, "mode": "center"},
        {"fps": 12.5, "stride": 2, "crop_size": (24, 24), "flip": True},
        {"mode": "segments", "crop_size": (24, 24), "num_crops": 3},
    ],
)
def test_recipe_clips_equal_the_tf_path_reading_timestamps(tfrecord, clip_args):
    # The TF path reads the record's timestamps through ClipDecoder.decode_features.
    decoder = ClipDecoder(4, seed=SEED, **clip_args)
    dataset = tfrecord.as_dataset(
        split="train", decoders={"video": tfds.decode.SkipDecoding()}, shuffle_files=False
    )
    expected = {
        e["filename"].decode(): e["video"]
        for e in tfds.as_numpy(dataset.map(decoder.decode_features))
    }
    source = source_of(tfrecord, seed=SEED, **clip_args)
    for example in all_examples(source):
        np.testing.assert_array_equal(example["video"], expected[example["filename"]])


def test_plan_names_the_frames_and_boxes_the_clip_is_cut_from(tfrecord):
    """`ClipSource.plan(i)`: the clip `source[i]` is exactly the stored frames at its indices
    (OpenCV's decode), cut at its boxes and mirrored where it flips."""
    source = source_of(tfrecord, crop_size=(24, 40), flip=True, seed=SEED)
    encoded = {
        e["filename"].decode(): e["video"]
        for e in tfds.as_numpy(
            tfrecord.as_dataset(
                split="train", shuffle_files=False,
                decoders={"video": tfds.decode.SkipDecoding()},
            )
        )
    }
    flips = set()
    for index in range(len(source)):
        plan, example = source.plan(index), source[index]
        frames = decode_jpegs(encoded[example["filename"]])
        assert tuple(plan["frame_size"]) == frames.shape[1:3]
        ((y, x, h, w),) = plan["boxes"].tolist()
        assert (h, w) == (24, 40) and (y, x) == tuple(plan["crop_offsets"][0])
        assert 0 <= y <= frames.shape[1] - h and 0 <= x <= frames.shape[2] - w
        expected = frames[plan["indices"][0] % len(frames), y : y + h, x : x + w]
        if plan["flip"][0]:
            expected = expected[:, :, ::-1]
        flips.add(bool(plan["flip"][0]))
        np.testing.assert_array_equal(example["video"], expected)
    assert flips == {True, False}


def test_plan_boxes_after_short_side_map_back_to_the_stored_frame(tfrecord):
    """With `short_side` the box is drawn in the resized frame: mapped back, it covers the
    same part of the stored frame (scaled by stored / resized rows and columns)."""
    source = source_of(tfrecord, short_side=24, crop_size=(16, 16), seed=SEED)
    for index in range(len(source)):
        plan = source.plan(index)
        height, width = plan["frame_size"].tolist()
        scale_y, scale_x = height / 24, width / round(width * 24 / height)
        ((y, x, h, w),) = plan["boxes"].tolist()
        off_y, off_x = plan["crop_offsets"][0].tolist()
        assert abs(y - off_y * scale_y) <= 0.5 and abs(x - off_x * scale_x) <= 0.5
        assert abs(h - 16 * scale_y) <= 1 and abs(w - 16 * scale_x) <= 1


def test_get_without_scalars_gives_the_same_clip_and_label_and_no_metadata(tfrecord):
    source = source_of(tfrecord, seed=SEED)
    for index in range(len(source)):
        full = source.get(index, seed=SEED + index)
        lean = source.get(index, seed=SEED + index, scalars=False)
        np.testing.assert_array_equal(lean["video"], full["video"])
        assert (lean["label"], lean["filename"]) == (full["label"], full["filename"])
        assert "codec" in full and set(lean) == {"video", "label", "filename"}
