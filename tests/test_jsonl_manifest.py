"""JSON Lines manifests: spans, several labels, segments, captions; problems as FILE:LINE."""

import json
import math

import pytest

from video_tfrecords.ingest import manifest


def write(tmp_path, files):
    for name, content in files.items():
        data = content if isinstance(content, bytes) else content.encode("utf-8")
        (tmp_path / name).write_bytes(data)
    return tmp_path


def lines(*objects) -> str:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects)


def test_every_key_is_read_as_written(tmp_path):
    caption = "Un homme coupe des oignons 🧅 — naïve\u0301"  # emoji, combining accent
    write(
        tmp_path,
        {
            "train.jsonl": lines(
                {"path": "long/v 1.mp4", "label": "cooking", "start": 12.5, "end": 22},
                {
                    "path": "c.mp4",
                    "labels": ["a", "b"],
                    "segments": [
                        {"label": "a", "start": 0.5, "end": 3},
                        {"label": "c", "start": 2, "end": 9.25},
                    ],
                },
                {"path": "m.mp4", "captions": [caption, {"text": "later", "start": 1, "end": 2}]},
            )
        },
    )
    dataset = manifest.read_dataset(tmp_path)
    spanned, tagged, captioned = dataset.splits["train"]
    assert (spanned.path, spanned.label, spanned.span) == ("long/v 1.mp4", "cooking", (12.5, 22.0))
    assert tagged.annotation.labels == ("a", "b") and tagged.label is None
    assert tagged.annotation.segments == (("a", 0.5, 3.0), ("c", 2.0, 9.25))
    assert tagged.span == (0.0, math.inf)
    assert captioned.annotation.captions == ((caption, None, None), ("later", 1.0, 2.0))
    assert dataset.class_names == ["a", "b", "c", "cooking"]
    assert [dataset.label_id(e) for e in (spanned, tagged, captioned)] == [3, -1, -1]
    assert [dataset.ids[name] for name in tagged.labels()] == [0, 1, 0, 2]


def test_every_problem_of_every_line_is_reported_at_once(tmp_path):
    bad = [
        b'{"path": "a.mp4", "label": "cat", "strat": 3}',  # 1: unknown key, a near one
        b'{"path": "b.mp4", "label": "caf\xe9"}',  # 2: Latin-1, not UTF-8
        b'{"path": "c.mp4", "label": "cat", "start": 5, "end": 5}',  # 3
        b'{"path": "d.mp4", "labels": ["cat", "horse"]}',  # 4: horse not in labels.txt
        b'{"path": "e.mp4", "segments": [{"label": "dog", "start": 4, "end": 2}]}',  # 5
        b'["f.mp4", "cat"]',  # 6
        b'{"path": "g.mp4", "label": "cat"',  # 7: cut short
        b'{"path": "h.mp4", "captions": ["\\ud800"]}',  # 8: a lone surrogate
        b'{"path": "", "label": "cat", "end": true}',  # 9: two problems on one line
        b'{"path": "i.mp4", "segments": [{"label": "dog", "start": 1}]}',  # 10: no end
        b"",
        b'{"path": "j.mp4", "label": "cat", "start": -1}',  # 12
    ]
    write(tmp_path, {"labels.txt": "cat\ndog\n", "train.jsonl": b"\n".join(bad) + b"\n"})
    with pytest.raises(manifest.ManifestError) as error:
        manifest.read_dataset(tmp_path)
    where = f"{tmp_path / 'train.jsonl'}:"
    expected = [
        (1, "unknown key 'strat' (did you mean 'start'?)"),
        (2, f"not UTF-8: byte 0xe9 at column {bad[1].index(0xE9) + 1}"),
        (3, '"start" (5) must be before "end" (5)'),
        (4, "label 'horse' is not in labels.txt"),
        (5, 'segments[0]: "start" (4) must be before "end" (2)'),
        (6, "expected a JSON object"),
        (7, "not JSON"),
        (8, "captions is not valid Unicode"),
        (9, '"path" must be a non-empty string'),
        (9, '"end" must be a number of seconds >= 0, got True'),
        (10, "segments[0]: expected an object with keys label, start, end"),
        (12, '"start" must be a number of seconds >= 0, got -1'),
    ]
    problems = sorted(error.value.problems, key=lambda p: int(p[len(where) :].split(":")[0]))
    assert len(problems) == len(expected), problems
    for (line, reason), problem in zip(expected, problems):
        assert problem.startswith(f"{where}{line}: ") and reason in problem, (line, problem)


