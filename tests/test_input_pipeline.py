"""Tests of reading clips through TFDS: `tfds.load`, `tfds.data_source` and `clip_dataset`.

A tiny dataset of five JPEG videos is written in a tmp dir by its own builder
(not the package's), in TFRecord and array_record formats.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from video_tfrecords import input_pipeline
from video_tfrecords.clips import buffers, keys
from video_tfrecords.decoders import ClipDecoder

H, W = 32, 48
NUM_VIDEOS = 5


class SamplingTestVideos(tfds.core.GeneratorBasedBuilder):
    """Five short JPEG videos, labels 0..4 (test fixture for clip_dataset)."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict(
                {
                    "video": tfds.features.Video(shape=(None, H, W, 3), encoding_format="jpeg"),
                    "label": tfds.features.ClassLabel(num_classes=NUM_VIDEOS),
                    "filename": tfds.features.Text(),
                }
            ),
        )

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        rng = np.random.default_rng(0)
        for i in range(NUM_VIDEOS):
            frames = rng.integers(0, 256, (12 + 2 * i, H, W, 3), dtype=np.uint8)
            yield i, {"video": frames, "label": i, "filename": f"video_{i}.mp4"}


@pytest.fixture(scope="module")
def tiny_data_dir(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("tfds")
    SamplingTestVideos(data_dir=str(data_dir)).download_and_prepare()
    return str(data_dir)


@pytest.fixture(scope="module")
def array_record_dir(tmp_path_factory):
    pytest.importorskip("array_record")
    data_dir = tmp_path_factory.mktemp("tfds_ar")
    SamplingTestVideos(data_dir=str(data_dir), file_format="array_record").download_and_prepare()
    return str(data_dir)


def _stored_frames(data_dir):
    """{label: the video's JPEG frames as stored}, read with SkipDecoding."""
    raw = tfds.load(
        "sampling_test_videos",
        split="train",
        data_dir=data_dir,
        decoders={"video": tfds.decode.SkipDecoding()},
    )
    return {int(ex["label"]): ex["video"] for ex in raw}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_frames": 4, "stride": (1, 2), "crop_size": (16, 16), "flip": True, "seed": 8},
        {"num_frames": 4, "crop_size": (12, 12), "flip": True, "seed": 8, "short_side": 16},
    ],
)
def test_decoder_with_tfds_data_source_matches_tfds_load(tiny_data_dir, array_record_dir, kwargs):
    source = tfds.data_source(
        "sampling_test_videos",
        split="train",
        data_dir=array_record_dir,
        decoders={"video": ClipDecoder(**kwargs)},
    )
    from_source = {int(source[i]["label"]): source[i]["video"] for i in range(len(source))}
    loaded = tfds.load(
        "sampling_test_videos",
        split="train",
        data_dir=tiny_data_dir,
        decoders={"video": ClipDecoder(**kwargs)},
    )
    h, w = kwargs["crop_size"]
    assert tuple(loaded.element_spec["video"].shape) == (4, h, w, 3)
    from_load = {int(ex["label"]): ex["video"] for ex in loaded.as_numpy_iterator()}
    assert from_source.keys() == from_load.keys() == set(range(NUM_VIDEOS))
    for label, clip in from_load.items():
        assert clip.shape == (4, h, w, 3)
        np.testing.assert_array_equal(from_source[label], clip)


def _run(ds):
    return [(clip, label) for clip, label in ds.as_numpy_iterator()]


def _by_label(batches):
    out = {}
    for clips, labels in batches:
        for clip, label in zip(clips, labels):
            out.setdefault(int(label), []).append(clip)
    return out


