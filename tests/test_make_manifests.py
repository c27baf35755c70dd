"""make_manifests: published annotation files, with their real quirks, -> a manual dir.

Each fixture writes annotations and (empty) video files whose truth is known here
(which file is which class, which is absent), and every check compares the written
manual dir with that truth, also through the builder's own manifest reader. The last
test converts real tiny videos and runs `tfds build` on the result.
"""

import ast
import json
import os
import pathlib
import subprocess
import sys

import pytest
import tensorflow_datasets as tfds

import synthetic
from annotation_files import assert_nothing_written, by_path, jsonl, lines, touch, write
from video_tfrecords import make_manifests
from video_tfrecords.ingest import manifest
from video_tfrecords.make_manifests import __main__ as cli
from video_tfrecords.make_manifests import class_folders, common

REPO = pathlib.Path(__file__).resolve().parent.parent
TFDS = str(pathlib.Path(sys.executable).parent / "tfds")


def built_labels(out) -> dict[str, dict[str, str]]:
    """split -> {video path: class name}, as the builder's manifest reader sees `out`."""
    dataset = manifest.read_dataset(out)
    return {
        split: {e.path: dataset.class_names[dataset.label_id(e)] for e in entries}
        for split, entries in dataset.splits.items()
    }


def raw_manifest(out, name) -> dict[str, str]:
    """{path: class name} straight from the file: the path, a space, an integer id."""
    classes = lines(out, "labels.txt")
    result = {}
    for line in lines(out, name):
        path, label = line.rsplit(" ", 1)
        assert label.isdigit() and os.path.isabs(path), line
        result[path] = classes[int(label)]
    return result


# Kinetics --------------------------------------------------------------------------------

KINETICS_CLASSES = ["abseiling", "air drumming", "drinking, beer", "petting animal (not cat)"]


def kinetics_fixture(
    tmp_path, test_csv="youtube_id,time_start,time_end,split\nt0000000001,0,10,test\n"
):
    """Annotations as published (quoted labels, ids with '-', is_cc) and videos both ways."""
    ann = write(
        tmp_path / "ann",
        {
            "train.csv": "label,youtube_id,time_start,time_end,split,is_cc\n"
            "abseiling,-Xa1b2c3d4e,10,20,train,0\n"  # 2: class folder, full name
            '"petting animal (not cat)",pet00000001,0,10,train,0\n'  # 3: flat, bare id, webm
            '"drinking, beer",--drink0001,5,15,train,0\n'  # 4: flat, full name, mkv
            "abseiling,gone0000001,1,11,train,0\n"  # 5: absent
            "air drumming,air00000001,30,40,train,1\n"  # 6: class folder with a space, avi
            "abseiling,dup00000001,0,10,train,0\n"  # 7: mp4 and webm: the mp4
            "abseiling,both0000001,0,10,train,0\n",  # 8: bare mp4 and full webm: the full name
            "validate.csv": "label,youtube_id,time_start,time_end,split\n"
            '"petting animal (not cat)",-val0000002,3,13,val\n'
            "air drumming,val00000003,0,10,val\n",  # absent
            "test.csv": test_csv,
        },
    )
    videos = tmp_path / "videos"
    truth_train = dict(
        zip(
            touch(
                videos,
                "abseiling/-Xa1b2c3d4e_000010_000020.mp4",
                "pet00000001.webm",
                "--drink0001_000005_000015.mkv",
                "air drumming/air00000001_000030_000040.avi",
                "abseiling/dup00000001_000000_000010.mp4",
                "both0000001_000000_000010.webm",
            ),
            [
                "abseiling",
                "petting animal (not cat)",
                "drinking, beer",
                "air drumming",
                "abseiling",
                "abseiling",
            ],
            strict=True,
        )
    )
    touch(videos, "abseiling/dup00000001_000000_000010.webm", "both0000001.mp4")
    touch(videos, "abseiling/notes.txt", ".hidden/gone0000001.mp4", "gone0000001.mp4.part")
    (truth_val,) = touch(videos, "petting animal (not cat)/-val0000002_000003_000013.mp4")
    return ann, videos, truth_train, {truth_val: "petting animal (not cat)"}


