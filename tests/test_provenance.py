"""A rebuild over a prepared dataset: reused when its inputs are the same, refused before any
decoding (saying what changed, as FILE:LINE) when they are not; an --overwrite rebuild then
encodes only the new and changed videos and writes what a clean build of the new inputs writes."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow_datasets as tfds

import synthetic
from video_tfrecords import VideoConfig, video_tfrecords_dataset_builder  # noqa: F401 (registers it)
from video_tfrecords.ingest import provenance
from video_tfrecords.records.schema import DATASET_VERSION

NAME = "prov"
CONFIG = {"name": NAME, "short_side": 32, "segment_frames": 4, "num_workers": 1}
LENGTHS = [3, 5, 7, 9, 3, 5, 7, 9]  # frames of v0..v7: 1, 2, 2, 3, 1, 2 examples (of <= 4)
TFDS = str(pathlib.Path(sys.executable).parent / "tfds")


@pytest.fixture
def manual(tmp_path):
    """Six tiny videos in the manifests (most of several examples) and two spares."""
    folder = tmp_path / "manual"
    for i, length in enumerate(LENGTHS):
        frames = synthetic.moving_frames(length, 32, 48, seed=i)
        synthetic.write_video(str(folder / "videos" / f"v{i}.mp4"), frames)
    (folder / "train.txt").write_text("".join(f"videos/v{i}.mp4 c{i % 2}\n" for i in range(5)))
    (folder / "val.txt").write_text("videos/v5.mp4 c0\n")
    return folder


def build(manual, data_dir, overwrite=False, **fields):
    config = VideoConfig(**{**CONFIG, **fields})
    builder = tfds.builder("video_tfrecords", data_dir=str(data_dir), config=config)
    mode = (
        tfds.GenerateMode.FORCE_REDOWNLOAD
        if overwrite
        else tfds.GenerateMode.REUSE_DATASET_IF_EXISTS
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual), download_mode=mode)
    )
    return builder


def examples(lengths) -> int:
    return sum(-(-length // CONFIG["segment_frames"]) for length in lengths)


def cache_entries(data_dir) -> dict[str, int]:
    """Each finished cache entry's done.json -> its modification time: a video encoded anew
    makes a new one."""
    root = pathlib.Path(data_dir) / "downloads" / "video_tfrecords_cache" / NAME
    return {p.parent.name: p.stat().st_mtime_ns for p in root.rglob("done.json")}


def encoded_since(before: dict, data_dir) -> int:
    return sum(1 for key, mtime in cache_entries(data_dir).items() if before.get(key) != mtime)


def dataset_dir(data_dir):
    return pathlib.Path(data_dir) / "video_tfrecords" / NAME / DATASET_VERSION


def parsed(data_dir, split):
    builder = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(data_dir))
    decoders = {"video": tfds.decode.SkipDecoding()}
    examples = tfds.as_numpy(builder.as_dataset(split, decoders=decoders))
    return {(e["filename"], int(e["segment"])): e for e in examples}


def assert_same_dataset(data_dir, reference_dir):
    """The same parsed examples, split sizes, shard lengths, records and class names."""
    got = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(data_dir)).info
    want = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(reference_dir)).info
    assert sorted(got.splits) == sorted(want.splits)
    for split in want.splits:
        mine, theirs = parsed(data_dir, split), parsed(reference_dir, split)
        assert sorted(mine) == sorted(theirs) and theirs
        for key, example in theirs.items():
            assert sorted(mine[key]) == sorted(example), key
            for feature, value in example.items():
                assert np.array_equal(mine[key][feature], value), (key, feature)
        assert got.splits[split].shard_lengths == want.splits[split].shard_lengths
        assert got.splits[split].num_bytes == want.splits[split].num_bytes
    assert got.features["label"].names == want.features["label"].names
    assert got.metadata["skipped"] == want.metadata["skipped"]
    assert got.metadata["notes"] == want.metadata["notes"]


def add_line(manual):
    with open(manual / "train.txt", "a") as f:
        f.write("videos/v6.mp4 c1\n")
    return f"train.txt: 1 line added: {manual / 'train.txt'}:6: videos/v6.mp4", {}, 1


def remove_line(manual):
    lines = (manual / "train.txt").read_text().splitlines(keepends=True)
    (manual / "train.txt").write_text("".join(lines[:1] + lines[2:]))
    where = f"{manual / 'train.txt'}:2: videos/v1.mp4"
    return f"train.txt: 1 line removed (as the build had them): {where}", {}, 0


def change_label(manual):
    text = (manual / "train.txt").read_text().replace("v3.mp4 c1", "v3.mp4 c2")  # a new class
    (manual / "train.txt").write_text(text)
    where = f"{manual / 'train.txt'}:4: videos/v3.mp4"
    return f"train.txt: 1 line changed: {where}: label c1 -> c2", {}, 0


def replace_video(manual):
    path = manual / "videos" / "v2.mp4"
    synthetic.write_video(str(path), synthetic.moving_frames(7, 32, 48, seed=99))
    os.utime(path, ns=(0, os.stat(path).st_mtime_ns + 1_000_000_000))  # a coarse clock's tick
    return f"train.txt: 1 video file changed: {manual / 'train.txt'}:3: videos/v2.mp4: ", {}, 1


def change_config(manual):
    return f"config '{NAME}': jpeg_quality 90 -> 70", {"jpeg_quality": 70}, 6


def other_manual_dir(manual):
    other = manual.parent / "other manual"
    other.mkdir()
    videos = manual / "videos"
    (other / "train.txt").write_text(f"{videos / 'v0.mp4'} c0\n{videos / 'v7.mp4'} c1\n")
    (other / "val.txt").write_text(f"{videos / 'v5.mp4'} c0\n")
    # v0 and v5 were encoded from the same files (the cache knows them by content): v7 only.
    return f"another manual dir: {manual} -> {other}", {"manual": other}, 1


CHANGES = [add_line, remove_line, change_label, replace_video, change_config, other_manual_dir]


@pytest.mark.parametrize("change", CHANGES, ids=lambda f: f.__name__)
def test_a_change_is_refused_then_rebuilt_encoding_only_what_changed(
    change, manual, tmp_path, capsys
):
    data_dir = tmp_path / "data"
    build(manual, data_dir)
    before = cache_entries(data_dir)
    assert len(before) == 6
    expected, fields, encodes = change(manual)
    new_manual = fields.pop("manual", manual)

    with pytest.raises(provenance.StaleDatasetError) as refused:
        build(new_manual, data_dir, **fields)
    message = str(refused.value)
    assert f"  - {expected}" in message, message
    assert "FORCE_REDOWNLOAD" in message and "another data_dir" in message
    assert cache_entries(data_dir) == before  # nothing decoded
    assert (dataset_dir(data_dir) / "dataset_info.json").exists()

    capsys.readouterr()
    build(new_manual, data_dir, overwrite=True, **fields)
    assert encoded_since(before, data_dir) == encodes
    lines = [(new_manual / m).read_text().splitlines() for m in ("train.txt", "val.txt")]
    videos = sum(map(len, lines))
    cache = data_dir / "downloads" / "video_tfrecords_cache" / NAME
    told = f"{encodes} video{'s' * (encodes != 1)} encoded, {videos - encodes} read back from "
    said = capsys.readouterr().out  # (a build that read nothing back says nothing of it)
    assert (f"\n  {told}the cache\n" in said) == (videos > encodes)
    assert f"keep_cache=False removes it): {cache}\n" in said
    clean = tmp_path / "clean"
    build(new_manual, clean, keep_cache=False, **fields)
    assert not (clean / "downloads" / "video_tfrecords_cache").exists()
    assert_same_dataset(data_dir, clean)
    # The kept cache holds this build's videos only (one copy of the dataset's examples).
    assert len(cache_entries(data_dir)) == videos

    capsys.readouterr()
    build(new_manual, data_dir, **fields)  # unchanged since: reused
    examples = sum(len(parsed(clean, split)) for split in ("train", "validation"))
    folder = dataset_dir(data_dir)
    assert capsys.readouterr().out.strip() == (
        f"video_tfrecords/{NAME}/{DATASET_VERSION} is up to date ({examples} examples), "
        f"nothing to build: {folder}"
    )


def test_the_record_tells_what_the_dataset_was_built_from(manual, tmp_path):
    from video_tfrecords import ClipSource

    data_dir = tmp_path / "data"
    build(manual, data_dir)
    record = json.loads((dataset_dir(data_dir) / provenance.FILE).read_text())
    assert record["manual_dir"] == str(manual) and record["config"]["short_side"] == 32
    video = manual / "videos" / "v5.mp4"
    stat, data = os.stat(video), video.read_bytes()
    content = hashlib.sha256(f"{len(data)}\n".encode() + data).hexdigest()[:32]  # < 48 KiB
    assert record["splits"]["validation"]["videos"] == [
        [1, "videos/v5.mp4", "c0", None, str(video), stat.st_size, stat.st_mtime_ns,
         stat.st_ctime_ns, content]
    ]  # fmt: skip
    source = ClipSource("train", num_frames=2, data_dir=str(data_dir), config=NAME)
    assert source.built_from == record


def test_a_dataset_without_a_record_is_reused_with_a_warning(manual, tmp_path, capsys):
    data_dir = tmp_path / "data"
    build(manual, data_dir)
    (dataset_dir(data_dir) / provenance.FILE).unlink()
    add_line(manual)
    capsys.readouterr()
    build(manual, data_dir)
    assert "has no built_from.json" in capsys.readouterr().err
    assert len(parsed(data_dir, "train")) == examples(LENGTHS[:5])  # as it was: v6 not in it


def test_tfds_build_says_up_to_date_or_exits_naming_the_change_or_overwrites(manual, tmp_path):
    data_dir = tmp_path / "data"
    build(manual, data_dir)
    command = [
        TFDS, "build", "video_tfrecords", f"--manual_dir={manual}", f"--data_dir={data_dir}",
        f"--config={json.dumps(CONFIG)}",
    ]  # fmt: skip
    same = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert same.returncode == 0, same.stderr
    count = examples(LENGTHS[:6])
    assert f"is up to date ({count} examples), nothing to build: " in same.stdout
    expected, _, _ = add_line(manual)
    changed = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert changed.returncode != 0
    assert f"  - {expected}" in changed.stderr and "--overwrite" in changed.stderr
    assert "Traceback" not in changed.stderr
    before = cache_entries(data_dir)
    command.append("--overwrite")
    rebuilt = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert encoded_since(before, data_dir) == 1
    assert len(parsed(data_dir, "train")) == examples(LENGTHS[:5] + LENGTHS[6:7])


@pytest.mark.parametrize("keep_times", [True, False], ids=["mtimes kept", "mtimes not kept"])
def test_videos_moved_to_another_disk_are_rebuilt_without_encoding(tmp_path, keep_times, capsys):
    """The issue's case: make_manifests over a video folder, a build; the folder copied to
    another disk (`cp -a`, or a copy that sets new times), make_manifests again: the
    refusal says so in one line a split, and --overwrite encodes no video and writes a
    clean build's examples."""
    from video_tfrecords import make_manifests

    disk1, disk2, out = tmp_path / "disk1", tmp_path / "disk2", tmp_path / "manual"
    for i, length in enumerate(LENGTHS[:6]):
        frames = synthetic.moving_frames(length, 32, 48, seed=i)
        synthetic.write_video(str(disk1 / "videos" / f"c{i % 2}" / f"v{i}.mp4"), frames)
    make_manifests.folders(str(disk1 / "videos"), str(out), val=0.34)
    data_dir = tmp_path / "data"
    build(out, data_dir)
    before = cache_entries(data_dir)
    copy = shutil.copy2 if keep_times else shutil.copyfile
    shutil.copytree(disk1, disk2, copy_function=copy)
    shutil.rmtree(disk1)
    make_manifests.folders(str(disk2 / "videos"), str(out), val=0.34)

    with pytest.raises(provenance.StaleDatasetError) as refused:
        build(out, data_dir)
    told = [line for line in str(refused.value).splitlines() if line.startswith("  - ")]
    same = "the same video (the same content) by another path"
    assert told == [
        f"  - train.txt: 4 lines name {same}: {disk1} -> {disk2}",
        f"  - val.txt: 2 lines name {same}: {disk1} -> {disk2}",
    ]
    capsys.readouterr()
    build(out, data_dir, overwrite=True)
    assert encoded_since(before, data_dir) == 0
    assert "\n  0 videos encoded, 6 read back from the cache\n" in capsys.readouterr().out
    clean = tmp_path / "clean"
    build(out, clean, keep_cache=False)
    assert_same_dataset(data_dir, clean)
    assert {f.decode() for f, _ in parsed(data_dir, "train")} <= {
        str(p) for p in (disk2 / "videos").rglob("*.mp4")
    }