def test_clip_dataset_training(tiny_data_dir):
    kwargs = {
        "name": "sampling_test_videos",
        "data_dir": tiny_data_dir,
        "num_frames": 4,
        "batch_size": 2,
        "stride": (1, 2),
        "crop_size": (16, 16),
        "flip": True,
        "num_epochs": 2,
    }
    ds = input_pipeline.clip_dataset(seed=3, **kwargs)
    assert tuple(ds.element_spec[0].shape) == (2, 4, 16, 16, 3)
    assert ds.element_spec[0].dtype == tf.float32
    batches = _run(ds)
    assert len(batches) == 2 * NUM_VIDEOS // 2  # epochs are concatenated, then batched
    clips = np.concatenate([c for c, _ in batches])
    labels = np.concatenate([lab for _, lab in batches])
    assert 0.0 <= clips.min() and clips.max() <= 1.0
    # Each epoch sees every video once.
    assert sorted(labels[:NUM_VIDEOS]) == sorted(labels[NUM_VIDEOS:]) == list(range(NUM_VIDEOS))

    # Epoch e samples every video with the seed of epoch e (3 itself, then fold_in(3, e)).
    frames = _stored_frames(tiny_data_dir)
    decoder = ClipDecoder(4, stride=(1, 2), crop_size=(16, 16), flip=True)
    for position, (clip, label) in enumerate(zip(clips, labels)):
        epoch_seed = keys.epoch_seed(3, position // NUM_VIDEOS)
        expected = decoder.sample_np(frames[int(label)].numpy(), epoch_seed)
        np.testing.assert_array_equal(np.round(clip * 255).astype(np.uint8), expected)
    # So clips change between epochs ...
    first = {int(lab): c for lab, c in zip(labels[:NUM_VIDEOS], clips[:NUM_VIDEOS])}
    second = {int(lab): c for lab, c in zip(labels[NUM_VIDEOS:], clips[NUM_VIDEOS:])}
    assert any(not np.array_equal(first[i], second[i]) for i in first)
    # ... and a run replays exactly with the same seed, not with another one.
    again = _run(input_pipeline.clip_dataset(seed=3, **kwargs))
    for (c1, l1), (c2, l2) in zip(batches, again):
        np.testing.assert_array_equal(c1, c2)
        np.testing.assert_array_equal(l1, l2)
    other = _run(input_pipeline.clip_dataset(seed=4, **kwargs))
    assert any(not np.array_equal(a[0], b[0]) for a, b in zip(batches, other))


def test_clip_dataset_without_seed_differs_between_runs(tiny_data_dir):
    kwargs = {
        "name": "sampling_test_videos",
        "data_dir": tiny_data_dir,
        "num_frames": 4,
        "batch_size": 5,
        "crop_size": (16, 16),
        "num_epochs": 1,
        "dtype": tf.uint8,
    }
    a = _by_label(_run(input_pipeline.clip_dataset(**kwargs)))
    b = _by_label(_run(input_pipeline.clip_dataset(**kwargs)))
    assert a.keys() == b.keys() == set(range(NUM_VIDEOS))
    assert any(not np.array_equal(a[i][0], b[i][0]) for i in a)


def test_clip_dataset_errors_name_the_file(tiny_data_dir):
    ds = input_pipeline.clip_dataset(
        name="sampling_test_videos",
        data_dir=tiny_data_dir,
        num_frames=13,  # video_0 has 12 frames
        batch_size=1,
        training=False,
        short_video="error",
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="`video_0.mp4` has 12 frames"):
        _run(ds)


@pytest.mark.parametrize("short_side,size", [(None, (H, W)), (16, (16, 24))])
def test_clip_dataset_static_frame_size_without_crop(tiny_data_dir, short_side, size):
    ds = input_pipeline.clip_dataset(
        name="sampling_test_videos",
        data_dir=tiny_data_dir,
        num_frames=2,
        batch_size=2,
        num_epochs=1,
        dtype=tf.uint8,
        short_side=short_side,
        seed=1,
    )
    assert tuple(ds.element_spec[0].shape) == (2, 2, *size, 3)
    clips, labels = next(iter(ds))
    assert clips.shape == (2, 2, *size, 3)
    # Same clip as the NumPy path with the epoch's seed (half-size decode: exact).
    frames = _stored_frames(tiny_data_dir)[int(labels[0])].numpy()
    decoder = ClipDecoder(2, short_side=short_side)
    np.testing.assert_array_equal(clips[0], decoder.sample_np(frames, keys.epoch_seed(1, 0)))


def test_clip_dataset_evaluation(tiny_data_dir):
    ds = input_pipeline.clip_dataset(
        "train",
        name="sampling_test_videos",
        data_dir=tiny_data_dir,
        num_frames=4,
        batch_size=2,
        training=False,
        mode="uniform",
        num_clips=2,
        crop_size=(16, 16),
        dtype=tf.uint8,
    )
    assert tuple(ds.element_spec[0].shape) == (None, 2, 4, 16, 16, 3)
    batches = _run(ds)
    assert [len(labels) for _, labels in batches] == [2, 2, 1]  # remainder kept
    assert sorted(int(x) for _, labels in batches for x in labels) == list(range(NUM_VIDEOS))
    # Deterministic: a second pass gives the same clips.
    for (c1, _), (c2, _) in zip(batches, _run(ds)):
        np.testing.assert_array_equal(c1, c2)


@pytest.mark.parametrize(
    "kwargs,argument",
    [
        ({"batch_size": 0}, "batch_size"),
        ({"seed": 1.5}, "seed"),
        ({"num_epochs": 0}, "num_epochs"),
        ({"dtype": tf.int32}, "dtype"),
        ({"short_side": -1}, "short_side"),
        ({"clip_seed": 1}, "clip_seed"),
    ],
)
def test_clip_dataset_invalid_arguments(tiny_data_dir, kwargs, argument):
    args = {"name": "sampling_test_videos", "data_dir": tiny_data_dir, "num_frames": 2}
    with pytest.raises((ValueError, TypeError), match=argument):
        input_pipeline.clip_dataset(**{"batch_size": 2, **args, **kwargs})


def _source_clips(data_dir, epoch, **kwargs):
    """label -> the clip ClipSource gives in `epoch` (the TF-free reference)."""
    from video_tfrecords import ClipSource

    builder = tfds.builder("sampling_test_videos", data_dir=data_dir)
    source = ClipSource("train", dataset_dir=builder.data_dir, **kwargs)
    source.set_epoch(epoch)
    return {int(ex["label"]): ex["video"] for ex in (source[i] for i in range(len(source)))}


def _decoder_clips(data_dir, epoch, seed, **kwargs):
    """label -> the clip `tfds.load` + `ClipDecoder` gives with epoch `epoch`'s seed."""
    decoder = ClipDecoder(seed=keys.epoch_seed(seed, epoch), **kwargs)
    ds = tfds.load(
        "sampling_test_videos", split="train", data_dir=data_dir, decoders={"video": decoder}
    )
    return {int(ex["label"]): ex["video"] for ex in tfds.as_numpy(ds)}


def test_clip_dataset_equals_clip_source_and_clip_decoder_epoch_by_epoch(tiny_data_dir):
    clip = {"num_frames": 3, "stride": (1, 3), "crop_size": (16, 20), "flip": True}
    ds = input_pipeline.clip_dataset(
        name="sampling_test_videos",
        data_dir=tiny_data_dir,
        batch_size=1,
        num_epochs=2,
        seed=11,
        dtype=tf.uint8,
        **clip,
    )
    seen = [(int(labels[0]), clips[0]) for clips, labels in ds.as_numpy_iterator()]
    assert len(seen) == 2 * NUM_VIDEOS
    for epoch in range(2):
        expected = _source_clips(tiny_data_dir, epoch, seed=11, **clip)
        decoded = _decoder_clips(tiny_data_dir, epoch, 11, **clip)  # TFDS's own route
        for label, video in expected.items():
            np.testing.assert_array_equal(decoded[label], video)
        part = seen[epoch * NUM_VIDEOS : (epoch + 1) * NUM_VIDEOS]
        assert sorted(label for label, _ in part) == list(range(NUM_VIDEOS))
        for label, got in part:
            np.testing.assert_array_equal(got, expected[label])


def test_a_seeded_run_does_not_depend_on_parallel_calls(tiny_data_dir):
    def run(calls):
        ds = input_pipeline.clip_dataset(
            name="sampling_test_videos",
            data_dir=tiny_data_dir,
            num_frames=4,
            batch_size=2,
            num_epochs=3,
            seed=5,
            stride=(1, 2),
            crop_size=(16, 16),
            dtype=tf.uint8,
            num_parallel_calls=calls,
        )
        return _run(ds)

    reference = run(1)
    assert len(reference) == 3 * NUM_VIDEOS // 2
    for calls in (2, 4, tf.data.AUTOTUNE):
        for (c1, l1), (c2, l2) in zip(reference, run(calls), strict=True):
            np.testing.assert_array_equal(l1, l2)
            np.testing.assert_array_equal(c1, c2)


def test_epochs_are_shuffled_whole_and_differently(tiny_data_dir):
    ds = input_pipeline.clip_dataset(
        name="sampling_test_videos",
        data_dir=tiny_data_dir,
        num_frames=1,
        batch_size=NUM_VIDEOS,
        num_epochs=8,
        seed=0,
        dtype=tf.uint8,
    )
    orders = [tuple(labels.tolist()) for _, labels in _run(ds)]
    assert all(sorted(order) == list(range(NUM_VIDEOS)) for order in orders)
    assert len(set(orders)) > 1  # each epoch draws its own order


def test_input_context_gives_hosts_disjoint_examples(tiny_data_dir):
    labels = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline)
        ds = input_pipeline.clip_dataset(
            name="sampling_test_videos",
            data_dir=tiny_data_dir,
            num_frames=2,
            batch_size=1,
            training=False,
            input_context=context,
            dtype=tf.uint8,
        )
        labels.append({int(x) for _, batch in _run(ds) for x in batch})
    assert labels[0] and labels[1] and not labels[0] & labels[1]
    assert labels[0] | labels[1] == set(range(NUM_VIDEOS))


