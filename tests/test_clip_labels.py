"""A clip's labels and captions on every reader (issue 43): multi-hot vectors of a multi-label
dataset, only the labels seen during the clip (labels="clip"), a caption per clip.

The reference is the construction: each frame shows its index in pixels
(`videos.flash_frame`), so a clip's frames say when the clip runs (index / 25 s), and the
manifest says which segments and captions overlap that; the readers must agree with it and,
for one seed, with each other (ClipSource, ClipDecoder.decode_features, clip_dataset).
"""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import videos
from video_tfrecords import ClipDecoder, ClipSource, EncodedFrames, VideoConfig, clip_dataset
from video_tfrecords.video_tfrecords_dataset_builder import Builder  # noqa: F401 (registers it)

FPS = 25
CLASSES = ["close", "open", "walk"]  # labels.txt order
SEGMENTS = [("open", 0.4, 1.6), ("walk", 1.2, 3.0), ("close", 4.0, 5.2)]
CAPTIONS = [("a door opens", 0.0, 1.6), ("someone walks in — 歩く", 1.2, 3.2),
            ("the door closes", 3.8, 6.0)]  # fmt: skip
CLIP = {"num_frames": 4, "stride": 3, "crop_size": (64, 96), "crop": "center"}  # 0.48 s


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("manual")
    frames = np.stack([videos.flash_frame(i, False) for i in range(150)])  # 6 s
    videos.write(folder / "v.mp4", frames, fps=FPS)
    lines = [
        {
            "path": "v.mp4",
            "labels": [],
            "segments": [{"label": n, "start": s, "end": e} for n, s, e in SEGMENTS],
            "captions": [{"text": t, "start": s, "end": e} for t, s, e in CAPTIONS],
        },
        {"path": "v.mp4", "labels": ["walk"], "start": 2.0, "end": 4.0, "captions": ["untimed"]},
    ]
    (folder / "labels.txt").write_text("\n".join(CLASSES) + "\n")
    (folder / "train.jsonl").write_text(
        "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8"
    )
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(tmp_path_factory.mktemp("data")),
        config=VideoConfig(name="labelled", num_workers=1, short_side=None),
    )  # fmt: skip
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(folder))
    )
    return builder.data_dir


@pytest.fixture(scope="module")
def data_dir_root(dataset_dir):
    return str(dataset_dir).split("/video_tfrecords/labelled/")[0]


def clip_span(clip: np.ndarray) -> tuple[float, float]:
    """When the clip runs, from the indices its frames show: first to one frame past the last."""
    shown = [videos.frame_index(frame) for frame in clip]
    return min(shown) / FPS, (max(shown) + 1) / FPS


def overlapping(items, span):
    return [item for item in items if item[1] < span[1] and item[2] > span[0]]


@pytest.mark.parametrize("seed", [0, 7, 123])
def test_clip_labels_are_the_segments_seen_during_the_clip(dataset_dir, seed):
    source = ClipSource(dataset_dir=dataset_dir, seed=seed, labels="clip", **CLIP)
    checked = 0
    for example in source:
        span = clip_span(example["video"])
        if example["span_start"] > 0:  # the span: "walk" without a segment holds throughout
            wanted = {"walk"}
        else:
            wanted = {name for name, _, _ in overlapping(SEGMENTS, span)}
        got = {CLASSES[i] for i in np.flatnonzero(example["labels"])}
        assert got == wanted, (span, got)
        assert example["labels"].dtype == np.float32 and example["labels"].shape == (3,)
        checked += 1
    assert checked == 2


def test_video_labels_are_every_label_of_the_example(dataset_dir):
    source = ClipSource(dataset_dir=dataset_dir, seed=1, **CLIP)
    whole, span = sorted(source, key=lambda e: e["span_start"])
    np.testing.assert_array_equal(whole["labels"], [1, 1, 1])
    np.testing.assert_array_equal(span["labels"], [0, 0, 1])


@pytest.mark.parametrize("seed", [3, 4, 5, 6])
def test_a_random_caption_overlaps_the_clip_and_is_stored_exactly(dataset_dir, seed):
    source = ClipSource(dataset_dir=dataset_dir, seed=seed, **CLIP)
    for example in source:
        span = clip_span(example["video"])
        seen = [t for t, _, _ in overlapping(CAPTIONS, span)]
        if example["span_start"] > 0:
            assert example["caption"] == "untimed"
        else:
            assert example["caption"] in seen if seen else example["caption"] == ""
    again = ClipSource(dataset_dir=dataset_dir, seed=seed, **CLIP)
    assert [e["caption"] for e in again] == [e["caption"] for e in source]


def test_evaluation_views_get_every_overlapping_caption(dataset_dir):
    source = ClipSource(dataset_dir=dataset_dir, mode="uniform", num_clips=3, **CLIP)
    whole = min(source, key=lambda e: e["span_start"])
    assert len(whole["captions"]) == 3
    for view, captions in zip(whole["video"], whole["captions"]):
        assert captions == [t for t, _, _ in overlapping(CAPTIONS, clip_span(view))]