def test_a_manual_dir_moved_whole_is_up_to_date_and_says_so_in_one_line(
    manual, tmp_path, capsys, monkeypatch
):
    """Manifests with paths relative to the manual dir, the videos in it: moved (copied
    without times, the old one removed), the dataset is up to date, one line says what
    moved, and its record is brought up to date, so that the next check reads no video."""
    from video_tfrecords.ingest import file_identity

    data_dir = tmp_path / "data"
    build(manual, data_dir)
    moved = tmp_path / "another mount" / "manual"
    shutil.copytree(manual, moved, copy_function=shutil.copyfile)
    shutil.rmtree(manual)
    capsys.readouterr()
    build(moved, data_dir)
    examples = sum(len(parsed(data_dir, split)) for split in ("train", "validation"))
    up_to_date = (
        f"video_tfrecords/{NAME}/{DATASET_VERSION} is up to date ({examples} examples), "
        f"nothing to build: {dataset_dir(data_dir)}"
    )
    assert capsys.readouterr().out.splitlines() == [
        up_to_date,
        f"  moved, with the same content: the manual dir {manual} -> {moved} (with 6 video "
        "files in it)",
    ]
    record = json.loads((dataset_dir(data_dir) / provenance.FILE).read_text())
    assert record["manual_dir"] == str(moved)

    def no_read(path, size):
        raise AssertionError(f"{path} read")

    monkeypatch.setattr(file_identity, "fingerprint", no_read)
    build(moved, data_dir)
    assert capsys.readouterr().out.splitlines() == [up_to_date]
    monkeypatch.undo()
    before = cache_entries(data_dir)
    build(moved, data_dir, overwrite=True)
    assert encoded_since(before, data_dir) == 0
    clean = tmp_path / "clean"
    build(moved, clean, keep_cache=False)
    assert_same_dataset(data_dir, clean)