def test_a_corrupt_record_names_the_video_and_the_shard(tiny_data_dir, tmp_path):
    import shutil

    data_dir = tmp_path / "copy"
    shutil.copytree(tiny_data_dir, data_dir)
    builder = tfds.builder("sampling_test_videos", data_dir=str(data_dir))
    (shard,) = [p for p in builder.data_path.iterdir() if ".tfrecord-" in p.name]
    data = bytearray(shard.read_bytes())
    middle = data.index(b"\xff\xd8\xff", 64) + 300  # inside the first record's first frame
    data[middle] ^= 0x5A
    shard.write_bytes(bytes(data))
    ds = input_pipeline.clip_dataset(
        name="sampling_test_videos",
        data_dir=str(data_dir),
        num_frames=2,
        batch_size=1,
        training=False,
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="CRC32C") as error:
        _run(ds)
    message = str(error.value)
    assert str(shard) in message, message
    assert re.search(r"record \d+ .* of video `video_\d\.mp4` is corrupt", message), message


def test_a_script_ending_mid_epoch_exits(tiny_data_dir, tmp_path):
    # tf.data's threads call into Python; at exit they must not be caught mid-call.
    import subprocess
    import sys

    script = tmp_path / "one_batch.py"
    script.write_text(
        "import tensorflow as tf\n"
        "from video_tfrecords import input_pipeline\n"
        f"ds = input_pipeline.clip_dataset(name='sampling_test_videos', data_dir={tiny_data_dir!r},"
        " num_frames=4, batch_size=1, num_epochs=None, seed=1)\n"
        "it = iter(ds)\n"
        "next(it)\n"
        "print('read', flush=True)\n"
    )
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "read" in done.stdout


