"""What a build is made from (ingest/provenance.py): recorded from the files as os.stat and
hashlib see them, and compared in words that name each changed line as FILE:LINE
(ingest/changes.py). The files are never decoded here, so plain bytes stand in for videos."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from video_tfrecords import VideoConfig
from video_tfrecords.ingest import changes as compare
from video_tfrecords.ingest import file_identity, manifest, provenance

CONFIG = VideoConfig(name="av", audio_rate=16000, num_workers=1)


@pytest.fixture
def manual(tmp_path):
    folder = tmp_path / "manual"
    (folder / "videos").mkdir(parents=True)
    for i in range(8):
        (folder / "videos" / f"v{i}.mp4").write_bytes(bytes([i]) * (100 + i))
    (folder / "train.txt").write_text(
        "# six videos\n" + "".join(f"videos/v{i}.mp4 c{i % 2}\n" for i in range(6))
    )
    (folder / "test.txt").write_text("videos/v6.mp4 c0\n")
    return folder


def record(folder, config=CONFIG, previous=None):
    return provenance.collect(folder, manifest.read_dataset(folder), config, previous)


def changes(old_folder, new_folder=None, old_config=CONFIG, new_config=CONFIG):
    old = record(old_folder, old_config)
    return compare.differences(old, record(new_folder or old_folder, new_config))


def test_the_record_holds_each_input_as_the_file_system_tells_it(manual, tmp_path):
    got = record(manual)
    train = got["splits"]["train"]
    data = (manual / "train.txt").read_bytes()
    assert train["file"] == str(manual / "train.txt")
    assert train["sha256"] == hashlib.sha256(data).hexdigest()
    assert train["lines"] == 7
    line, path, label, annotation, file, size, mtime, ctime, content = train["videos"][2]
    stat = os.stat(manual / "videos" / "v2.mp4")
    assert (line, path, label, annotation) == (4, "videos/v2.mp4", "c0", None)
    assert (file, size, mtime, ctime) == (
        str(manual / "videos" / "v2.mp4"),
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ctime_ns,
    )
    # A file below three blocks: SHA-256 of its size and all of it, 128 bits.
    data = (manual / "videos" / "v2.mp4").read_bytes()
    assert content == hashlib.sha256(b"102\n" + data).hexdigest()[:32]
    assert got["manual_dir"] == str(manual) and os.path.isabs(got["manual_dir"])
    assert got["class_names"] == ["c0", "c1"]
    assert got["labels_file"] is None
    assert got["config"]["audio_rate"] == 16000 and got["config"]["name"] == "av"
    assert got["config"]["short_side"] == 256 and got["config"]["deinterlace"] == "auto"
    # Written and read back as it was; one video a line, for a reader's eye.
    provenance.write(tmp_path, got)
    assert provenance.read(tmp_path) == got
    text = (tmp_path / provenance.FILE).read_text()
    assert json.loads(text) == got
    assert sum('"videos/v' in line for line in text.splitlines()) == 7
    assert provenance.read(tmp_path / "nowhere") is None


def test_a_missing_video_is_recorded_as_missing(manual):
    (manual / "videos" / "v3.mp4").unlink()
    video = record(manual)["splits"]["train"]["videos"][3]
    assert video[1] == "videos/v3.mp4" and video[5:] == [None, None, None, None]


def test_same_inputs_and_what_does_not_change_the_examples_are_no_difference(manual):
    old = record(manual)
    assert compare.differences(old, record(manual)) == []
    lines = (manual / "train.txt").read_text().splitlines()
    (manual / "train.txt").write_text("\n".join(["# reordered", *reversed(lines), ""]))
    faster = VideoConfig(name="av", audio_rate=16000, num_workers=4, keep_cache=False)
    assert compare.differences(old, record(manual, faster)) == []


def test_lines_added_name_each_new_line(manual):
    old = record(manual)
    with open(manual / "train.txt", "a") as f:
        f.write("videos/v7.mp4 c1\n")
    train = str(manual / "train.txt")
    assert compare.differences(old, record(manual)) == [
        f"train.txt: 1 line added: {train}:8: videos/v7.mp4"
    ]


def test_many_lines_added_show_a_few_and_count_the_rest(manual):
    old = record(manual)
    with open(manual / "train.txt", "a") as f:
        f.writelines(f"new/{i}.mp4 c0\n" for i in range(10))
    (change,) = compare.differences(old, record(manual), few=3)
    train = str(manual / "train.txt")
    assert change.startswith(f"train.txt: 10 lines added: {train}:8: new/0.mp4; {train}:9: ")
    assert change.endswith("; ... and 7 more")


def test_lines_removed_name_the_line_the_build_had(manual):
    old = record(manual)
    lines = (manual / "train.txt").read_text().splitlines(keepends=True)
    (manual / "train.txt").write_text("".join(lines[:2] + lines[3:]))
    train = str(manual / "train.txt")
    assert compare.differences(old, record(manual)) == [
        f"train.txt: 1 line removed (as the build had them): {train}:3: videos/v1.mp4"
    ]


def test_a_label_changed_names_its_line_and_both_labels(manual):
    old = record(manual)
    text = (manual / "train.txt").read_text().replace("videos/v4.mp4 c0", "videos/v4.mp4 c1")
    (manual / "train.txt").write_text(text)
    train = str(manual / "train.txt")
    assert compare.differences(old, record(manual)) == [
        f"train.txt: 1 line changed: {train}:6: videos/v4.mp4: label c0 -> c1"
    ]


def test_a_video_file_replaced_under_its_name(manual):
    old = record(manual)
    path = manual / "videos" / "v5.mp4"
    before = os.stat(path)
    path.write_bytes(b"another video" * 20)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 2_000_000_000))
    (change,) = compare.differences(old, record(manual))
    train = str(manual / "train.txt")
    assert change.startswith(
        f"train.txt: 1 video file changed: {train}:7: videos/v5.mp4: 105 -> 260 bytes, modified "
    )
    # Touched (a new time, the same content): the same video.
    old = record(manual)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 4_000_000_000))
    assert compare.differences(old, record(manual)) == []
    # Rewritten at the same size, a new time: another file (a re-encode of the same length).
    path.write_bytes(b"other video!" * 20 + b"x" * 20)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 6_000_000_000))
    (change,) = compare.differences(old, record(manual))
    assert change.startswith(f"train.txt: 1 video file changed: {train}:7: videos/v5.mp4: modi")
    assert "bytes" not in change and " -> " in change.split("modified ")[1]
    # Rewritten in place with its modification time put back: its ctime tells, then content.
    old = record(manual)
    path.write_bytes(b"a third one!" * 20 + b"y" * 20)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 6_000_000_000))
    (change,) = compare.differences(old, record(manual, previous=old))
    assert change == (
        f"train.txt: 1 video file changed: {train}:7: videos/v5.mp4: other content at the same "
        "size and modification time"
    )


def test_a_truncated_file_is_changed(manual):
    old = record(manual)
    path = manual / "videos" / "v4.mp4"
    os.truncate(path, 50)
    (change,) = compare.differences(old, record(manual, previous=old))
    assert change.startswith(f"train.txt: 1 video file changed: {manual / 'train.txt'}:6: ")
    assert change.split("videos/v4.mp4: ")[1].startswith("104 -> 50 bytes, modified ")


def test_a_config_field_changed_under_the_same_name(manual):
    at_8k = VideoConfig(name="av", audio_rate=8000, jpeg_quality=80)
    assert changes(manual, new_config=at_8k) == [
        "config 'av': jpeg_quality 90 -> 80; audio_rate 16000 -> 8000"
    ]


def test_another_manual_dir(manual, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "train.txt").write_text(f"{manual}/videos/v0.mp4 c0\n")
    found = changes(manual, other)
    assert found == [
        f"another manual dir: {manual} -> {other}",
        "class names (2 -> 1 classes): id 1: 'c1' -> none",
        "train.txt: 5 lines removed (as the build had them): "
        + "; ".join(f"{manual / 'train.txt'}:{i + 2}: videos/v{i}.mp4" for i in range(1, 6)),
        # The same video, label and annotation, under another path.
        f"train.txt: 1 line names the same video (the same content) by another path: videos -> "
        f"{manual}/videos",
        f"split test: no manifest now (it was {manual / 'test.txt'}, 1 line)",
    ]


def test_class_names_changed_by_labels_txt(manual):
    (manual / "labels.txt").write_text("c0\nc1\n")
    old = record(manual)
    (manual / "labels.txt").write_text("c1\nc0\n")
    assert compare.differences(old, record(manual)) == [
        "class names (2 -> 2 classes): id 0: 'c0' -> 'c1', id 1: 'c1' -> 'c0'"
    ]


def test_the_refusal_says_what_changed_and_both_ways_on():
    ways = {"overwrite": "--overwrite", "data_dir": "--data_dir", "config": "--config NAME"}
    text = provenance.stale_message("video_tfrecords/av/2.3.0", "/data/x", ["one", "two"], ways)
    assert "  - one\n  - two\n" in text
    assert "--overwrite" in text and "another --data_dir" in text and "--config NAME" in text


def test_the_cache_keeps_only_the_entries_a_build_read(tmp_path):
    from video_tfrecords.ingest import cache

    store = cache.Cache(tmp_path / "cache")
    for key in ("aa" + "0" * 30, "ab" + "1" * 30, "bb" + "2" * 30):
        writer = store.writer(key)
        writer.add({"video": [b"jpeg"]})
        writer.finish({"fields": {}, "damage": None})
    store.writer("cc" + "3" * 30).add({"video": [b"cut short"]})  # a killed build's
    (tmp_path / "cache" / "attempts").mkdir()
    assert store.keep_only(["ab" + "1" * 30]) == 3
    assert store.count() == 1 and store.lookup("ab" + "1" * 30) is not None
    assert (tmp_path / "cache" / "attempts").is_dir()


def test_files_stated_in_threads_are_those_stated_in_one(manual, monkeypatch):
    files = [str(manual / "videos" / f"v{i % 9}.mp4") for i in range(600)]  # v8: missing
    one_thread = [file_identity.identity(file) for file in files]
    monkeypatch.setattr(file_identity, "SLOW_STAT", 0.0)  # as on a network file system
    assert file_identity.identities(files) == one_thread
    assert one_thread[8][1:] == (None, None, None, None) and one_thread[0][1] == 100


def test_json_lines_are_compared_by_content(manual):
    (manual / "train.txt").unlink()
    spans = [
        {"path": "videos/v0.mp4", "label": "c0", "start": 0, "end": 1, "captions": ["a cat"]},
        {"path": "videos/v0.mp4", "label": "c1", "start": 1, "end": 2},
        {"path": "videos/v1.mp4", "label": "c1"},
    ]
    write = lambda lines: (manual / "train.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
    )
    write(spans)
    old = record(manual)
    write(spans[::-1])  # reordered: the same lines
    assert compare.differences(old, record(manual)) == []
    spans[0]["captions"] = ["a dog"]
    spans.append({"path": "videos/v0.mp4", "label": "c0", "start": 2, "end": 3})
    write(spans)
    train = str(manual / "train.jsonl")
    assert compare.differences(old, record(manual)) == [
        f"train.jsonl: 2 lines added: {train}:1: videos/v0.mp4; {train}:4: videos/v0.mp4",
        f"train.jsonl: 1 line removed (as the build had them): {train}:1: videos/v0.mp4",
    ]
    spans.pop()
    write(spans)
    assert compare.differences(old, record(manual)) == [
        f'train.jsonl: 1 line changed: {train}:1: videos/v0.mp4: captions "a cat" -> "a dog"'
    ]


# -- a video's identity: its content, wherever the file is -----------------------------------


def test_a_fingerprint_is_the_size_and_the_first_middle_and_last_blocks(tmp_path):
    block = file_identity.BLOCK
    data = bytearray(os.urandom(10 * block + 123))
    path = tmp_path / "v.mp4"
    path.write_bytes(bytes(data))
    middle = (len(data) - block) // 2
    want = hashlib.sha256(
        f"{len(data)}\n".encode() + data[:block] + data[middle : middle + block] + data[-block:]
    ).hexdigest()[:32]
    assert file_identity.fingerprint(str(path), len(data)) == want
    for offset in (5, middle + 7, len(data) - 1):  # a byte of any block: another content
        changed = bytearray(data)
        changed[offset] ^= 1
        path.write_bytes(bytes(changed))
        assert file_identity.fingerprint(str(path), len(data)) != want
    # What it cannot see: a change of the same size between the blocks (see docs/dataset.md).
    changed = bytearray(data)
    changed[2 * block] ^= 1
    path.write_bytes(bytes(changed))
    assert file_identity.fingerprint(str(path), len(data)) == want


def test_files_found_as_the_record_found_them_are_not_read(manual, monkeypatch):
    old = record(manual)
    read = []
    real = file_identity.fingerprint
    monkeypatch.setattr(file_identity, "fingerprint", lambda p, n: read.append(p) or real(p, n))
    assert record(manual, previous=old) == old
    assert read == []
    os.utime(manual / "videos" / "v1.mp4")  # touched: read again, the same video
    assert compare.differences(old, record(manual, previous=old)) == []
    assert read == [str(manual / "videos" / "v1.mp4")]


def copy_videos(source, target, keep_times):
    shutil.copytree(source, target, copy_function=shutil.copy2 if keep_times else shutil.copyfile)


@pytest.mark.parametrize("keep_times", [True, False], ids=["mtimes kept", "mtimes not kept"])
def test_videos_moved_and_manifests_written_again_are_one_line_a_split(
    manual, tmp_path, keep_times
):
    """The manifests name each video by its absolute path (as make_manifests writes them
    outside the manual dir); the videos are copied to another disk and the manifests written
    again: one line a split says so, with the part of the paths that changed."""
    elsewhere = tmp_path / "disk2" / "videos"
    rewrite = lambda folder: [
        (manual / name).write_text(
            (manual / name).read_text().replace("videos/", f"{folder}/")
        )
        for name in ("train.txt", "test.txt")
    ]  # fmt: skip
    rewrite(manual / "videos")
    old = record(manual)
    copy_videos(manual / "videos", elsewhere, keep_times)
    (manual / "train.txt").write_text((manual / "train.txt").read_text().replace(
        str(manual / "videos"), str(elsewhere)))  # fmt: skip
    (manual / "test.txt").write_text((manual / "test.txt").read_text().replace(
        str(manual / "videos"), str(elsewhere)))  # fmt: skip
    shutil.rmtree(manual / "videos")  # moved, not copied
    moved = f"{manual} -> {tmp_path / 'disk2'}"
    assert compare.differences(old, record(manual, previous=old)) == [
        f"train.txt: 6 lines name the same video (the same content) by another path: {moved}",
        f"test.txt: 1 line names the same video (the same content) by another path: {moved}",
    ]
    # Moved and changed: each change said as it is, beside the move.
    (elsewhere / "v2.mp4").write_bytes(b"re-encoded")
    text = (manual / "train.txt").read_text().replace("v4.mp4 c0", "v4.mp4 c1")
    (manual / "train.txt").write_text(text)
    train = manual / "train.txt"
    assert compare.differences(old, record(manual, previous=old)) == [
        f"train.txt: 1 line added: {train}:4: {elsewhere}/v2.mp4",  # another video now
        f"train.txt: 1 line removed (as the build had them): {train}:4: {manual}/videos/v2.mp4",
        f"train.txt: 1 line changed: {train}:6: {elsewhere}/v4.mp4: label c0 -> c1; the same "
        f"video, moved from {manual}/videos/v4.mp4",
        f"train.txt: 4 lines name the same video (the same content) by another path: {moved}",
        f"test.txt: 1 line names the same video (the same content) by another path: {moved}",
    ]


@pytest.mark.parametrize("keep_times", [True, False], ids=["mtimes kept", "mtimes not kept"])
def test_a_manual_dir_moved_whole_changes_nothing_and_is_said_in_one_line(
    manual, tmp_path, keep_times
):
    old = record(manual)
    other = tmp_path / "mounted" / "elsewhere"
    copy_videos(manual, other, keep_times)
    shutil.rmtree(manual)
    new = record(other, previous=old)
    assert compare.differences(old, new) == []
    assert compare.moves(old, new) == (
        f"moved, with the same content: the manual dir {manual} -> {other} (with 7 video files "
        "in it)"
    )
    assert compare.moves(new, record(other, previous=new)) is None


def test_a_changed_annotation_says_old_and_new(manual):
    (manual / "train.txt").unlink()
    line = {
        "path": "videos/v0.mp4",
        "labels": ["c0", "c1"],
        "segments": [{"label": "c0", "start": 1, "end": 2}, {"label": "c1", "start": 3, "end": 4}],
    }
    write = lambda: (manual / "train.jsonl").write_text(json.dumps(line) + "\n")
    write()
    old = record(manual)
    line["labels"] = ["c1"]
    line["segments"][1]["label"] = "c0"
    line["start"] = 0.5
    write()
    train = manual / "train.jsonl"
    assert compare.differences(old, record(manual)) == [
        f"train.jsonl: 1 line changed: {train}:1: videos/v0.mp4: labels "
        '"c0" -> none; start none -> 0.5; segments "c1" [3, 4) s -> "c0" [3, 4) s'
    ]


def test_a_record_of_format_1_is_compared_by_stat(manual, tmp_path):
    """A dataset built before files were known by content: the same inputs are still no
    difference; a moved manual dir is every file changed, as then."""
    old = record(manual)
    old["format"] = 1
    for split in old["splits"].values():
        split["videos"] = [v[:7] for v in split["videos"]]
    assert compare.differences(old, record(manual, previous=old)) == []
    assert compare.moves(old, record(manual)) is None
    other = tmp_path / "other"
    shutil.copytree(manual, other)
    (first, second, *_) = compare.differences(old, record(other))
    assert first == f"another manual dir: {manual} -> {other}"
    assert second.startswith(f"train.txt: 6 video files changed: {other / 'train.txt'}:2: ")


def test_a_remote_file_is_known_through_etils_epath(tmp_path, monkeypatch):
    """A bucket's object (gs://, s3://): its size and time as etils.epath tells them (no
    ctime), its blocks read through epath; here a local file stands in for it."""
    from etils import epath

    data = os.urandom(5 * file_identity.BLOCK + 7)
    path = tmp_path / "v.mp4"
    path.write_bytes(data)
    local = file_identity.identity(str(path))
    monkeypatch.setattr(file_identity, "is_remote", lambda p: True)
    remote = file_identity.identity(str(path))
    stat = epath.Path(path).stat()
    assert remote[1:4] == (len(data), stat.mtime, None)
    assert remote[4] == local[4]  # the same content, read through epath
    assert file_identity.identities([str(path)], {str(path): remote[1:]}) == [remote]


def test_the_records_video_lines_are_read_by_name(manual, tmp_path):
    from video_tfrecords.records import built_from

    got = record(manual)
    got["splits"]["test"]["videos"].append([9, "old.mp4", "c1", None, "/x/old.mp4", 5, 6])
    provenance.write(tmp_path, got)
    read = built_from.read(tmp_path)
    v2 = built_from.video_lines(read["splits"]["train"])[2]
    old = built_from.video_lines(read["splits"]["test"])[-1]
    stat = os.stat(manual / "videos" / "v2.mp4")
    assert (v2.line, v2.path, v2.label, v2.annotation) == (4, "videos/v2.mp4", "c0", None)
    assert v2.file == str(manual / "videos" / "v2.mp4")
    assert v2.identity[:3] == (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    assert len(v2.content) == 32
    # A line of a format-1 record (no ctime, no content).
    assert (old.path, old.size, old.mtime, old.ctime, old.content) == ("old.mp4", 5, 6, None, None)