def test_a_split_with_both_kinds_of_manifest_names_both(tmp_path):
    write(tmp_path, {"train.txt": "a.mp4 cat\n", "train.jsonl": lines({"path": "a.mp4"})})
    with pytest.raises(manifest.ManifestError) as error:
        manifest.read_dataset(tmp_path)
    (problem,) = error.value.problems
    assert str(tmp_path / "train.jsonl") in problem and str(tmp_path / "train.txt") in problem


def test_splits_may_each_have_their_own_kind(tmp_path):
    write(
        tmp_path,
        {"train.jsonl": lines({"path": "a.mp4", "labels": ["1", 3]}), "val.txt": "b.mp4 2\n"},
    )
    dataset = manifest.read_dataset(tmp_path)
    assert dataset.class_names == ["0", "1", "2", "3"]
    assert dataset.label_id(dataset.splits["validation"][0]) == 2
    assert dataset.splits["train"][0].annotation.labels == ("1", "3")


def test_spans_of_one_video_may_repeat_it_but_not_the_same_span(tmp_path):
    write(
        tmp_path,
        {
            "train.jsonl": lines(
                {"path": "v.mp4", "label": "x", "start": 0, "end": 10},
                {
                    "path": "v.mp4",
                    "label": "y",
                    "start": 5,
                    "end": 15,
                },  # overlapping: its own example
                {"path": "v.mp4", "label": "y", "start": 5, "end": 15},
                {"path": "w.mp4", "label": "x"},
                {"path": "w.mp4", "label": "y"},
            )
        },
    )
    with pytest.raises(manifest.ManifestError) as error:
        manifest.read_dataset(tmp_path)
    first, second = error.value.problems
    assert first.endswith("train.jsonl:2 with the same span [5 s, 15 s)") and ":3: " in first
    assert second.endswith("train.jsonl:4") and ":5: 'w.mp4' is already listed" in second


def test_an_empty_jsonl_manifest_says_so(tmp_path):
    write(tmp_path, {"test.jsonl": "\n\n"})
    with pytest.raises(manifest.ManifestError, match=r"test.jsonl:1: the manifest has no video"):
        manifest.read_dataset(tmp_path)


def test_what_make_manifests_charades_writes_reads_back_as_written(tmp_path):
    from test_manifests_charades import ANNOTATIONS, videos_of

    from annotation_files import jsonl
    from video_tfrecords import make_manifests

    videos_of(tmp_path / "videos")
    out = tmp_path / "out"
    make_manifests.charades(str(ANNOTATIONS), str(tmp_path / "videos"), str(out))
    dataset = manifest.read_dataset(out)  # no problem: every key and value is the reader's
    assert set(dataset.splits) == {"train", "validation"}
    for split, name in (("train", "train.jsonl"), ("validation", "val.jsonl")):
        written = jsonl(out, name)
        entries = dataset.splits[split]
        assert [e.path for e in entries] == [o["path"] for o in written]
        for entry, line in zip(entries, written):
            note = entry.annotation
            assert list(note.labels) == line.get("labels", [])
            assert [list(s) for s in note.segments] == [
                [s["label"], s["start"], s["end"]] for s in line.get("segments", [])
            ]
            assert [c for c, _, _ in note.captions] == line.get("captions", [])


