"""make_manifests msrvtt: the published JSON and the benchmarks' split lists -> JSON Lines.

The fixture (tests/annotations/msrvtt) holds: sentences out of sen_id order, non-ASCII, emoji,
Japanese and a caption with spaces at both ends (all kept exactly), a sen_id twice, a sentence
of no video, a video twice (train, then test), a video not downloaded, and the lists of the
9k/1k-A benchmark (with sentences) and the one-column *_list_full.txt (video0 in two lists).
"""

import pathlib
import shutil

import pytest

from annotation_files import by_path, jsonl, lines, touch, write
from video_tfrecords import make_manifests
from video_tfrecords.make_manifests import __main__ as cli

ANNOTATIONS = pathlib.Path(__file__).parent / "annotations" / "msrvtt"
TRAIN_VAL = ANNOTATIONS / "train_val_videodatainfo.json"
VIDEO0 = [  # sen_id 0, 1, 2 (the file lists 2 first)
    "a man drives a café-racer ☕ down the road",
    "  someone plays guitar 🎸 loudly ",
    "a car is shown",
]
VIDEO7010 = ["日本語の字幕: 猫がピアノを弾いている", "a cat plays the piano"]


def videos_of(root):
    names = ["TrainValVideo/video0.mp4", "TrainValVideo/video1.mp4", "TrainValVideo/video2.mp4",
             "TrainValVideo/video3.mp4", "TestVideo/video7010.mp4"]  # fmt: skip
    return dict(zip(["0", "1", "2", "3", "7010"], touch(root, *names), strict=True))


def test_msrvtt_official_split_all_sentences_exact(tmp_path):
    video = videos_of(tmp_path / "v")
    out = tmp_path / "out"
    result = make_manifests.msrvtt(str(ANNOTATIONS), str(tmp_path / "v"), str(out))

    classes = lines(out, "labels.txt")
    assert sorted(classes) == sorted(["0", "3", "9", "13", "16"])  # the categories seen
    assert classes[0] == "0" and classes[3] == "3"  # a number below the count is its own id
    assert by_path(jsonl(out, "train.jsonl")) == {
        video["0"]: {"label": "9", "captions": VIDEO0},
        video["1"]: {"label": "16", "captions": ["a cartoon character speaks"]},
        video["3"]: {"label": "3", "captions": ["people are dancing"]},
    }
    assert jsonl(out, "val.jsonl") == [
        {"path": video["2"], "label": "9", "captions": ["a woman is cooking"]}
    ]
    assert jsonl(out, "test.jsonl") == [
        {"path": video["7010"], "label": "13", "captions": VIDEO7010}
    ]
    raw = (out / "train.jsonl").read_bytes() + (out / "test.jsonl").read_bytes()
    for text in ("café-racer ☕", "🎸", "猫がピアノ"):
        assert text.encode() in raw  # UTF-8 as published, no \u escapes
    assert lines(out, "missing.txt") == [f"{TRAIN_VAL}:8: video4.*"]
    assert lines(out, "dropped.txt") == [
        f"{TRAIN_VAL}:7: video video3 again (first at {TRAIN_VAL}:6): dropped",
        f"{TRAIN_VAL}:15: sentence 20 again (first at {TRAIN_VAL}:14): dropped",
        f"{TRAIN_VAL}:18: sentence 61: no video video99: dropped",
    ]
    assert not (out / "clipped.txt").exists()  # MSR-VTT states no spans
    assert result.splits == {"train": 3, "val": 1, "test": 1}
    assert "train: 3 examples (3 videos, 5 captions) -> train.jsonl" in result.summary()


def test_msrvtt_9k_lists_give_their_own_sentences(tmp_path):
    video = videos_of(tmp_path / "v")
    out = tmp_path / "out"
    make_manifests.msrvtt(str(ANNOTATIONS), str(tmp_path / "v"), str(out), lists="9k")
    assert by_path(jsonl(out, "train.jsonl")) == {
        video["0"]: {"label": "9", "captions": [VIDEO0[0], VIDEO0[2]]},
        video["1"]: {"label": "16", "captions": ["a cartoon character speaks"]},
    }
    assert by_path(jsonl(out, "test.jsonl")) == {  # 1k-A: the one sentence each
        video["7010"]: {"label": "13", "captions": ["a cat plays the piano"]},
        video["2"]: {"label": "9", "captions": ["a woman is cooking"]},
    }
    assert not (out / "val.jsonl").exists()
    dropped = lines(out, "dropped.txt")
    assert f"{TRAIN_VAL}:6: video video3 is in no split list" in dropped
    assert f"{TRAIN_VAL}:8: video video4 is in no split list" in dropped
    assert lines(out, "missing.txt") == []  # video4 is in no list: dropped, not looked for


def test_msrvtt_one_column_lists_and_a_video_in_two_lists(tmp_path, capsys):
    video = videos_of(tmp_path / "v")
    out = tmp_path / "out"
    args = ["msrvtt", "--annotations", str(ANNOTATIONS), "--videos", str(tmp_path / "v")]
    assert cli.main([*args, "--out", str(out), "--lists", "full"]) == 0
    assert "test: 1 examples (1 videos, 2 captions) -> test.jsonl" in capsys.readouterr().out
    assert [o["path"] for o in jsonl(out, "train.jsonl")] == [video["0"], video["1"], video["3"]]
    assert jsonl(out, "train.jsonl")[0]["captions"] == VIDEO0  # from the JSON
    assert [o["path"] for o in jsonl(out, "val.jsonl")] == [video["2"]]
    assert [o["path"] for o in jsonl(out, "test.jsonl")] == [video["7010"]]
    test_list = ANNOTATIONS / "test_list_full.txt"
    assert (
        f"{test_list}:2: video video0 already in train (at {ANNOTATIONS}/train_list_full.txt:1): "
        "dropped from test"
    ) in lines(out, "dropped.txt")
    with pytest.raises(make_manifests.AnnotationError, match="no split list of --lists 5k"):
        make_manifests.msrvtt(str(ANNOTATIONS), str(tmp_path / "v"), str(tmp_path / "o"), "5k")


def test_msrvtt_bad_entries_name_file_and_line(tmp_path):
    ann = tmp_path / "ann"
    shutil.copytree(ANNOTATIONS, ann)
    text = TRAIN_VAL.read_text()
    text = text.replace('"category": 16,', '"category": "music",')  # 4
    text = text.replace('"video_id": "video2", "sen_id": 40', '"video_id": "video2"')  # 16
    write(ann, {TRAIN_VAL.name: text})
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.msrvtt(str(ann), str(tmp_path), str(tmp_path / "out"))
    assert [p.split(": ")[0] for p in error.value.problems] == [
        f"{ann / TRAIN_VAL.name}:4",
        f"{ann / TRAIN_VAL.name}:16",
    ]


def test_msrvtt_a_split_of_the_wrong_kind_is_dropped_and_recorded(tmp_path):
    ann = write(tmp_path / "ann", {TRAIN_VAL.name: TRAIN_VAL.read_text().replace(
        '"split": "validate"', '"split": ["validate"]')})  # fmt: skip
    video = videos_of(tmp_path / "v")
    out = tmp_path / "out"
    make_manifests.msrvtt(str(ann), str(tmp_path / "v"), str(out))
    assert video["2"] not in {o["path"] for o in jsonl(out, "train.jsonl")}
    assert not (out / "val.jsonl").exists()
    where = f"{ann / TRAIN_VAL.name}:5"
    assert f"{where}: video video2: split ['validate'] is no split: dropped" in lines(
        out, "dropped.txt"
    )