def test_a_new_pipeline_reuses_the_arrays_of_the_one_before(tiny_data_dir):
    """Evaluation every epoch makes a new pipeline: its batches land in the same memory."""
    seen = []
    for _ in range(2):
        ds = input_pipeline.clip_dataset(
            "train", name="sampling_test_videos", data_dir=tiny_data_dir, num_frames=2,
            batch_size=2, training=False,
            dtype=tf.uint8, num_parallel_calls=1,
        )  # fmt: skip
        for clips, _ in ds:
            del clips
        seen.append(buffers.SHARED.size)
    assert 0 < seen[0] == seen[1]


def test_clip_dataset_test_views_and_recipes_have_static_shapes_and_the_decoders_clips(
    tiny_data_dir,
):
    recipe = {
        "mode": "segments",
        "num_clips": 2,
        "short_side": (16, 20),
        "crop_size": (12, 12),
        "num_crops": 3,
    }
    ds = input_pipeline.clip_dataset(
        name="sampling_test_videos",
        data_dir=tiny_data_dir,
        num_frames=4,
        batch_size=2,
        training=False,
        seed=5,
        dtype=tf.uint8,
        **recipe,
    )
    assert tuple(ds.element_spec[0].shape) == (None, 6, 4, 12, 12, 3)  # views clip-major
    frames = _stored_frames(tiny_data_dir)
    decoder = ClipDecoder(4, **recipe)
    seen = 0
    for clips, labels in _run(ds):
        for clip, label in zip(clips, labels):
            expected = decoder.sample_np(frames[int(label)].numpy(), keys.epoch_seed(5, 0))
            np.testing.assert_array_equal(clip, expected)
            seen += 1
    assert seen == NUM_VIDEOS


def test_clip_dataset_on_a_data_dir_without_the_dataset_says_how_to_build_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"No prepared video_tfrecords dataset in .*tfds b"):
        input_pipeline.clip_dataset(
            "train", num_frames=4, batch_size=2, data_dir=str(tmp_path), crop_size=(8, 8)
        )
    assert list(tmp_path.iterdir()) == []  # nothing built, no folder made


def test_tfds_load_without_a_manual_dir_names_the_folder_it_wanted(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        tfds.load("video_tfrecords", split="train", data_dir=str(tmp_path))
    text = str(error.value)
    assert f"Its manual dir {tmp_path}/downloads/manual does not exist" in text
    assert "train.txt" in text and "--manual_dir=DIR" in text
