"""Builds from JSON Lines manifests (issue 43): spans, several labels with their segments and
captions stored as features; builds from text manifests keep the features they had. Every line
ends as examples or a skip record of its own (issue 47), on the local engine and on Spark."""

import contextlib
import io
import json

import numpy as np
import pytest
import tensorflow_datasets as tfds

import videos
from video_tfrecords import VideoConfig
from video_tfrecords.records import schema
from video_tfrecords.video_tfrecords_dataset_builder import Builder  # noqa: F401 (registers it)

FPS = 25
CAPTION = "Ein Mann öffnet die Tür 🚪, naïve\u0301 — 開ける"  # 4-byte, combining, CJK


def build(manual_dir, data_dir, **config):
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(data_dir),
        config=VideoConfig(name="annotated", num_workers=1, short_side=None, **config),
    )  # fmt: skip
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual_dir))
    )
    return builder


def by_key(builder, split):
    return {
        (e["filename"].decode(), round(float(e["span_start"]), 3), int(e["segment"])): e
        for e in tfds.as_numpy(builder.as_dataset(split))
    }


@pytest.fixture(scope="module")
def manual_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("manual")
    frames = np.stack([videos.flash_frame(i, False) for i in range(150)])  # 6 s
    videos.write(folder / "long.mp4", frames, fps=FPS, options={"g": "30"})
    videos.write(folder / "short.mp4", frames[:20], fps=FPS)
    videos.write(folder / "other.mp4", frames[:20], fps=FPS)  # in no other split
    lines = [
        {
            "path": "long.mp4",
            "labels": ["open"],
            "segments": [
                {"label": "close", "start": 3.0, "end": 5.0},
                {"label": "open", "start": 0.5, "end": 2.0},
            ],
            "captions": [CAPTION, {"text": "then closes it", "start": 3, "end": 5.5}],
        },
        {"path": "long.mp4", "label": "close", "start": 3.3, "end": 4.3},
        {"path": "short.mp4", "label": "open", "start": 0.2, "end": 9},  # past its end
        {"path": "short.mp4", "label": "close", "start": 5, "end": 7},  # after it: no frame
        {"path": "gone.mp4", "label": "open", "start": 1, "end": 2},  # no such file
        {"path": "gone.mp4", "label": "close", "start": 3, "end": 4},
    ]
    (folder / "train.jsonl").write_text(
        "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8"
    )
    (folder / "test.txt").write_text("other.mp4 close\n")
    return folder


@pytest.fixture(scope="module")
def annotated_build(manual_dir, tmp_path_factory):
    """The build, and what it printed (its summary)."""
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        builder = build(manual_dir, tmp_path_factory.mktemp("data"))
    return builder, printed.getvalue()


@pytest.fixture(scope="module")
def annotated(annotated_build):
    return annotated_build[0]


def assert_every_line_accounted_for(builder, manual_dir, summary: str):
    """Each line of train.jsonl gave examples (their filename and span_start name it) or a
    skip record naming its own FILE:LINE; none both, none neither; the summary says so."""
    written = {(e[0], e[1]) for e in by_key(builder, "train")}
    skipped = builder.info.metadata["skipped"]
    manifest = manual_dir / "train.jsonl"
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    gave = {
        n for n, line in enumerate(lines, 1) if (line["path"], line.get("start", 0.0)) in written
    }
    assert sorted(r["where"] for r in skipped) == [f"{manifest}:{n}" for n in (4, 5, 6)]
    assert len(gave) + len(skipped) == len(lines) and not gave & {4, 5, 6}
    reasons = {r["where"].rpartition(":")[2]: r["reason"] for r in skipped}
    assert reasons["4"] == "span [5 s, 7 s) has no frame: the video ends at 0.800 s"
    assert reasons["5"] == reasons["6"] == "file not found"
    assert (
        "  train: 3 examples written from 3 of 6 lines (3 videos); 3 skipped, 1 kept with a note"
        in summary
    )


def test_every_line_gives_examples_or_a_skip_record_of_its_own(annotated_build, manual_dir):
    builder, printed = annotated_build
    assert_every_line_accounted_for(builder, manual_dir, printed)


def test_the_features_store_what_the_manifests_annotate(annotated):
    features = annotated.info.features
    for name in (schema.SPAN_START, schema.SPAN_END, schema.LABELS, schema.LABEL_SEGMENTS,
                 schema.CAPTIONS):  # fmt: skip
        assert name in features, name
    assert features["label"].names == ["close", "open"]
    assert features[schema.LABELS].feature.names == ["close", "open"]
    assert str(annotated.info.version) == schema.DATASET_VERSION


