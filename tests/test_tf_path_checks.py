"""The TF path refuses the records ClipSource refuses: audio that stops before the frames' last
timestamp, a label (or one of several) outside the dataset's classes, each error naming the
video.

A small dataset with audio and several labels is built from videos made here; one of its
records is forged (`hostile.rewritten`: every checksum recomputed, so only the value under
test is wrong) and read on ClipSource and on `tfds` + `ClipDecoder.decode_features` in a
tf.data graph. The reference for "short" is the construction: the frames of `short.mp4` are
timed i / 25 s, so its last is at 23 / 25 s, 14,720 samples at 16 kHz after its first; the
readers allow float32 times 2 samples, so 14,718 samples cover them and 14,717 do not.
"""

import json
import os

import hostile
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import videos
from video_tfrecords import ClipDecoder, ClipSource, EncodedFrames, VideoConfig
from video_tfrecords.util.errors import CorruptRecordError
from video_tfrecords.video_tfrecords_dataset_builder import Builder  # noqa: F401 (registers it)

FPS, RATE, FRAMES = 25, 16000, 24
CLASSES = ["x", "y", "z"]  # labels.txt order
SPAN = round((FRAMES - 1) / FPS * RATE)  # 14,720 samples from the first frame to the last
CLIP = {"num_frames": 4, "stride": 2, "audio": True, "seed": 5, "crop_size": (32, 32)}