def test_random_captions_over_many_seeds_draw_each_overlapping_one(dataset_dir):
    drawn = set()
    for seed in range(40):
        (whole,) = [e for e in ClipSource(dataset_dir=dataset_dir, seed=seed, **CLIP)
                    if e["span_start"] == 0]  # fmt: skip
        seen = [t for t, _, _ in overlapping(CAPTIONS, clip_span(whole["video"]))]
        assert whole["caption"] in seen if seen else whole["caption"] == ""  # none: ""
        drawn.add(whole["caption"])
    assert drawn - {""} == {t for t, _, _ in CAPTIONS}


@pytest.mark.parametrize(
    "args",
    [{"labels": "clip", "captions": "random"}, {"labels": "video", "captions": "all"},
     {"labels": "clip", "captions": "all", "mode": "uniform", "num_clips": 2},
     {"labels": "clip", "captions": "random", "segment": True}],
)  # fmt: skip
def test_the_three_readers_give_equal_seeded_results(dataset_dir, data_dir_root, args):
    seed, args = 11, {"mode": "random", **args}  # clip_dataset's evaluation default: "center"
    source = ClipSource(dataset_dir=dataset_dir, seed=seed, **CLIP, **args)
    expected = list(source)
    decoder = ClipDecoder(seed=seed, **CLIP, **args)
    builder = tfds.builder_from_directory(dataset_dir)
    num_classes = builder.info.features["labels"].feature.num_classes
    ds = builder.as_dataset("train", decoders={"video": EncodedFrames()}, shuffle_files=False)
    ds = ds.map(lambda e: decoder.decode_features(e, num_classes=num_classes))
    through_tf = sorted(tfds.as_numpy(ds), key=lambda e: e["span_start"])
    expected.sort(key=lambda e: e["span_start"])
    batches = clip_dataset(
        "train", training=False, batch_size=2, seed=seed, data_dir=data_dir_root,
        builder_kwargs={"config": "labelled"}, dtype=tf.uint8, **CLIP, **args,
    )  # fmt: skip
    ((inputs, labels),) = list(tfds.as_numpy(batches))  # in the source's order
    order = np.argsort([e["span_start"] for e in source])
    inputs = {name: values[order] for name, values in inputs.items()}
    labels = labels[order]
    caption = "caption" if "caption" in expected[0] else "captions"
    for k, example in enumerate(expected):
        tf_example = through_tf[k]
        assert _shown(tf_example["video"]) == _shown(example["video"])  # the same frames
        assert _shown(inputs["video"][k]) == _shown(example["video"])
        np.testing.assert_array_equal(tf_example["labels"], example["labels"])
        np.testing.assert_array_equal(labels[k], example["labels"])
        assert _strings(tf_example[caption]) == _strings(example[caption])
        assert _strings(inputs[caption][k]) == _strings(example[caption])


def _strings(value):
    """Captions as nested lists of str, padding ("") dropped."""
    if isinstance(value, (bytes, str)):
        return value.decode("utf-8") if isinstance(value, bytes) else value
    items = [_strings(v) for v in value]
    return [v for v in items if v != ""]


def _shown(clips: np.ndarray) -> list[int]:
    """The frame indices a clip (or its views) shows."""
    return [videos.frame_index(frame) for frame in clips.reshape(-1, *clips.shape[-3:])]


def test_segment_clips_are_sampled_within_a_segment_drawn_at_random(dataset_dir):
    drawn = set()
    for seed in range(30):
        source = ClipSource(dataset_dir=dataset_dir, seed=seed, segment=True, labels="clip", **CLIP)
        whole, span = sorted(source, key=lambda e: e["span_start"])
        shown = [videos.frame_index(frame) / FPS for frame in whole["video"]]
        inside = [(n, s, e) for n, s, e in SEGMENTS if all(s <= t < e for t in shown)]
        assert inside, (seed, shown)  # (looped frames stay inside too)
        drawn.update(name for name, _, _ in inside)
        got = {CLASSES[i] for i in np.flatnonzero(whole["labels"])}
        assert {name for name, _, _ in inside} <= got
        assert {CLASSES[i] for i in np.flatnonzero(span["labels"])} == {"walk"}  # no segments
    assert drawn == {name for name, _, _ in SEGMENTS}


def test_plan_draws_the_segment_clip_it_gives(dataset_dir):
    source = ClipSource(dataset_dir=dataset_dir, seed=5, segment=True, **CLIP)
    for index in range(len(source)):
        shown = [videos.frame_index(frame) for frame in source[index]["video"]]
        start = round(source[index]["span_start"] * FPS)  # the span's frame 0
        assert [start + i for i in source.plan(index)["indices"][0]] == shown


def test_a_seeded_read_prints_no_warning(dataset_dir):
    """uint64 draws wrap by design: a seeded read of captions and segments warns of nothing (a
    fresh interpreter, as each DataLoader worker is: NumPy warns once per place and process)."""
    code = (
        "import sys, warnings\n"
        "warnings.simplefilter('error')\n"
        "from video_tfrecords import ClipSource\n"
        "for extra in ({'segment': True}, {'captions': 'random', 'num_clips': 2, 'mode': 'uniform'}):\n"
        "    source = ClipSource(dataset_dir=sys.argv[1], seed=3, labels='clip', **extra,\n"
        "                        num_frames=4, stride=3, crop_size=(64, 96))\n"
        "    [source[i] for i in range(len(source))]\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(dataset_dir)], capture_output=True, text=True
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