def test_a_span_note_read_back_from_the_cache_names_the_rebuilds_line(manual, tmp_path):
    """A span past its video's end is noted with its FILE:LINE; the cache keeps the note
    without it, so a rebuild of the moved manual dir, reordered, names its own lines."""
    (manual / "train.txt").unlink()
    lines = [
        {"path": "videos/v0.mp4", "label": "c1"},
        {"path": "videos/v1.mp4", "label": "c0", "start": 0.04, "end": 9},  # 5 frames: 0.2 s
    ]
    write = lambda folder, order: (folder / "train.jsonl").write_text(
        "".join(json.dumps(lines[i]) + "\n" for i in order)
    )
    write(manual, [0, 1])
    data_dir = tmp_path / "data"
    build(manual, data_dir)
    before = cache_entries(data_dir)
    moved = tmp_path / "moved"
    manual.rename(moved)
    write(moved, [1, 0])
    build(moved, data_dir, overwrite=True)
    assert encoded_since(before, data_dir) == 0
    info = tfds.builder(f"video_tfrecords/{NAME}", data_dir=str(data_dir)).info
    (note,) = info.metadata["notes"]
    assert note["where"] == f"{moved / 'train.jsonl'}:1"
    assert note["reason"].startswith("span [0.04 s, 9 s) ends past")
    clean = tmp_path / "clean"
    build(moved, clean, keep_cache=False)
    assert_same_dataset(data_dir, clean)