def test_kinetics_quoted_labels_dash_ids_both_names_folders_and_flat(tmp_path):
    ann, videos, truth_train, truth_val = kinetics_fixture(tmp_path)
    out = tmp_path / "out"
    result = make_manifests.kinetics(str(ann), str(videos), str(out))

    assert lines(out, "labels.txt") == KINETICS_CLASSES
    # train found one untrimmed video (pet00000001.webm): the whole split is JSON Lines, that
    # example keeps its CSV span, the trimmed ones are whole; val found trimmed files only.
    train = jsonl(out, "train.jsonl")
    assert {p: o["label"] for p, o in by_path(train).items()} == truth_train
    untrimmed = str(videos / "pet00000001.webm")
    assert by_path(train)[untrimmed] == {
        "label": "petting animal (not cat)",
        "start": 0.0,
        "end": 10.0,
    }
    assert all(set(o) == {"label"} for p, o in by_path(train).items() if p != untrimmed)
    assert train[0]["path"].endswith("-Xa1b2c3d4e_000010_000020.mp4")  # csv order
    assert raw_manifest(out, "val.txt") == truth_val
    assert built_labels(out) == {"train": truth_train, "validation": truth_val}  # both kinds
    assert not (out / "train.txt").exists() and not (out / "test.txt").exists()
    assert lines(out, "missing.txt") == [
        f"{ann}/train.csv:5: gone0000001_000001_000011.* or gone0000001.*",
        f"{ann}/validate.csv:3: val00000003_000000_000010.* or val00000003.*",
    ]
    assert result.splits == {"train": 6, "val": 1}
    assert result.files == {"train": "train.jsonl", "val": "val.txt"}
    assert (result.classes, result.missing, result.unlabeled) == (4, 2, 1)
    assert any("test.csv has no labels" in note for note in result.notes)
    summary = result.summary()
    for text in ("train: 6 examples (6 videos, 1 spans) -> train.jsonl", "val: 1 videos -> val.txt",
                 "classes: 4", "missing: 2", "unlabeled: 1"):  # fmt: skip
        assert text in summary


def test_kinetics_untrimmed_video_twice_with_two_spans_is_two_examples(tmp_path):
    ann = write(
        tmp_path / "ann",
        {
            "train.csv": "label,youtube_id,time_start,time_end,split\n"
            "x,same0000001,0,10,train\ny,same0000001,20,30,train\n"
        },
    )
    (video,) = touch(tmp_path / "v", "same0000001.mp4")
    out = tmp_path / "out"
    make_manifests.kinetics(str(ann), str(tmp_path / "v"), str(out))
    assert jsonl(out, "train.jsonl") == [
        {"path": video, "label": "x", "start": 0.0, "end": 10.0},
        {"path": video, "label": "y", "start": 20.0, "end": 30.0},
    ]


def test_kinetics_no_spans_writes_bare_ids_whole_as_text(tmp_path, capsys):
    """Mirrors that name the trimmed clips ID.mp4: a CSV span would point past their end."""
    ann, videos, truth_train, truth_val = kinetics_fixture(tmp_path)
    out = tmp_path / "out"
    args = ["--annotations", str(ann), "--videos", str(videos), "--out", str(out)]
    assert cli.main(["kinetics", *args, "--no-spans"]) == 0
    assert built_labels(out) == {"train": truth_train, "validation": truth_val}
    assert not (out / "train.jsonl").exists()
    with pytest.raises(SystemExit):
        cli.main(["ucf101", *args, "--no-spans"])
    assert "--no-spans is for kinetics" in capsys.readouterr().err


def test_kinetics_test_csv_with_empty_labels_is_unlabeled(tmp_path):
    test_csv = "label,youtube_id,time_start,time_end,split\n,t0000000001,0,10,test\n,t2,0,10,test\n"
    ann, videos, _, _ = kinetics_fixture(tmp_path, test_csv)
    touch(videos, "t0000000001_000000_000010.mp4")
    result = make_manifests.kinetics(str(ann), str(videos), str(tmp_path / "out"))
    assert result.unlabeled == 2 and "test" not in result.splits
    assert not (tmp_path / "out" / "test.txt").exists()


def test_kinetics_labelled_test_csv_writes_test(tmp_path):
    test_csv = "label,youtube_id,time_start,time_end,split\nabseiling,t0000000001,0,10,test\n"
    ann, videos, _, _ = kinetics_fixture(tmp_path, test_csv)
    (video,) = touch(videos, "t0000000001.mp4")
    out = tmp_path / "out"
    result = make_manifests.kinetics(str(ann), str(videos), str(out))
    assert jsonl(out, "test.jsonl") == [
        {"path": video, "label": "abseiling", "start": 0.0, "end": 10.0}
    ]
    assert result.unlabeled == 0


