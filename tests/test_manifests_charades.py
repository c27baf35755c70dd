"""make_manifests charades: the published CSVs (tests/annotations/charades) -> JSON Lines.

The fixture holds each quirk once: overlapping actions (46GP8), a span past `length`, a span
with start == end and two descriptions, one with non-ASCII text and an emoji (N11GT, its script
quoted over two lines), no actions (0IH69), a span wholly past the video and one action twice
(KRF68), a video not downloaded (ZZZZZ), and an id of train again in the test CSV. The
expected examples below are written out by hand from those rows.
"""

import pathlib
import shutil

import pytest

from annotation_files import assert_nothing_written, by_path, jsonl, lines, touch, write
from video_tfrecords import make_manifests
from video_tfrecords.make_manifests import __main__ as cli

ANNOTATIONS = pathlib.Path(__file__).parent / "annotations" / "charades"
CLASSES = [
    "Holding some clothes",
    "Putting clothes somewhere",
    "Taking some clothes from somewhere",
    "Throwing clothes somewhere",
    "Tidying some clothes",
]
HOLD, PUT, TAKE, THROW, TIDY = CLASSES


def videos_of(root):
    names = ["46GP8.mp4", "sub/N11GT.mp4", "0IH69.mp4", "KRF68.webm", "YSKX3.mp4"]
    return dict(
        zip(["46GP8", "N11GT", "0IH69", "KRF68", "YSKX3"], touch(root, *names), strict=True)
    )


def test_charades_every_quirk_once(tmp_path):
    video = videos_of(tmp_path / "Charades_v1_480")
    out = tmp_path / "out"
    result = make_manifests.charades(str(ANNOTATIONS), str(tmp_path / "Charades_v1_480"), str(out))

    assert lines(out, "labels.txt") == CLASSES  # line i is class c{i:03d}, named by its text
    train = jsonl(out, "train.jsonl")
    assert [o["path"] for o in train] == [video[v] for v in ("46GP8", "N11GT", "0IH69", "KRF68")]
    assert by_path(train) == {
        video["46GP8"]: {
            "labels": [PUT, TAKE],  # by class id
            "segments": [  # overlapping, both kept, in the annotation's order
                {"label": TAKE, "start": 11.9, "end": 21.2},
                {"label": PUT, "start": 0.0, "end": 12.6},
            ],
            "captions": ["A person cooks food on a stove before looking out of a window."],
        },
        video["N11GT"]: {
            "labels": [HOLD, TIDY],  # THROW's only span had start == end
            "segments": [
                {"label": HOLD, "start": 20.5, "end": 32.1},  # 20.5-40.0 cut to length 32.10
                {"label": TIDY, "start": 0.0, "end": 3.1},
            ],
            "captions": [
                "Une personne déplie une couverture 🧣",
                "A person throws a blanket on the stairs.",
            ],
        },
        video["0IH69"]: {"labels": [], "segments": [], "captions": ["A person lies on a bed."]},
        video["KRF68"]: {
            "labels": [HOLD],
            "segments": [{"label": HOLD, "start": 1.0, "end": 2.0}],
            "captions": [],
        },
    }
    raw = (out / "train.jsonl").read_bytes()
    assert "déplie une couverture 🧣".encode() in raw and b"\\u" not in raw  # UTF-8, unescaped
    # The "test" CSV is the validation set Charades results are reported on.
    assert not (out / "test.jsonl").exists()
    assert jsonl(out, "val.jsonl") == [
        {
            "path": video["YSKX3"],
            "labels": [HOLD, PUT],
            "segments": [
                {"label": HOLD, "start": 0.0, "end": 7.5},
                {"label": PUT, "start": 6.0, "end": 9.0},
            ],
            "captions": ["A person holds a shirt", "They put it on a chair"],
        }
    ]
    train_csv, test_csv = (
        ANNOTATIONS / "Charades_v1_train.csv",
        ANNOTATIONS / "Charades_v1_test.csv",
    )
    assert lines(out, "missing.txt") == [f"{train_csv}:7: ZZZZZ.*"]
    assert lines(out, "clipped.txt") == [
        f"{train_csv}:3: video N11GT segment {HOLD!r} 20.5-40.0: clipped to 20.5-32.1 (length 32.1)"
    ]
    dropped = lines(out, "dropped.txt")
    assert [line.split(": ")[0] for line in dropped] == [
        f"{train_csv}:3",  # N11GT c003 5.00 5.00
        f"{train_csv}:6",  # KRF68 c004 40-45, past length 30
        f"{train_csv}:6",  # KRF68 c000 1-2 twice
        f"{test_csv}:3",  # 46GP8 again
    ]
    assert "start >= end" in dropped[0] and "outside the video" in dropped[1]
    assert "same segment again" in dropped[2] and f"first at {train_csv}:2" in dropped[3]
    assert result.splits == {"train": 4, "val": 1}
    summary = result.summary()
    for text in (
        "train: 4 examples (4 videos, 5 segments, 4 captions) -> train.jsonl",
        "val: 1 examples (1 videos, 2 segments, 2 captions) -> val.jsonl",
        "classes: 5",
        "missing: 1",
        "dropped: 4",
        "clipped: 1",
        "1 videos without actions",
    ):
        assert text in summary, summary


def test_charades_command_line(tmp_path, capsys):
    videos_of(tmp_path / "v")
    out = tmp_path / "out"
    args = ["charades", "--annotations", str(ANNOTATIONS), "--videos", str(tmp_path / "v")]
    assert cli.main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "train: 4 examples" in printed and "val: 1 examples" in printed
    assert len(jsonl(out, "train.jsonl")) == 4
    with pytest.raises(SystemExit):
        cli.main([*args, "--out", str(tmp_path / "o2"), "--segments"])
    assert "--segments is for activitynet" in capsys.readouterr().err


def test_charades_bad_rows_name_file_and_line_and_nothing_is_written(tmp_path):
    ann = tmp_path / "ann"
    shutil.copytree(ANNOTATIONS, ann)
    header = (ANNOTATIONS / "Charades_v1_test.csv").read_text().splitlines()[0]
    write(
        ann,
        {
            "Charades_v1_test.csv": f"{header}\n"
            "AAAAA,s,x,1,1,Yes,a,b,c,c999 1.0 2.0,10\n"  # 2: no class c999
            "BBBBB,s,x,1,1,Yes,a,b,c,c001 one 2.0,10\n"  # 3: not seconds
            "CCCCC,s,x,1,1,Yes,a,b,c,c001 1.0 2.0,ten\n"  # 4: length not a number
            "DDDDD,s,x,1,1,Yes,a,b,c,c001 1.0 2.0\n",  # 5: a field short
        },
    )
    videos_of(tmp_path / "v")
    out = tmp_path / "out"
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.charades(str(ann), str(tmp_path / "v"), str(out))
    test_csv = ann / "Charades_v1_test.csv"
    assert sorted(p.split(": ")[0] for p in error.value.problems) == [
        f"{test_csv}:{line}" for line in (2, 3, 4, 5)
    ]
    assert any("c999 is not in Charades_v1_classes.txt" in p for p in error.value.problems)
    assert_nothing_written(out)


def test_charades_class_list_with_a_gap_is_refused(tmp_path):
    ann = tmp_path / "ann"
    shutil.copytree(ANNOTATIONS, ann)
    write(ann, {"Charades_v1_classes.txt": "c000 Holding some clothes\nc002 Taking clothes\n"})
    with pytest.raises(make_manifests.AnnotationError, match=r"numbers \[1\] are missing"):
        make_manifests.charades(str(ann), str(tmp_path), str(tmp_path / "out"))
