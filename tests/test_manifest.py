"""Manifest parsing and validation: every problem reported as FILE:LINE: reason."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from video_tfrecords.ingest import manifest


def write(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_path_with_spaces_keeps_everything_before_the_last_field():
    assert manifest.parse_line("clips/rock climbing 01.mp4 abseiling") == (
        "clips/rock climbing 01.mp4",
        "abseiling",
    )
    assert manifest.parse_line("  videos/54838.mp4\t1951  ") == ("videos/54838.mp4", "1951")


@pytest.mark.parametrize("line", ["", "   ", "# a comment", "  # indented comment x 3"])
def test_blank_and_comment_lines_are_ignored(line):
    assert manifest.parse_line(line) is None


def test_line_without_label_is_rejected():
    with pytest.raises(ValueError, match="no label"):
        manifest.parse_line("videos/lonely.mp4")


@pytest.mark.parametrize("line", ["videos/clip 01.mp4", "/data/rock climbing/take 2.MKV"])
def test_a_path_with_spaces_and_no_label_is_not_split_into_path_and_class(line):
    with pytest.raises(ValueError, match="the label is missing"):
        manifest.parse_line(line)


def test_a_missing_label_is_reported_with_its_file_and_line(tmp_path):
    write(tmp_path, {"train.txt": "a.mp4 cat\nvideos/clip 01.mp4\n"})
    with pytest.raises(manifest.ManifestError, match=r"train.txt:2: .*the label is missing"):
        manifest.read_dataset(tmp_path)


def test_labels_that_merely_contain_a_dot_are_labels():
    assert manifest.parse_line("a.mp4 v1.0") == ("a.mp4", "v1.0")
    assert manifest.parse_line("a.mp4 .mp4") == ("a.mp4", ".mp4")  # no file name before the dot


def test_names_become_sorted_unique_classes_across_manifests(tmp_path):
    write(tmp_path, {"train.txt": "a.mp4 zebra\nb.mp4 apple\n", "val.txt": "c.mp4 mango\n"})
    dataset = manifest.read_dataset(tmp_path)
    assert dataset.class_names == ["apple", "mango", "zebra"]
    assert [dataset.label_id(e) for e in dataset.splits["train"]] == [2, 0]
    assert [dataset.label_id(e) for e in dataset.splits["validation"]] == [1]


def test_integer_ids_give_max_plus_one_classes(tmp_path):
    write(tmp_path, {"train.txt": "videos/54838.mp4 1951\nvideos/2.mp4 3\n"})
    dataset = manifest.read_dataset(tmp_path)
    assert len(dataset.class_names) == 1952
    assert dataset.class_names[1951] == "1951"
    assert [dataset.label_id(e) for e in dataset.splits["train"]] == [1951, 3]


def test_labels_file_fixes_ids_and_accepts_names_and_ids(tmp_path):
    write(
        tmp_path,
        {"labels.txt": "zebra\napple\nmango\n", "train.txt": "a.mp4 mango\nb.mp4 0\n# c.mp4 9\n"},
    )
    dataset = manifest.read_dataset(tmp_path)
    assert dataset.class_names == ["zebra", "apple", "mango"]
    assert [dataset.label_id(e) for e in dataset.splits["train"]] == [2, 0]


def test_validation_txt_and_val_txt_both_name_the_validation_split(tmp_path):
    write(tmp_path, {"validation.txt": "a.mp4 x\n"})
    assert list(manifest.read_dataset(tmp_path).splits) == ["validation"]


def test_line_numbers_count_blank_and_comment_lines(tmp_path):
    write(tmp_path, {"train.txt": "# header\n\nvideos/a b.mp4 cat\n"})
    (entry,) = manifest.read_dataset(tmp_path).splits["train"]
    assert (entry.line, entry.path, entry.label) == (3, "videos/a b.mp4", "cat")
    assert entry.where.endswith("train.txt:3")


def test_every_problem_is_reported_at_once_with_file_and_line(tmp_path):
    write(
        tmp_path,
        {
            "labels.txt": "cat\ndog\n",
            "train.txt": "a.mp4 cat\nno_label.mp4\nb.mp4 horse\nc.mp4 7\na.mp4 dog\n",
            "test.txt": "# only a comment\n",
        },
    )
    with pytest.raises(manifest.ManifestError) as error:
        manifest.read_dataset(tmp_path)
    problems = error.value.problems
    message = str(error.value)
    assert len(problems) == 5, message
    assert f"{tmp_path / 'train.txt'}:2: " in message and "no label" in message
    assert f"{tmp_path / 'train.txt'}:3: label 'horse' is not in labels.txt" in message
    assert f"{tmp_path / 'train.txt'}:4: label id 7 out of range" in message
    assert f"{tmp_path / 'train.txt'}:5: 'a.mp4' is already listed at" in message
    assert f"{tmp_path / 'test.txt'}:1: the manifest has no video lines" in message


def test_mixing_names_and_ids_without_labels_file_is_an_error(tmp_path):
    write(tmp_path, {"train.txt": "a.mp4 3\nb.mp4 cat\n"})
    with pytest.raises(manifest.ManifestError, match=r"train.txt:2: label 'cat' is a class name"):
        manifest.read_dataset(tmp_path)


def test_no_manifest_at_all_names_the_expected_files(tmp_path):
    write(tmp_path, {"notes.txt": "hello\n"})
    with pytest.raises(FileNotFoundError, match="train.txt, val.txt, validation.txt, test.txt"):
        manifest.read_dataset(tmp_path)


def test_relative_paths_resolve_under_manual_dir_absolute_paths_stay(tmp_path):
    assert manifest.resolve(tmp_path, "videos/a.mp4") == tmp_path / "videos" / "a.mp4"
    assert str(manifest.resolve(tmp_path, "/data/k400/a.mp4")) == "/data/k400/a.mp4"


# Property-based: any path (spaces and non-ASCII included) and label round-trip.
path_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")),
    min_size=1,
    max_size=40,
).filter(lambda p: p.strip() == p and not p.startswith("#") and p.strip())
label_text = st.from_regex(r"[A-Za-z_\-][A-Za-z0-9_\-]{0,11}", fullmatch=True)  # class names


@given(path=path_text, label=label_text, sep=st.sampled_from([" ", "\t", "   "]))
def test_any_path_and_label_round_trip(path, label, sep):
    assert manifest.parse_line(f"{path}{sep}{label}") == (path, label)


@given(
    lines=st.lists(
        st.tuples(path_text, label_text), min_size=1, max_size=20, unique_by=lambda t: t[0]
    )
)
def test_written_manifest_reads_back_entry_for_entry(tmp_path_factory, lines):
    folder = tmp_path_factory.mktemp("m")
    (folder / "train.txt").write_text("".join(f"{p} {lab}\n" for p, lab in lines), encoding="utf-8")
    dataset = manifest.read_dataset(folder)
    entries = dataset.splits["train"]
    assert [(e.path, e.label) for e in entries] == lines
    assert dataset.class_names == sorted({lab for _, lab in lines})
    assert all(dataset.class_names[dataset.label_id(e)] == e.label for e in entries)


def test_a_label_not_in_labels_txt_suggests_the_nearest_class(tmp_path):
    write(
        tmp_path,
        {
            "labels.txt": "playing guitar\nabseiling\ncatching fish\n",
            "train.txt": "a.mp4 playing_guitar\nb.mp4 Abseiling\nc.mp4 cooking\n",
        },
    )
    with pytest.raises(manifest.ManifestError) as error:
        manifest.read_dataset(tmp_path)
    train = tmp_path / "train.txt"
    assert error.value.problems == [
        f"{train}:1: label 'playing_guitar' is not in labels.txt (did you mean 'playing guitar'?)",
        f"{train}:2: label 'Abseiling' is not in labels.txt (did you mean 'abseiling'?)",
        f"{train}:3: label 'cooking' is not in labels.txt",
    ]


def test_bytes_that_are_not_utf8_are_a_problem_of_their_line_with_the_others(tmp_path):
    (tmp_path / "labels.txt").write_bytes(b"cat\ndo\xe7\n")
    (tmp_path / "train.txt").write_bytes(b"a.mp4 cat\nb\xff.mp4 cat\nc.mp4\nc.mp4 cat\n")
    with pytest.raises(manifest.ManifestError) as error:
        manifest.read_dataset(tmp_path)
    labels, train = tmp_path / "labels.txt", tmp_path / "train.txt"
    assert error.value.problems == [
        f"{labels}:2: not UTF-8: byte 0xe7 at column 3 (unexpected end of data)",
        f"{train}:2: not UTF-8: byte 0xff at column 2 (invalid start byte)",
        f"{train}:3: expected '{{video path}} {{label}}', got 'c.mp4' (no label)",
        f"{train}:4: 'c.mp4' is already listed at {train}:3",
    ]