def test_kinetics_bad_rows_are_all_reported_with_file_and_line_and_nothing_written(tmp_path):
    ann = write(
        tmp_path / "ann",
        {
            "train.csv": "label,youtube_id,time_start,time_end,split\n"
            "abseiling,aaaaaaaaaaa,0,10,train\n"
            "abseiling,bbbbbbbbbbb,0,10\n"  # 3: a field short
            "abseiling,ccccccccccc,abc,10,train\n"  # 4: not seconds
            ",ddddddddddd,0,10,train\n",  # 5: no label in a labelled file
            "validate.csv": "label,youtube_id,time_start,split\nabseiling,e,0,val\n",  # no end
        },
    )
    touch(tmp_path / "videos", "aaaaaaaaaaa.mp4")
    out = tmp_path / "out"
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.kinetics(str(ann), str(tmp_path / "videos"), str(out))
    text = str(error.value)
    for where in ("train.csv:3:", "train.csv:4:", "train.csv:5:", "validate.csv:1:"):
        assert f"{ann}/{where}" in text
    assert len(error.value.problems) == 4
    assert_nothing_written(out)


def test_kinetics_without_csvs_names_the_folder(tmp_path):
    (tmp_path / "ann").mkdir()
    with pytest.raises(make_manifests.AnnotationError, match=r"train\.csv"):
        make_manifests.kinetics(str(tmp_path / "ann"), str(tmp_path), str(tmp_path / "out"))
    assert_nothing_written(tmp_path / "out")


def test_one_name_in_two_folders_is_an_error_naming_both(tmp_path):
    ann = write(
        tmp_path / "ann",
        {"train.csv": "label,youtube_id,time_start,time_end,split\nx,tie00000001,0,10,train\n"},
    )
    a, b = touch(tmp_path / "v", "a/tie00000001.mp4", "b/tie00000001.mp4")
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.kinetics(str(ann), str(tmp_path / "v"), str(tmp_path / "out"))
    assert f"{ann}/train.csv:2:" in str(error.value)
    assert a in str(error.value) and b in str(error.value)


def test_one_file_for_two_annotations_is_an_error(tmp_path):
    ann = write(
        tmp_path / "ann",
        {
            "train.csv": "label,youtube_id,time_start,time_end,split\n"
            "x,same0000001,0,10,train\ny,same0000001,0,10,train\n"
        },
    )
    touch(tmp_path / "v", "same0000001_000000_000010.mp4")
    with pytest.raises(
        make_manifests.AnnotationError, match=r"train.csv:3: .* already the video of .*train.csv:2"
    ):
        make_manifests.kinetics(str(ann), str(tmp_path / "v"), str(tmp_path / "out"))


