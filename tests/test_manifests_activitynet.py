"""make_manifests activitynet: activity_net.v1-3.min.json and ActivityNet Captions -> JSON Lines.

The fixture (tests/annotations/activitynet) is minified as published, so every FILE:LINE is
line 1 and the messages name the video. It holds each quirk once: overlapping segments and one
past `duration` (sJFgo9H6zNo), a reversed segment (V1PdHNRaP9E), the testing subset without
annotations, a video not downloaded, a validation video without annotations, an unknown subset,
an id twice in the database object (json.load would keep the second silently), a caption
wholly past the video, a reversed caption timestamp, a caption past the duration, non-ASCII
and emoji sentences with their published spaces, a captions-only video, and val_2.json.
"""

import pathlib
import shutil

import pytest

from annotation_files import assert_nothing_written, by_path, jsonl, lines, touch, write
from video_tfrecords import make_manifests

ANNOTATIONS = pathlib.Path(__file__).parent / "annotations" / "activitynet"
V13 = ANNOTATIONS / "activity_net.v1-3.min.json"
CLASSES = ["Long jump", "Playing squash", "Vacuuming floor", "Zumba"]  # the taxonomy's leaves
JUMP_END = 123.42336739937599
SJF_SEGMENTS = [
    {"label": "Long jump", "start": 0.01, "end": JUMP_END},
    {"label": "Long jump", "start": 10.0, "end": 50.0},  # overlaps the first: kept
    {"label": "Playing squash", "start": 130.0, "end": 139.042},  # 130-150 cut to the duration
]
SJF_CAPTIONS = [
    {"text": " A man runs down a track and jumps into the sand.", "start": 0.28, "end": 55.15},
    {"text": "Spectators cheer — «bravo!» 🎉 ", "start": 13.79, "end": 54.32},
]
V1P_SEGMENTS = [{"label": "Vacuuming floor", "start": 5.0, "end": 25.5}]  # 30-20 dropped
V1P_CAPTIONS = [{"text": "Une femme passe l'aspirateur dans le salon.", "start": 0.0, "end": 60.0}]
DOG = {"text": "A dog catches a frisbee in a park.", "start": 0.0, "end": 20.5}


def videos_of(root):
    """The crawler's v_ID names, and bare IDs; gone1234567 and 3l7quTy4c2s are not there."""
    names = ["v_sJFgo9H6zNo.mp4", "V1PdHNRaP9E.mkv", "val/v_emptyAnnot1.webm", "capOnly0001.mp4"]
    return dict(zip(["sJF", "V1P", "empty", "dog"], touch(root, *names), strict=True))


def test_activitynet_and_captions_one_example_per_video(tmp_path):
    video = videos_of(tmp_path / "v")
    out = tmp_path / "out"
    result = make_manifests.activitynet(str(ANNOTATIONS), str(tmp_path / "v"), str(out))

    assert lines(out, "labels.txt") == CLASSES
    assert by_path(jsonl(out, "train.jsonl")) == {
        video["sJF"]: {
            "labels": ["Long jump", "Playing squash"],
            "segments": SJF_SEGMENTS,
            "captions": SJF_CAPTIONS,  # the third, 140-150, is past the video's 139.04 s
        },
        video["dog"]: {"captions": [DOG]},  # in ActivityNet Captions only
    }
    assert by_path(jsonl(out, "val.jsonl")) == {
        video["V1P"]: {
            "labels": ["Vacuuming floor"],
            "segments": V1P_SEGMENTS,
            "captions": V1P_CAPTIONS,  # from val_1.json; val_2.json is not read
        },
        video["empty"]: {"labels": [], "segments": []},
    }
    assert "🎉".encode() in (out / "train.jsonl").read_bytes()
    assert not (out / "test.jsonl").exists()
    assert lines(out, "missing.txt") == [f"{V13}:1: v_gone1234567.* or gone1234567.*"]
    train, val_1 = ANNOTATIONS / "train.json", ANNOTATIONS / "val_1.json"
    past = "outside the video (length 139.04)"
    assert sorted(lines(out, "dropped.txt")) == sorted(
        [
            f"{V13}:1: video V1PdHNRaP9E segment 'Vacuuming floor' 30.0-20.0: dropped: start >= end",
            f"{V13}:1: video oddSubset01: subset 'validation2' is no split: dropped",
            f"{V13}:1: video V1PdHNRaP9E again (first at {V13}:1): dropped",
            f"{train}:1: video v_sJFgo9H6zNo sentence 2 140.0-150.0: dropped: {past}",
            f"{val_1}:1: video v_V1PdHNRaP9E sentence 0 10.0-5.0: dropped: start >= end",
        ]
    )
    squash = "'Playing squash' 130.0-150.0: clipped to 130.0-139.042 (length 139.042)"
    assert sorted(lines(out, "clipped.txt")) == [
        f"{V13}:1: video sJFgo9H6zNo segment {squash}",
        f"{val_1}:1: video v_V1PdHNRaP9E sentence 1 0.0-70.0: clipped to 0.0-60.0 (length 60.0)",
    ]
    assert result.unlabeled == 1  # 3l7quTy4c2s, testing
    assert any("val_2.json" in note for note in result.notes)
    summary = result.summary()
    assert "train: 2 examples (2 videos, 3 segments, 3 captions) -> train.jsonl" in summary
    assert "val: 2 examples (2 videos, 1 segments, 1 captions) -> val.jsonl" in summary


