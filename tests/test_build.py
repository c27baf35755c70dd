"""Builds through the Python API: labels, configs, segments, skip records, strict mode."""

import json
import os
import shutil

import numpy as np
import pytest
import tensorflow_datasets as tfds

import synthetic
from conftest import opencv_frames, psnr
from video_tfrecords import VideoConfig
from video_tfrecords.ingest import span_writer
from video_tfrecords.video_tfrecords_dataset_builder import VideoBuildError


def build(manual_dir, data_dir, **config):
    config.setdefault("num_workers", 1)
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(data_dir), config=VideoConfig(name="test", **config)
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual_dir))
    )
    return builder


def examples(builder, split):
    return sorted(tfds.as_numpy(builder.as_dataset(split)), key=lambda e: e["filename"])


@pytest.fixture
def manual_dir(tmp_path):
    folder = tmp_path / "manual"
    for i, (frames, height, width) in enumerate([(9, 48, 64), (5, 96, 64), (1, 32, 32)]):
        synthetic.write_video(
            str(folder / f"v{i}.mp4"), synthetic.moving_frames(frames, height, width, i)
        )
    (folder / "train.txt").write_text("v0.mp4 walking\nv1.mp4 running\n")
    (folder / "test.txt").write_text("v2.mp4 walking\n")
    return folder


def test_build_stores_every_frame_with_labels_and_metadata(manual_dir, tmp_path):
    builder = build(manual_dir, tmp_path / "data", short_side=None)
    assert builder.info.features["label"].names == ["running", "walking"]
    assert builder.info.splits["train"].num_examples == 2
    v0, v1 = examples(builder, "train")
    assert v0["filename"] == b"v0.mp4" and v0["label"] == 1 and v1["label"] == 0
    assert v0["video"].shape == (9, 48, 64, 3) and v1["video"].shape == (5, 96, 64, 3)
    assert (v1["source_height"], v1["source_width"], v1["source_num_frames"]) == (96, 64, 5)
    assert v0["fps"] == pytest.approx(25.0)
    source = opencv_frames(manual_dir / "v0.mp4")
    assert min(psnr(a, b) for a, b in zip(source, v0["video"])) >= 30
    (one_frame,) = examples(builder, "test")
    assert one_frame["video"].shape == (1, 32, 32, 3)
    assert builder.info.metadata["skipped"] == []


def test_short_side_and_frame_selection_configs(manual_dir, tmp_path):
    builder = build(manual_dir, tmp_path / "data", short_side=32, max_frames=4)
    v0, v1 = examples(builder, "train")
    assert v0["video"].shape == (4, 32, 43, 3)  # 64 * 32 / 48 = 42.7
    assert v1["video"].shape == (4, 48, 32, 3)
    assert v0["source_num_frames"] == 9


def test_fixed_size_gives_a_static_frame_shape(manual_dir, tmp_path):
    builder = build(manual_dir, tmp_path / "data", size=(24, 40))
    assert builder.info.features["video"].shape == (None, 24, 40, 3)
    assert all(e["video"].shape[1:] == (24, 40, 3) for e in examples(builder, "train"))


def test_segments_split_long_videos(manual_dir, tmp_path):
    builder = build(manual_dir, tmp_path / "data", short_side=None, segment_frames=4)
    v0 = [e for e in examples(builder, "train") if e["filename"] == b"v0.mp4"]
    v0.sort(key=lambda e: e["segment"])
    assert [(e["segment"], e["start_frame"], len(e["video"])) for e in v0] == [
        (0, 0, 4),
        (1, 4, 4),
        (2, 8, 1),
    ]
    whole = np.concatenate([e["video"] for e in v0])
    assert min(psnr(a, b) for a, b in zip(opencv_frames(manual_dir / "v0.mp4"), whole)) >= 30