def test_no_video_found_at_all_is_an_error(tmp_path):
    ann, _, _, _ = kinetics_fixture(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(make_manifests.AnnotationError, match="none of the 9 annotated videos"):
        make_manifests.kinetics(str(ann), str(tmp_path / "empty"), str(tmp_path / "out"))


def test_a_manifest_left_in_out_that_would_be_built_too_is_refused(tmp_path):
    ann, videos, _, _ = kinetics_fixture(tmp_path)
    out = write(tmp_path / "out", {"test.txt": "old.mp4 0\n"})
    with pytest.raises(make_manifests.AnnotationError, match=r"test\.txt"):
        make_manifests.kinetics(str(ann), str(videos), str(out))
    assert os.listdir(out) == ["test.txt"]


def test_rerun_replaces_the_files_and_leaves_no_staging_folder(tmp_path):
    ann, videos, truth_train, _ = kinetics_fixture(tmp_path)
    out = tmp_path / "out"
    make_manifests.kinetics(str(ann), str(videos), str(out))
    make_manifests.kinetics(str(ann), str(videos), str(out))
    assert sorted(os.listdir(out)) == [
        "dropped.txt",
        "labels.txt",
        "missing.txt",
        "train.jsonl",
        "val.txt",
    ]
    assert {p: o["label"] for p, o in by_path(jsonl(out, "train.jsonl")).items()} == truth_train


# UCF101 ----------------------------------------------------------------------------------


def ucf_fixture(tmp_path):
    """ucfTrainTestlist as published: CRLF, 1-based ids, HandstandPushups vs HandStand."""
    ann = write(
        tmp_path / "ucfTrainTestlist",
        {
            "classInd.txt": "1 ApplyEyeMakeup\n2 HandstandPushups\n3 YoYo\n",
            "trainlist01.txt": "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi 1\n"
            "HandstandPushups/v_HandStandPushups_g08_c01.avi 2\n"
            "YoYo/v_YoYo_g09_c02.avi 3\n"
            "YoYo/v_YoYo_g10_c01.avi 3\n",  # 4: absent
            "testlist01.txt": "ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01.avi\n"
            "HandstandPushups/v_HandstandPushups_g01_c01.avi\n",  # the file is v_HandStand...
            "trainlist02.txt": "YoYo/v_YoYo_g01_c01.avi 3\n",
            "testlist02.txt": "YoYo/v_YoYo_g09_c02.avi\n",
        },
        newline="\r\n",
    )
    videos = tmp_path / "UCF-101"
    paths = touch(
        videos,
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g08_c01.avi",
        "HandstandPushups/v_HandStandPushups_g08_c01.avi",
        "YoYo/v_YoYo_g09_c02.avi",
        "ApplyEyeMakeup/v_ApplyEyeMakeup_g01_c01.avi",
        "HandstandPushups/v_HandStandPushups_g01_c01.avi",
        "YoYo/v_YoYo_g01_c01.avi",
    )
    return ann, videos, paths


def test_ucf101_crlf_one_based_ids_case_mismatch_train_and_test(tmp_path):
    ann, videos, paths = ucf_fixture(tmp_path)
    out = tmp_path / "out"
    result = make_manifests.ucf101(str(ann), str(videos), str(out))
    truth_train = {paths[0]: "ApplyEyeMakeup", paths[1]: "HandstandPushups", paths[2]: "YoYo"}
    truth_test = {paths[3]: "ApplyEyeMakeup", paths[4]: "HandstandPushups"}
    assert lines(out, "labels.txt") == ["ApplyEyeMakeup", "HandstandPushups", "YoYo"]
    assert lines(out, "train.txt") == [f"{paths[0]} 0", f"{paths[1]} 1", f"{paths[2]} 2"]
    assert raw_manifest(out, "test.txt") == truth_test
    assert built_labels(out) == {"train": truth_train, "test": truth_test}
    assert not (out / "val.txt").exists()
    (missing,) = lines(out, "missing.txt")
    assert missing.startswith(f"{ann}/trainlist01.txt:4: YoYo/v_YoYo_g10_c01.avi")
    assert result.splits == {"train": 3, "test": 2} and result.missing == 1


def test_ucf101_fold_2_and_a_fold_that_does_not_exist(tmp_path):
    ann, videos, paths = ucf_fixture(tmp_path)
    out = tmp_path / "out"
    make_manifests.ucf101(str(ann), str(videos), str(out), fold=2)
    assert built_labels(out) == {"train": {paths[5]: "YoYo"}, "test": {paths[2]: "YoYo"}}
    with pytest.raises(make_manifests.AnnotationError, match=r"fold 3; folds there: \[1, 2\]"):
        make_manifests.ucf101(str(ann), str(videos), str(tmp_path / "out3"), fold=3)
    assert_nothing_written(tmp_path / "out3")


def test_ucf101_bad_lines_name_file_and_line(tmp_path):
    ann, videos, _ = ucf_fixture(tmp_path)
    write(
        ann,
        {
            "trainlist01.txt": "YoYo/v_YoYo_g09_c02.avi 3\n"
            "YoYo/v_YoYo_g01_c01.avi 7\n"  # 2: no class 7
            "YoYo/v_YoYo_g02_c01.avi\n"  # 3: no class number
            "YoYo/v_YoYo_g03_c01.avi 1\n",  # 4: class 1 is ApplyEyeMakeup
            "testlist01.txt": "Juggling/v_Juggling_g01_c01.avi\n",  # 1: not a class
        },
        newline="\r\n",
    )
    out = tmp_path / "out"
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.ucf101(str(ann), str(videos), str(out))
    assert [p.split(": ")[0] for p in error.value.problems] == [
        f"{ann}/trainlist01.txt:2",
        f"{ann}/trainlist01.txt:3",
        f"{ann}/trainlist01.txt:4",
        f"{ann}/testlist01.txt:1",
    ]
    assert_nothing_written(out)


def test_ucf101_case_is_ignored_only_where_the_format_needs_it(tmp_path):
    """Kinetics ids are case-sensitive: `abc` is not `ABC`."""
    ann = write(
        tmp_path / "ann",
        {"train.csv": "label,youtube_id,time_start,time_end,split\nx,abcdefghijk,0,10,train\n"},
    )
    touch(tmp_path / "v", "ABCDEFGHIJK.mp4")
    with pytest.raises(make_manifests.AnnotationError, match="none of the 1"):
        make_manifests.kinetics(str(ann), str(tmp_path / "v"), str(tmp_path / "out"))


# HMDB51 ----------------------------------------------------------------------------------


def hmdb_fixture(tmp_path):
    """testTrainMulti_7030_splits as published: flags 0/1/2, a trailing space on every line."""
    ann = write(
        tmp_path / "splits",
        {
            "brush_hair_test_split1.txt": "April_09_brush_hair_u_nm_np1_ba_goo_0.avi 1 \n"
            "April_09_brush_hair_u_nm_np1_ba_goo_1.avi 2 \n"
            "April_09_brush_hair_u_nm_np1_ba_goo_2.avi 0 \n",
            "cartwheel_test_split1.txt": ""
            "(Rad)Schlag_die_Bank!_cartwheel_f_cm_np1_le_med_0.avi 2 \n"
            "Bodenturnen_2004_cartwheel_f_cm_np1_le_med_0.avi 1 \n"
            "Bodenturnen_2004_cartwheel_f_cm_np1_le_med_1.avi 1 \n",  # 3: absent
            "brush_hair_test_split2.txt": "April_09_brush_hair_u_nm_np1_ba_goo_2.avi 1 \n",
            "cartwheel_test_split2.txt": "Bodenturnen_2004_cartwheel_f_cm_np1_le_med_0.avi 2 \n",
        },
    )
    videos = tmp_path / "hmdb51_org"
    paths = touch(
        videos,
        "brush_hair/April_09_brush_hair_u_nm_np1_ba_goo_0.avi",  # class folders
        "brush_hair/April_09_brush_hair_u_nm_np1_ba_goo_1.avi",
        "brush_hair/April_09_brush_hair_u_nm_np1_ba_goo_2.avi",
        "(Rad)Schlag_die_Bank!_cartwheel_f_cm_np1_le_med_0.avi",  # flat
        "Bodenturnen_2004_cartwheel_f_cm_np1_le_med_0.avi",
    )
    return ann, videos, paths


def test_hmdb51_flags_trailing_spaces_folders_and_flat(tmp_path):
    ann, videos, paths = hmdb_fixture(tmp_path)
    out = tmp_path / "out"
    result = make_manifests.hmdb51(str(ann), str(videos), str(out))
    assert lines(out, "labels.txt") == ["brush_hair", "cartwheel"]
    truth_train = {paths[0]: "brush_hair", paths[4]: "cartwheel"}
    truth_test = {paths[1]: "brush_hair", paths[3]: "cartwheel"}
    assert raw_manifest(out, "train.txt") == truth_train
    assert raw_manifest(out, "test.txt") == truth_test
    assert built_labels(out) == {"train": truth_train, "test": truth_test}
    (missing,) = lines(out, "missing.txt")
    assert missing.startswith(f"{ann}/cartwheel_test_split1.txt:3: ")
    assert "Bodenturnen_2004_cartwheel_f_cm_np1_le_med_1" in missing
    assert any("1 videos flagged 0" in note for note in result.notes)  # goo_2 in fold 1


def test_hmdb51_fold_2_then_errors(tmp_path):
    ann, videos, paths = hmdb_fixture(tmp_path)
    out = tmp_path / "out"
    make_manifests.hmdb51(str(ann), str(videos), str(out), fold=2)
    assert built_labels(out) == {"train": {paths[2]: "brush_hair"}, "test": {paths[4]: "cartwheel"}}
    with pytest.raises(make_manifests.AnnotationError, match=r"folds there: \[1, 2\]"):
        make_manifests.hmdb51(str(ann), str(videos), str(tmp_path / "o3"), fold=3)
    write(ann, {"brush_hair_test_split1.txt": "a.avi 1 \nb.avi 3 \nc.avi\n"})
    (ann / "cartwheel_test_split2.txt").unlink()
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.hmdb51(str(ann), str(videos), str(tmp_path / "o4"), fold=2)
    assert "cartwheel_test_split2.txt" in str(error.value)
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.hmdb51(str(ann), str(videos), str(tmp_path / "o5"), fold=1)
    assert f"{ann}/brush_hair_test_split1.txt:2:" in str(error.value)
    assert f"{ann}/brush_hair_test_split1.txt:3:" in str(error.value)
    for name in ("o3", "o4", "o5"):
        assert_nothing_written(tmp_path / name)


# Something-Something v2 ------------------------------------------------------------------

SSV2_LABELS = """{
 "Holding something next to something": "1",
 "Moving something up": "2",
 "Putting something on a surface": "0"
}
"""


def json_lines(entries):
    """A JSON list, one entry a line, as the published files are."""
    return "[\n" + ",\n".join(json.dumps(e, separators=(",", ":")) for e in entries) + "\n]\n"


SSV2_TRAIN = json_lines(
    [
        {
            "id": "78687",
            "label": "holding potato next to vicks vaporub bottle",
            "template": "Holding [something] next to [something]",
            "placeholders": ["potato", "vicks vaporub bottle"],
        },
        {
            "id": "42326",
            "label": "putting a cup on a table",
            "template": "Putting [something] on a surface",
            "placeholders": ["a cup"],
        },
        {
            "id": "100904",
            "label": "moving a pen up",
            "template": "Moving [something] up",
            "placeholders": ["a pen"],
        },
    ]
)
SSV2_VALIDATION = """[{"id":"74225","label":"moving a box up","template":"Moving [something] up",
"placeholders":["a box"]}, {"id":"116154","label":"putting x on a surface",
"template":"Putting [something] on a surface","placeholders":["x"]}]"""


def ssv2_fixture(tmp_path):
    ann = write(
        tmp_path / "ann",
        {
            "labels.json": SSV2_LABELS,
            "train.json": SSV2_TRAIN,
            "validation.json": SSV2_VALIDATION,
            "test.json": '[{"id":"1420"},\n{"id":"3192"}]\n',
        },
    )
    videos = tmp_path / "20bn-something-something-v2"
    paths = touch(videos, "78687.webm", "sub/42326.webm", "100904.mp4", "74225.webm", "1420.webm")
    return ann, videos, paths


def test_ssv2_bracketed_templates_ids_from_labels_json_label_less_test(tmp_path):
    ann, videos, paths = ssv2_fixture(tmp_path)
    out = tmp_path / "out"
    result = make_manifests.ssv2(str(ann), str(videos), str(out))
    assert lines(out, "labels.txt") == [
        "Putting something on a surface",
        "Holding something next to something",
        "Moving something up",
    ]
    assert lines(out, "train.txt") == [f"{paths[0]} 1", f"{paths[1]} 0", f"{paths[2]} 2"]
    assert built_labels(out) == {
        "train": {
            paths[0]: "Holding something next to something",
            paths[1]: "Putting something on a surface",
            paths[2]: "Moving something up",
        },
        "validation": {paths[3]: "Moving something up"},
    }
    assert lines(out, "missing.txt") == [f"{ann}/validation.json:2: 116154.*"]
    assert not (out / "test.txt").exists()
    assert result.unlabeled == 2 and result.splits == {"train": 3, "val": 1}


def test_ssv2_unknown_template_and_bad_json_name_file_and_line(tmp_path):
    ann, videos, _ = ssv2_fixture(tmp_path)
    train = SSV2_TRAIN.replace("Moving [something] up", "Moving [something] sideways")
    write(ann, {"train.json": train, "validation.json": '[{"id": "1"},\n{"id" "2"}]'})
    out = tmp_path / "out"
    with pytest.raises(make_manifests.AnnotationError) as error:
        make_manifests.ssv2(str(ann), str(videos), str(out))
    assert [p.split(": ")[0] for p in error.value.problems] == [
        f"{ann}/train.json:4",
        f"{ann}/validation.json:2",
    ]
    assert "Moving [something] sideways" in error.value.problems[0]
    assert_nothing_written(out)


def test_ssv2_with_only_the_label_less_test_list_is_an_error(tmp_path):
    ann, videos, _ = ssv2_fixture(tmp_path)
    (ann / "train.json").unlink()
    (ann / "validation.json").unlink()
    with pytest.raises(make_manifests.AnnotationError, match=r"label no video \(2 unlabeled\)"):
        make_manifests.ssv2(str(ann), str(videos), str(tmp_path / "out"))
    assert_nothing_written(tmp_path / "out")


# Class folders ---------------------------------------------------------------------------


def folder_fixture(root):
    """ROOT/CLASS/*: 10 cat, 5 "dog house" (one in a subfolder), a stray video, a text file."""
    cats = touch(root, *[f"cat/c{i:02d}.mp4" for i in range(10)])
    dogs = touch(root, *[f"dog house/d{i}.webm" for i in range(4)], "dog house/sub/d4.mkv")
    touch(root, "stray.mp4", "cat/readme.txt", "empty/.keep")
    return cats, dogs


def test_folders_without_split_folders_all_train(tmp_path):
    cats, dogs = folder_fixture(tmp_path / "root")
    out = tmp_path / "out"
    result = make_manifests.folders(str(tmp_path / "root"), str(out))
    assert lines(out, "labels.txt") == ["cat", "dog house"]
    truth = {**dict.fromkeys(cats, "cat"), **dict.fromkeys(dogs, "dog house")}
    assert built_labels(out) == {"train": truth}
    assert lines(out, "missing.txt") == []
    assert result.unlabeled == 1 and result.splits == {"train": 15}


def test_folders_stratified_split_is_exact_per_class_and_reproducible_by_seed(tmp_path):
    cats, dogs = folder_fixture(tmp_path / "root")
    splits = {}
    for seed, name in [(3, "a"), (3, "b"), (4, "c")]:
        out = tmp_path / name
        make_manifests.folders(str(tmp_path / "root"), str(out), val=0.2, test=0.2, seed=seed)
        splits[name] = built_labels(out)
    assert splits["a"] == splits["b"]
    assert splits["a"] != splits["c"]
    for split in splits.values():
        for videos, name, counts in [(cats, "cat", (6, 2, 2)), (dogs, "dog house", (3, 1, 1))]:
            parts = [
                {p for p, c in split[s].items() if c == name}
                for s in ("train", "validation", "test")
            ]
            assert tuple(map(len, parts)) == counts
            assert set().union(*parts) == set(videos)  # each video in exactly one split


def test_stratified_split_of_a_class_does_not_depend_on_the_others():
    paths = [f"/v/{i}.mp4" for i in range(20)]
    first = class_folders.stratified(paths, "cat", 0.1, 0.25, seed=7)
    assert first == class_folders.stratified(list(reversed(paths)), "cat", 0.1, 0.25, seed=7)
    assert [len(first[s]) for s in ("train", "val", "test")] == [13, 2, 5]


def test_folders_with_split_folders(tmp_path):
    root = tmp_path / "root"
    train = touch(root, "train/cat/a.mp4", "train/dog/b.mp4")
    val = touch(root, "val/dog/c.mp4")
    test = touch(root, "test/cat/d.mp4", "test/zebra/e.mov")
    out = tmp_path / "out"
    make_manifests.folders(str(root), str(out))
    assert lines(out, "labels.txt") == ["cat", "dog", "zebra"]
    assert built_labels(out) == {
        "train": {train[0]: "cat", train[1]: "dog"},
        "validation": {val[0]: "dog"},
        "test": {test[0]: "cat", test[1]: "zebra"},
    }
    with pytest.raises(make_manifests.AnnotationError, match="there are splits"):
        make_manifests.folders(str(root), str(tmp_path / "o2"), val=0.1)
    touch(root, "other/x.mp4")
    with pytest.raises(make_manifests.AnnotationError, match="use one layout"):
        make_manifests.folders(str(root), str(tmp_path / "o3"))


def test_out_inside_the_videos_folder_is_not_a_class_or_split_on_a_rerun(tmp_path):
    root, out = tmp_path / "root", tmp_path / "root" / "manifests"
    truth = dict(zip(touch(root, "train/cat/a.mp4", "test/dog/b.mp4"), ["cat", "dog"], strict=True))
    for _ in range(2):
        result = make_manifests.folders(str(root), str(out))
    assert result.splits == {"train": 1, "test": 1} and result.notes == ()
    assert {**raw_manifest(out, "train.txt"), **raw_manifest(out, "test.txt")} == truth


def test_videos_inside_the_manual_dir_are_named_relative_to_it_so_it_moves_whole(tmp_path):
    out = tmp_path / "manual"
    touch(out / "videos", "cat/a.mp4", "dog/b c.mp4")
    make_manifests.folders(str(out / "videos"), str(out))
    assert lines(out, "train.txt") == ["videos/cat/a.mp4 0", "videos/dog/b c.mp4 1"]
    moved = tmp_path / "another disk" / "manual"
    moved.parent.mkdir()
    out.rename(moved)
    truth = {"train": {"videos/cat/a.mp4": "cat", "videos/dog/b c.mp4": "dog"}}
    assert built_labels(moved) == truth
    for entries in manifest.read_dataset(moved).splits.values():
        assert all(manifest.resolve(moved, e.path).is_file() for e in entries)
    # Videos outside the manual dir: absolute paths (raw_manifest checks).
    make_manifests.folders(str(moved / "videos"), str(tmp_path / "out"))
    assert set(raw_manifest(tmp_path / "out", "train.txt")) == {
        str(moved / "videos" / "cat" / "a.mp4"),
        str(moved / "videos" / "dog" / "b c.mp4"),
    }


def test_integer_class_names_keep_their_own_ids(tmp_path):
    """Folders 0..11 sorted as text would put "10" at id 2, and the builder would read label 2
    as the class named "2"."""
    root = tmp_path / "root"
    truth = {touch(root, f"{i}/v.mp4")[0]: str(i) for i in range(12)}
    truth.update({touch(root, "other/v.mp4")[0]: "other"})
    out = tmp_path / "out"
    make_manifests.folders(str(root), str(out))
    assert lines(out, "labels.txt") == [str(i) for i in range(12)] + ["other"]
    assert built_labels(out) == {"train": truth}


def test_class_names_the_builder_would_misread_are_refused():
    assert common.ordered_classes(["b", "1", "a"]) == ["a", "1", "b"]
    assert common.class_problems(["a", "1", "b"], "x") == []
    (problem,) = common.class_problems(["1", "a"], "x")
    assert "label 1" in problem
    assert len(common.class_problems(["a ", "", "a\nb", "c", "c"], "x")) == 4


# Finding videos, the command line, the package ------------------------------------------


def test_extension_preference_and_exact_path_rule(tmp_path):
    paths = touch(tmp_path, "x/v.webm", "y/v.MP4", "z/v.avi", "w/u.mkv", "q/u.mkv")
    index = common.VideoIndex(str(tmp_path))
    assert index.find(common.Annotation("f:1", "train", 0, ("v",))) == [paths[1]]
    assert index.find(common.Annotation("f:1", "train", 0, ("v",), ext="avi")) == [paths[2]]
    assert index.find(common.Annotation("f:1", "train", 0, ("v",), "x/v.webm")) == [paths[0]]
    assert sorted(index.find(common.Annotation("f:1", "train", 0, ("u",)))) == sorted(paths[3:])
    assert index.find(common.Annotation("f:1", "train", 0, ("V",))) == []


def test_command_line_summary_errors_and_exit_codes(tmp_path):
    ann, videos, _, _ = kinetics_fixture(tmp_path)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "video_tfrecords.make_manifests", *args],
            capture_output=True, text=True, env=env, check=False, timeout=120,
        )  # fmt: skip

    ok = run("kinetics", "--annotations", str(ann), "--videos", str(videos), "--out", str(out))
    assert ok.returncode == 0, ok.stderr
    for text in ("train: 6 examples", "val: 1 videos", "classes: 4", "missing: 2", "unlabeled: 1"):
        assert text in ok.stdout
    assert jsonl(out, "train.jsonl")
    write(ann, {"train.csv": "label,youtube_id,time_start,time_end,split\nx,y,z,0,train\n"})
    bad = run("kinetics", "--annotations", str(ann), "--videos", str(videos), "--out", str(out))
    assert bad.returncode == 1 and f"{ann}/train.csv:2:" in bad.stderr
    usage = run("folders", "--annotations", str(ann), "--videos", str(videos), "--out", str(out))
    assert usage.returncode == 2 and "no --annotations" in usage.stderr