def test_one_run_names_the_problems_of_lines_that_have_others(tmp_path):
    """Issue 47: a duplicate and a label inside `segments` were reported only once the other
    problems of their lines were fixed. Every problem a fix would reveal is named at once."""
    bad = [
        {"path": "v/a.mov", "label": "cooking"},  # 1: fine
        {"path": "v/b.mov", "label": "cooking", "start": 2, "end": 1},  # 2
        {"path": "v/a.mov", "label": "cooking", "lable": "x"},  # 3: also a duplicate of 1
        {  # 4: a negative end, and a segment's label not in labels.txt
            "path": "v/c.mov", "end": -3, "segments": [{"label": "cookng", "start": 0, "end": 1}],
        },
        {"path": "v/d.mov", "labels": ["sleeping", 7], "captions": "one"},  # 5: id 7, captions
        {"path": "v/a.mov", "label": "sleping", "start": "0"},  # 6: span unknown: no duplicate
        {"path": "v/a.mov", "label": "sleeping", "strat": 4},  # 7: start misspelt: unknown
        {"path": 3, "label": "dancing"},  # 8: no path, and a label not in labels.txt
    ]  # fmt: skip
    write(tmp_path, {"labels.txt": "cooking\nsleeping\n", "train.jsonl": lines(*bad)})
    with pytest.raises(manifest.ManifestError) as error:
        manifest.read_dataset(tmp_path)
    where = f"{tmp_path / 'train.jsonl'}:"
    expected = [
        (2, '"start" (2) must be before "end" (1)'),
        (3, "unknown key 'lable' (did you mean 'label'?)"),
        (3, f"'v/a.mov' is already listed at {where}1"),
        (4, '"end" must be a number of seconds >= 0, got -3'),
        (4, "label 'cookng' is not in labels.txt (did you mean 'cooking'?)"),
        (5, '"captions" must be a list'),
        (5, "label id 7 out of range: labels.txt has 2 classes"),
        (6, '"start" must be a number of seconds >= 0'),
        (6, "label 'sleping' is not in labels.txt (did you mean 'sleeping'?)"),
        (7, "unknown key 'strat' (did you mean 'start'?)"),
        (8, '"path" must be a non-empty string'),
    ]
    problems = error.value.problems  # in line order
    assert len(problems) == len(expected), "\n".join(problems)
    for (line, reason), problem in zip(expected, problems):
        assert problem.startswith(f"{where}{line}: ") and reason in problem, (line, problem)


@pytest.mark.parametrize("kind", ["jsonl", "txt"])
def test_a_manifest_and_labels_saved_with_a_byte_order_mark_read_as_without(tmp_path, kind):
    bom = "\ufeff".encode()
    body = lines({"path": "a.mp4", "label": "café"}) if kind == "jsonl" else "a.mp4 café\n"
    labels = bom + "x\ncafé\n".encode()
    write(tmp_path, {f"train.{kind}": bom + body.encode(), "labels.txt": labels})
    dataset = manifest.read_dataset(tmp_path)
    (entry,) = dataset.splits["train"]
    assert (entry.path, entry.label, dataset.class_names) == ("a.mp4", "café", ["x", "café"])


@pytest.mark.parametrize("kind", ["jsonl", "txt"])
def test_a_utf16_manifest_is_one_problem_saying_so(tmp_path, kind):
    text = lines({"path": "a.mp4", "label": "x"}) if kind == "jsonl" else "a.mp4 x\nb.mp4 y\n"
    write(tmp_path, {f"train.{kind}": "\ufeff".encode("utf-16-le") + text.encode("utf-16-le")})
    with pytest.raises(manifest.ManifestError) as error:
        manifest.read_dataset(tmp_path)
    (problem,) = error.value.problems
    assert problem.startswith(f"{tmp_path / f'train.{kind}'}:1: the file is UTF-16")