def test_activitynet_segments_one_example_per_segment(tmp_path):
    video = videos_of(tmp_path / "v")
    out = tmp_path / "out"
    make_manifests.activitynet(str(V13), str(tmp_path / "v"), str(out), segments=True)
    assert jsonl(out, "train.jsonl") == [{"path": video["sJF"], **s} for s in SJF_SEGMENTS]
    assert jsonl(out, "val.jsonl") == [{"path": video["V1P"], **s} for s in V1P_SEGMENTS]
    assert f"{V13}:1: video emptyAnnot1: no segment: no example" in lines(out, "dropped.txt")
    assert lines(out, "missing.txt") == [f"{V13}:1: v_gone1234567.* or gone1234567.*"]  # once


def test_activitynet_captions_file_alone_segments_are_its_sentences(tmp_path):
    video = videos_of(tmp_path / "v")
    out = tmp_path / "out"
    train = ANNOTATIONS / "train.json"
    make_manifests.activitynet(str(train), str(tmp_path / "v"), str(out), segments=True)
    assert jsonl(out, "train.jsonl") == [
        {"path": video[v], "captions": [c["text"]], "start": c["start"], "end": c["end"]}
        for v, c in [("sJF", SJF_CAPTIONS[0]), ("sJF", SJF_CAPTIONS[1]), ("dog", DOG)]
    ]
    assert lines(out, "labels.txt") == []
    out_2 = tmp_path / "out_2"  # the second annotation of val_1's videos, passed alone
    make_manifests.activitynet(str(ANNOTATIONS / "val_2.json"), str(tmp_path / "v"), str(out_2))
    assert jsonl(out_2, "val.jsonl") == [
        {
            "path": video["V1P"],
            "captions": [{"text": "A second annotator's sentence.", "start": 0.0, "end": 30.0}],
        }
    ]


def test_activitynet_segments_of_both_kinds_at_once_is_refused(tmp_path):
    videos_of(tmp_path / "v")
    with pytest.raises(make_manifests.AnnotationError, match="pass --annotations"):
        make_manifests.activitynet(str(ANNOTATIONS), str(tmp_path / "v"), str(tmp_path / "o"), True)
    assert_nothing_written(tmp_path / "o")


def test_activitynet_bad_entries_name_file_line_and_video(tmp_path):
    ann = tmp_path / "ann"
    shutil.copytree(ANNOTATIONS, ann)
    text = V13.read_text().replace('"label":"Zumba"}]},"emptyAnnot1"', '"label":"Zumba!"}]},'
                                   '"emptyAnnot1"')  # fmt: skip
    write(
        ann, {V13.name: text, "val_1.json": '{"v_x": {"timestamps": [[1, 2]],\n"sentences": []}}'}
    )
    videos_of(tmp_path / "v")
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.activitynet(str(ann), str(tmp_path / "v"), str(tmp_path / "out"))
    assert error.value.problems == [
        f"{ann / V13.name}:1: video gone1234567: label 'Zumba!' is not in the taxonomy",
        f"{ann}/val_1.json:1: video v_x: needs an id ('v_ID') and as many timestamps as sentences",
    ]
    assert_nothing_written(tmp_path / "out")


def test_activitynet_invalid_json_is_one_problem_at_its_line(tmp_path):
    ann = write(tmp_path / "ann", {V13.name: '{"taxonomy": [],\n"database": {\n"x": {,}}}\n'})
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.activitynet(str(ann), str(tmp_path), str(tmp_path / "out"))
    (problem,) = error.value.problems  # read twice (taxonomy, database), reported once
    assert problem.startswith(f"{ann / V13.name}:3: not valid JSON")


def test_activitynet_values_of_the_wrong_kind_are_problems_not_crashes(tmp_path):
    text = V13.read_text()
    text = text.replace('"nodeName":"Root",', '"nodeName":["Root"],')
    text = text.replace('"subset":"validation2"', '"subset":{"name":"validation"}')
    text = text.replace('"annotations":[]},"gone1234567"', '"annotations":7},"gone1234567"')
    ann = write(tmp_path / "ann", {V13.name: text})
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.activitynet(str(ann), str(tmp_path), str(tmp_path / "out"))
    path = ann / V13.name
    assert error.value.problems == [
        f'{path}:1: taxonomy[0] lacks "nodeId" or "nodeName"',
        f'{path}:1: video 3l7quTy4c2s: "annotations" is not a list',
    ]