def test_the_subpackage_imports_only_the_standard_library():
    package = REPO / "video_tfrecords" / "make_manifests"
    for module in package.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or name.startswith(
                    ("video_tfrecords.make_manifests", "video_tfrecords.ingest.manifest")
                ), f"{module.name} imports {name}"  # the builder's own manifest rules


# Real videos through `tfds build` -------------------------------------------------------


def test_real_videos_converted_then_built_with_tfds(tmp_path):
    ann = write(
        tmp_path / "kinetics400",
        {
            "train.csv": "label,youtube_id,time_start,time_end,split\n"
            '"petting animal (not cat)",-pet0000001,0,10,train\n'
            "abseiling,abs00000001,4,14,train\n"
            "abseiling,abs00000002,0,10,train\n"
            "abseiling,gone0000001,0,10,train\n",
            "validate.csv": "label,youtube_id,time_start,time_end,split\n"
            '"petting animal (not cat)",val00000001,0,10,val\n',
        },
    )
    videos = tmp_path / "videos"
    truth = {}
    for seed, (name, label) in enumerate(
        [
            ("petting animal (not cat)/-pet0000001_000000_000010.mp4", "petting animal (not cat)"),
            ("abseiling/abs00000001_000004_000014.mp4", "abseiling"),
            ("abs00000002_000000_000010.mp4", "abseiling"),  # trimmed: a text manifest
            ("val00000001_000000_000010.mp4", "petting animal (not cat)"),
        ]
    ):
        path = synthetic.write_video(
            str(videos / name), synthetic.moving_frames(3, 32, 48, seed), fps=10
        )
        truth[path] = label
    out, data_dir = tmp_path / "manual", tmp_path / "data"
    result = make_manifests.kinetics(str(ann), str(videos), str(out))
    assert result.splits == {"train": 3, "val": 1} and result.missing == 1

    built = subprocess.run(
        [TFDS, "build", "video_tfrecords", f"--manual_dir={out}", f"--data_dir={data_dir}",
         "--config=default"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    builder = tfds.builder("video_tfrecords", config="default", data_dir=str(data_dir))
    names = builder.info.features["label"].names
    assert names == ["abseiling", "petting animal (not cat)"]
    seen = {}
    for split in ("train", "validation"):
        for example in tfds.as_numpy(builder.as_dataset(split=split)):
            seen[example["filename"].decode()] = names[example["label"]]
            assert example["video"].shape == (3, 32, 48, 3)
    assert seen == truth