def test_a_whole_video_keeps_its_labels_segments_and_captions(annotated):
    whole = by_key(annotated, "train")[("long.mp4", 0.0, 0)]
    assert whole["label"] == -1  # no "label" key: several labels instead
    assert whole["labels"].tolist() == [0, 1]
    segments = whole["label_segments"]
    assert segments["label"].tolist() == [1, 0]  # in time order
    np.testing.assert_allclose(segments["start"], [0.5, 3.0])
    np.testing.assert_allclose(segments["end"], [2.0, 5.0])
    captions = whole["captions"]
    assert captions["text"].tolist() == [CAPTION.encode("utf-8"), b"then closes it"]
    np.testing.assert_allclose(captions["start"], [0.0, 3.0])  # untimed: the whole span
    np.testing.assert_allclose(captions["end"], [6.0, 5.5], atol=1e-6)
    assert whole["span_end"] == pytest.approx(6.0) and len(whole["video"]) == 150


def test_a_span_stores_its_frames_label_and_what_overlaps_it(annotated):
    span = by_key(annotated, "train")[("long.mp4", 3.3, 0)]
    assert span["label"] == 0 and span["labels"].tolist() == [0]
    stored = [videos.frame_index(f) for f in span["video"]]
    assert stored == list(range(83, 108))  # 3.32 s to 4.28 s: first at or after 3.3 s
    np.testing.assert_allclose(span["timestamps"], np.arange(83, 108) / FPS, atol=1e-5)
    assert (span["span_start"], span["span_end"]) == (pytest.approx(3.3), pytest.approx(4.3))
    assert span["label_segments"]["label"].size == 0 and span["captions"]["text"].size == 0


def test_a_span_past_the_end_is_clipped_with_a_note(annotated):
    clipped = by_key(annotated, "train")[("short.mp4", 0.2, 0)]
    assert len(clipped["video"]) == 15 and clipped["span_end"] == pytest.approx(0.8)
    (note,) = annotated.info.metadata["notes"]
    assert note["reason"] == "span [0.2 s, 9 s) ends past the video's end (0.800 s): clipped"
    assert note["where"].endswith("train.jsonl:3") and note["path"] == "short.mp4"


def test_a_text_split_beside_gets_empty_annotations(annotated):
    (example,) = by_key(annotated, "test").values()
    assert example["label"] == 0 and example["labels"].tolist() == [0]
    assert example["captions"]["text"].size == 0 and example["span_start"] == 0


def test_reading_back_restores_the_annotated_features(annotated):
    again = tfds.builder("video_tfrecords", data_dir=annotated.data_dir_root, config="annotated")
    assert schema.CAPTIONS in again.info.features
    assert again.info.features[schema.LABELS].feature.names == ["close", "open"]
    (example,) = tfds.as_numpy(again.as_dataset("test"))
    assert example["labels"].tolist() == [0]


def test_a_build_from_text_manifests_keeps_the_features_it_had(tmp_path):
    folder = tmp_path / "manual"
    folder.mkdir()
    videos.write(folder / "a.mp4", np.stack([videos.flash_frame(i, False) for i in range(5)]))
    (folder / "train.txt").write_text("a.mp4 x\n")
    (folder / "test.jsonl").write_text(json.dumps({"path": "a.mp4", "label": "x"}) + "\n")
    builder = build(folder, tmp_path / "data")
    before = set(schema.features(builder.builder_config).keys())  # the features of 2.3.0
    assert set(builder.info.features.keys()) == before
    assert not before & {schema.LABELS, schema.CAPTIONS, schema.SPAN_START}
    (example,) = tfds.as_numpy(builder.as_dataset("test"))
    assert example["label"] == 0 and len(example["video"]) == 5


def test_a_spark_build_stores_the_same_annotations(manual_dir, annotated, tmp_path):
    from video_tfrecords import spark_build

    session = spark_build.session("local[2]")
    try:
        config = VideoConfig(name="annotated", num_workers=1, short_side=None)
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            spark_build.build(session, str(manual_dir), str(tmp_path / "spark"), config)
    finally:
        session.stop()
    spark = tfds.builder("video_tfrecords/annotated", data_dir=str(tmp_path / "spark"))
    assert spark.info.features[schema.LABELS].feature.names == ["close", "open"]
    assert_every_line_accounted_for(spark, manual_dir, printed.getvalue())
    for kind in ("skipped", "notes"):
        assert spark.info.metadata[kind] == annotated.info.metadata[kind]
    for split in ("train", "test"):
        got, want = by_key(spark, split), by_key(annotated, split)
        assert sorted(got) == sorted(want)
        for key, example in want.items():
            for name in ("labels", "span_start", "span_end", "timestamps"):
                np.testing.assert_array_equal(got[key][name], example[name])
            assert got[key]["captions"]["text"].tolist() == example["captions"]["text"].tolist()