def built(tmp_path_factory, name: str, manual) -> tuple:
    """(its folder, its records) of the dataset built from `manual` with audio at RATE."""
    (manual / "labels.txt").write_text("\n".join(CLASSES) + "\n")
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(tmp_path_factory.mktemp(f"data_{name}")),
        config=VideoConfig(name=name, num_workers=1, short_side=None, audio_rate=RATE),
    )  # fmt: skip
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual))
    )
    assert builder.info.features["label"].num_classes == len(CLASSES)
    folder = os.fspath(builder.data_path)
    (shard,) = hostile.shards(folder)
    return folder, hostile.records(shard)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """(its folder, its records) of two videos with audio: `short.mp4` (label "y") and
    `long.mp4` (labels "x" and "z")."""
    manual = tmp_path_factory.mktemp("manual")
    videos.flashes_and_tones(manual / "short.mp4", num_frames=FRAMES, flashes=[3], audio_start=0)
    videos.flashes_and_tones(manual / "long.mp4", num_frames=40, flashes=[5], audio_start=0)
    lines = [{"path": "short.mp4", "label": "y"}, {"path": "long.mp4", "labels": ["x", "z"]}]
    (manual / "train.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return built(tmp_path_factory, "checks", manual)


def filename(record: bytes) -> str:
    return hostile.Example.FromString(record).features.feature["filename"].bytes_list.value[0]


def forged(dataset, tmp_path, edit, video=b"short.mp4") -> str:
    """A copy of the dataset whose record of `video` is edited by `edit(feature_map)`."""
    folder, records = dataset
    edited = [hostile.rewritten(r, edit) if filename(r) == video else r for r in records]
    return hostile.copy_with(folder, tmp_path / "forged", {0: edited})


def through_source(folder, clip=CLIP) -> dict:
    """filename -> example, read by ClipSource."""
    return {e["filename"]: e for e in ClipSource("train", dataset_dir=folder, **clip)}


def through_tf(folder, clip=CLIP) -> dict:
    """filename -> example, read by tfds and ClipDecoder.decode_features in a tf.data graph."""
    decoder = ClipDecoder(**clip)
    builder = tfds.builder_from_directory(folder)
    ds = builder.as_dataset("train", decoders={"video": EncodedFrames()}, shuffle_files=False)
    ds = ds.map(lambda e: decoder.decode_features(e, num_classes=len(CLASSES)))
    return {e["filename"].decode(): e for e in tfds.as_numpy(ds)}


def audio_cut_to(samples: int):
    def edit(feature):
        audio = feature["audio"].bytes_list.value
        assert len(audio[0]) == 2 * FRAMES * RATE // FPS  # as built: 0.96 s of int16 mono
        audio[:] = [audio[0][: 2 * samples]]

    return edit


def label_set_to(value: int):
    def edit(feature):
        del feature["label"].int64_list.value[:]
        feature["label"].int64_list.value.append(value)

    return edit


def test_the_frames_are_timed_as_the_reference_says(dataset):
    _, records = dataset
    (record,) = [r for r in records if filename(r) == b"short.mp4"]
    feature = hostile.Example.FromString(record).features.feature
    times = np.asarray(feature["timestamps"].float_list.value)
    np.testing.assert_allclose(times, np.arange(FRAMES) / FPS, atol=1e-6)
    assert feature["audio_rate"].int64_list.value == [RATE]


def refused_on_both_paths(folder, source_words: str, tf_words: str) -> None:
    """ClipSource raises CorruptRecordError, and the TF path InvalidArgumentError, each naming
    the video `short.mp4` with their words."""
    with pytest.raises(CorruptRecordError, match=rf"`short.mp4`.*{source_words}"):
        through_source(folder)
    words = rf"CorruptRecordError: Video `short.mp4` has {tf_words}"
    with pytest.raises(tf.errors.InvalidArgumentError, match=words):
        through_tf(folder)


@pytest.mark.parametrize("samples", [8000, SPAN - 3])
def test_audio_short_of_the_frames_is_refused_on_both_paths(dataset, tmp_path, samples):
    folder = forged(dataset, tmp_path, audio_cut_to(samples))
    refused_on_both_paths(
        folder, f"its audio is {samples} samples", f"{samples} audio samples at {RATE}/s"
    )


def test_audio_that_covers_the_frames_within_the_slack_reads_alike(dataset, tmp_path):
    folder = forged(dataset, tmp_path, audio_cut_to(SPAN - 2))
    expected, found = through_source(folder), through_tf(folder)
    np.testing.assert_array_equal(found["short.mp4"]["audio"], expected["short.mp4"]["audio"])


def test_the_numpy_sample_of_clip_decoder_refuses_short_audio_too(dataset):
    _, records = dataset
    (record,) = [r for r in records if filename(r) == b"short.mp4"]
    feature = hostile.Example.FromString(record).features.feature
    frames = list(feature["video"].bytes_list.value)
    times = np.asarray(feature["timestamps"].float_list.value, np.float32)
    audio = np.zeros((SPAN - 3, 1), np.int16)
    decoder = ClipDecoder(**CLIP)
    with pytest.raises(CorruptRecordError, match=r"Video `short.mp4` has 14717 audio samples"):
        decoder.sample_np(frames, name="short.mp4", timestamps=times, audio=audio,
                          audio_rate=RATE)  # fmt: skip


@pytest.mark.parametrize("label", [len(CLASSES), -2])
def test_a_label_outside_the_classes_is_refused_on_both_paths(dataset, tmp_path, label):
    folder = forged(dataset, tmp_path, label_set_to(label))
    refused_on_both_paths(
        folder,
        f"its label is {label}, not one of the dataset's {len(CLASSES)} classes",
        f"label {label}, not one of its {len(CLASSES)} classes",
    )


def test_several_labels_outside_the_classes_are_refused_naming_the_video(dataset, tmp_path):
    def edit(feature):
        feature["labels"].int64_list.value[:] = [0, len(CLASSES)]

    folder = forged(dataset, tmp_path, edit, b"long.mp4")
    words = r"The example's labels name class 3, not one of its 3 classes\. \(video `long.mp4`"
    with pytest.raises(CorruptRecordError, match=words):
        through_source(folder)
    with pytest.raises(tf.errors.InvalidArgumentError, match=words):
        through_tf(folder)


def test_segments_without_their_ends_are_refused_naming_the_video(dataset, tmp_path):
    def edit(feature):
        feature["label_segments/start"].float_list.value[:] = [0.1]  # and no end

    folder = forged(dataset, tmp_path, edit, b"long.mp4")
    clip = {"num_frames": 2, "seed": 5, "segment": True, "labels": "clip"}
    words = r"label segments have 1 items but 1 starts and 0 ends\. \(video `long.mp4`"
    with pytest.raises(CorruptRecordError, match=words):
        through_source(folder, clip)
    with pytest.raises(tf.errors.InvalidArgumentError, match=words):
        through_tf(folder, clip)


def test_a_record_without_a_label_reads_alike(dataset, tmp_path):
    folder = forged(dataset, tmp_path, label_set_to(-1))  # a JSON Lines line without one
    expected, found = through_source(folder), through_tf(folder)
    assert expected["short.mp4"]["label"] == found["short.mp4"]["label"] == -1


def test_an_unforged_dataset_reads_identically_on_both_paths(dataset):
    folder, _ = dataset
    expected, found = through_source(folder), through_tf(folder)
    assert sorted(expected) == sorted(found) == ["long.mp4", "short.mp4"]
    for name, example in expected.items():
        for key in ("video", "audio", "label", "labels"):
            np.testing.assert_array_equal(found[name][key], example[key], err_msg=key)


@pytest.fixture(scope="module")
def unannotated(tmp_path_factory):
    """(its folder, its records) of `short.mp4` with audio, from a text manifest: no labels,
    segments or captions stored."""
    manual = tmp_path_factory.mktemp("manual_text")
    videos.flashes_and_tones(manual / "short.mp4", num_frames=FRAMES, flashes=[3], audio_start=0)
    (manual / "train.txt").write_text("short.mp4 y\n")
    return built(tmp_path_factory, "checks_text", manual)


def timestamps_set_to(edit_times):
    def edit(feature):
        times = list(feature["timestamps"].float_list.value)
        feature["timestamps"].float_list.value[:] = edit_times(times)

    return edit


@pytest.mark.parametrize(
    "edit_times, source_words, tf_words",
    [
        (lambda t: t[:5] + [float("nan")] + t[6:], "its timestamps are not times",
         "timestamps that are not times"),
        (lambda t: t[:5] + [t[7]] + t[6:], "its timestamps are not times",
         "timestamps that are not times"),
        (lambda t: t[:-1], f"it has {FRAMES} frames but {FRAMES - 1} timestamps",
         f"{FRAMES} frames but {FRAMES - 1} timestamps"),
    ],
    ids=["nan", "out_of_order", "one_short"],
)  # fmt: skip
def test_timestamps_that_time_the_audio_are_checked_on_both_paths_without_fps(
    unannotated, tmp_path, edit_times, source_words, tf_words
):
    # With `audio` and no `fps` the frames' times only place the audio's window: a clip drawn
    # from times that are not times must be refused there too, not cut from anywhere. (A
    # dataset with labels or captions has them checked with those: this one has neither.)
    folder = forged(unannotated, tmp_path, timestamps_set_to(edit_times))
    refused_on_both_paths(folder, source_words, tf_words)