def test_parallel_workers_write_the_same_examples(manual_dir, tmp_path):
    one = examples(build(manual_dir, tmp_path / "one", num_workers=1), "train")
    two = examples(build(manual_dir, tmp_path / "two", num_workers=2), "train")
    assert [e["filename"] for e in one] == [e["filename"] for e in two]
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a["video"], b["video"])
        assert a["label"] == b["label"]


def test_max_examples_per_split_caps_each_split(manual_dir, tmp_path):
    builder = tfds.builder(
        "video_tfrecords", data_dir=str(tmp_path), config=VideoConfig(name="test", num_workers=1)
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(
            manual_dir=str(manual_dir), max_examples_per_split=1
        )
    )
    splits = {name: split.num_examples for name, split in builder.info.splits.items()}
    assert splits == {"train": 1, "test": 1}
    assert [e["filename"] for e in examples(builder, "train")] == [b"v0.mp4"]


def make_bad_files(folder):
    """A corpus of broken inputs, each with the reason the build must give."""
    good = (folder / "v0.mp4").read_bytes()
    (folder / "random.mp4").write_bytes(np.random.default_rng(0).bytes(5000))
    (folder / "empty.mp4").write_bytes(b"")
    (folder / "text.mp4").write_text("this is not a video\n" * 20)
    (folder / "truncated.mp4").write_bytes(good[: len(good) // 3])
    return {
        "random.mp4": "not a video",
        "empty.mp4": "empty file",
        "missing.mp4": "file not found",
        "text.mp4": "not a video",
        "truncated.mp4": "index (moov) missing: file truncated",
    }


def test_bad_videos_are_skipped_and_recorded(manual_dir, tmp_path):
    bad = make_bad_files(manual_dir)
    lines = ["v0.mp4 walking", *(f"{name} walking" for name in bad), "v1.mp4 running"]
    (manual_dir / "train.txt").write_text("\n".join(lines) + "\n")
    build(manual_dir, tmp_path / "data")
    # Reload from disk, as a user would: the skip record is stored with the dataset.
    builder = tfds.builder("video_tfrecords/test", data_dir=str(tmp_path / "data"))
    skipped = builder.info.metadata["skipped"]
    assert {s["path"] for s in skipped} == set(bad)
    for record in skipped:
        assert record["split"] == "train"
        assert bad[record["path"]] in record["reason"], record
    written = builder.info.splits["train"].num_examples
    assert written + len(skipped) == len(lines)
    assert [e["filename"] for e in examples(builder, "train")] == [b"v0.mp4", b"v1.mp4"]


def test_strict_build_stops_at_the_first_bad_video(manual_dir, tmp_path):
    make_bad_files(manual_dir)
    (manual_dir / "train.txt").write_text("v0.mp4 a\nempty.mp4 a\nrandom.mp4 b\n")
    with pytest.raises(VideoBuildError, match=r"train.txt:2: empty.mp4: empty file"):
        build(manual_dir, tmp_path / "data", strict=True)


def test_a_split_where_every_video_is_bad_fails_saying_so(manual_dir, tmp_path):
    make_bad_files(manual_dir)
    (manual_dir / "train.txt").write_text("empty.mp4 a\nmissing.mp4 b\n")
    with pytest.raises(VideoBuildError, match=r"none of the 2 lines of split train gave .*empty"):
        build(manual_dir, tmp_path / "data")


def test_line_without_label_fails_with_file_and_line(manual_dir, tmp_path):
    (manual_dir / "train.txt").write_text("v0.mp4 walking\n\nv1.mp4\n")
    with pytest.raises(ValueError, match=r"train.txt:3: .*no label"):
        build(manual_dir, tmp_path / "data")


def test_missing_manual_dir_gives_the_instructions(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nowhere does not exist[\s\S]*train.txt"):
        build(tmp_path / "nowhere", tmp_path / "data")


def test_manual_dir_without_manifests_gives_the_instructions(tmp_path):
    (tmp_path / "manual").mkdir()
    (tmp_path / "manual" / "readme").write_text("x")
    with pytest.raises(FileNotFoundError, match=r"no manifest found[\s\S]*labels.txt"):
        build(tmp_path / "manual", tmp_path / "data")


def test_absolute_paths_symlinks_and_non_ascii_names(manual_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(manual_dir / "v0.mp4", elsewhere / "vidéo à côté 0.mp4")
    (manual_dir / "link.mp4").symlink_to(manual_dir / "v1.mp4")
    (manual_dir / "train.txt").write_text(
        f"{elsewhere / 'vidéo à côté 0.mp4'} walking\nlink.mp4 running\n", encoding="utf-8"
    )
    builder = build(manual_dir, tmp_path / "data", short_side=None)
    stored = {e["filename"].decode(): e["video"].shape for e in examples(builder, "train")}
    assert stored == {
        str(elsewhere / "vidéo à côté 0.mp4"): (9, 48, 64, 3),
        "link.mp4": (5, 96, 64, 3),
    }


def test_config_from_json_like_the_cli():
    config = VideoConfig(**json.loads('{"name": "x", "size": [112, 112], "fps": 10}'))
    assert config.size == (112, 112) and config.fps == 10
    with pytest.raises(ValueError, match="jpeg_quality must be an int from 1 to 100"):
        VideoConfig(name="bad", jpeg_quality=0)
    with pytest.raises(ValueError, match="choose one of fps and num_frames"):
        VideoConfig(name="bad", fps=5, num_frames=16)


def test_truncated_video_is_kept_and_noted(manual_dir, tmp_path):
    synthetic.write_video(
        str(manual_dir / "whole.avi"), synthetic.moving_frames(30, 48, 64), codec="MJPG"
    )
    data = (manual_dir / "whole.avi").read_bytes()
    (manual_dir / "half.avi").write_bytes(data[: len(data) // 2])
    (manual_dir / "train.txt").write_text("half.avi walking\nv0.mp4 walking\n")
    builder = build(manual_dir, tmp_path / "data")
    assert builder.info.splits["train"].num_examples == 2
    (note,) = builder.info.metadata["notes"]
    assert note["path"] == "half.avi" and "truncated" in note["reason"]
    assert builder.info.metadata["skipped"] == []


def test_examples_too_big_for_protobuf_are_refused_clearly(manual_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(span_writer, "MAX_EXAMPLE_BYTES", 2000)  # stands in for 1 GiB
    (manual_dir / "train.txt").write_text("v0.mp4 walking\nv2.mp4 walking\n")
    builder = build(manual_dir, tmp_path / "data", short_side=None)
    reasons = {s["path"]: s["reason"] for s in builder.info.metadata["skipped"]}
    assert list(reasons) == ["v0.mp4"] and "set segment_frames" in reasons["v0.mp4"]
    assert "over the 2.0 KiB limit" in reasons["v0.mp4"]
    builder = build(manual_dir, tmp_path / "data2", short_side=None, segment_frames=1)
    assert builder.info.metadata["skipped"] == []


# Loaded by every Python process started with the folder on PYTHONPATH, so by the
# build's spawned workers: a worker that opens "poison.mp4" dies as if FFmpeg had crashed.
SITECUSTOMIZE = """
import os, signal
from video_tfrecords.ingest import video_io

original_init = video_io.Video.__init__

def init(self, path, *args, **kwargs):
    if os.path.basename(path) == "poison.mp4":
        os.kill(os.getpid(), signal.SIGKILL)
    original_init(self, path, *args, **kwargs)

video_io.Video.__init__ = init
"""


def test_a_worker_that_dies_costs_only_its_own_video(manual_dir, tmp_path, monkeypatch):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")])
    )
    shutil.copy(manual_dir / "v1.mp4", manual_dir / "poison.mp4")
    names = ["v0.mp4", "v1.mp4", "poison.mp4", "v2.mp4", "v0b.mp4", "v1b.mp4"]
    shutil.copy(manual_dir / "v0.mp4", manual_dir / "v0b.mp4")
    shutil.copy(manual_dir / "v1.mp4", manual_dir / "v1b.mp4")
    (manual_dir / "train.txt").write_text("".join(f"{n} walking\n" for n in names))
    (manual_dir / "test.txt").write_text("v2.mp4 walking\n")
    builder = build(manual_dir, tmp_path / "data", num_workers=2, short_side=None)
    (skipped,) = builder.info.metadata["skipped"]
    assert skipped == {
        "split": "train", "path": "poison.mp4", "reason": "worker died (signal 9)",
        "where": f"{manual_dir / 'train.txt'}:3",
    }  # fmt: skip
    written = [e["filename"].decode() for e in examples(builder, "train")]
    assert sorted(written) == sorted(n for n in names if n != "poison.mp4")
    assert builder.info.splits["train"].num_examples + 1 == len(names)


def test_a_video_in_two_splits_is_warned_of_naming_its_lines_in_each(manual_dir, tmp_path, capsys):
    """One file, however its path is written, in training and evaluation splits (issue 47)."""
    (manual_dir / "val.jsonl").write_text(
        json.dumps({"path": "./v0.mp4", "label": "walking", "end": 0.2}) + "\n"
        + json.dumps({"path": "v0.mp4", "label": "walking", "start": 0.2}) + "\n"
    )  # fmt: skip
    (manual_dir / "test.txt").write_text(f"v2.mp4 walking\n{manual_dir / 'v1.mp4'} running\n")
    builder = build(manual_dir, tmp_path / "data")
    train, val, test = (str(manual_dir / name) for name in ("train.txt", "val.jsonl", "test.txt"))
    warnings = [line for line in capsys.readouterr().err.splitlines() if "in splits" in line]
    assert warnings == [
        f"WARNING: v0.mp4 ({manual_dir / 'v0.mp4'}) is in splits train ({train}:1) and "
        f"validation ({val}:1, +1 more line): splits that share a video leak into each other",
        f"WARNING: v1.mp4 ({manual_dir / 'v1.mp4'}) is in splits train ({train}:2) and test "
        f"({test}:2): splits that share a video leak into each other",
    ]
    notes = {(n["split"], n["where"]): n["reason"] for n in builder.info.metadata["notes"]}
    assert notes == {
        ("train", f"{train}:1"): f"the video is in split validation ({val}:1, +1 more line) too "
        "(leakage between splits)",
        ("validation", f"{val}:1"): f"the video is in split train ({train}:1) too (leakage "
        "between splits)",
        ("validation", f"{val}:2"): f"the video is in split train ({train}:1) too (leakage "
        "between splits)",
        ("train", f"{train}:2"): f"the video is in split test ({test}:2) too (leakage between "
        "splits)",
        ("test", f"{test}:2"): f"the video is in split train ({train}:2) too (leakage between "
        "splits)",
    }


def test_manifests_saved_with_a_byte_order_mark_build(manual_dir, tmp_path):
    """Notepad and Excel start a UTF-8 file with a BOM (issue 47: it was refused)."""
    bom = "\ufeff".encode()
    (manual_dir / "labels.txt").write_bytes(bom + b"walking\nrunning\n")
    (manual_dir / "train.txt").write_bytes(bom + b"v0.mp4 walking\r\nv1.mp4 running\r\n")
    (manual_dir / "test.txt").unlink()
    line = json.dumps({"path": "v2.mp4", "label": "running"}).encode()
    (manual_dir / "test.jsonl").write_bytes(bom + line + b"\r\n")
    builder = build(manual_dir, tmp_path / "data")
    assert builder.info.features["label"].names == ["walking", "running"]
    assert [(e["filename"], e["label"]) for e in examples(builder, "train")] == [
        (b"v0.mp4", 0), (b"v1.mp4", 1),
    ]  # fmt: skip
    assert [(e["filename"], e["label"]) for e in examples(builder, "test")] == [(b"v2.mp4", 1)]
    assert builder.info.metadata["skipped"] == []
