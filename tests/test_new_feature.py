"""A stored feature added in the schema (a field of `schema.Example`), and filled where the
build makes a video's values, reaches every reader with no other edit: `source[i]`, `tfds.load`,
`show report` and the typed example a record is read as."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import tensorflow_datasets as tfds

import synthetic
from video_tfrecords import ClipSource, VideoConfig
from video_tfrecords.ingest import encoding
from video_tfrecords.records import example_values, schema
from video_tfrecords.show import report, stored

NAME = "made_up_bits"  # a feature no build stores
LENGTHS = (7, 9)


@pytest.fixture(scope="module")
def builder(tmp_path_factory):
    """Two videos built with `NAME` added to the schema (a field of `schema.Example`), each
    storing its frame count x 3 (a value the test knows, made where the build makes the
    video's other values)."""
    patch = pytest.MonkeyPatch()
    encode_video = encoding.encode_video

    def feature(config):
        return tfds.features.Scalar(np.int32, doc="A test's feature.")

    field = (NAME, "int | None", schema.stored(feature, "int"))
    example = dataclasses.make_dataclass("Example", [field], bases=(schema.Example,), kw_only=True)

    def more_values(task, add):
        summary = encode_video(task, add)
        summary["fields"][NAME] = 3 * summary["parts"][0][schema.SOURCE_NUM_FRAMES]
        return summary

    patch.setattr(schema, "Example", example)
    patch.setattr(encoding, "encode_video", more_values)
    manual = tmp_path_factory.mktemp("new_feature_manual")
    for i, length in enumerate(LENGTHS):
        synthetic.write_video(str(manual / f"v{i}.mp4"), synthetic.moving_frames(length, 32, 48))
    (manual / "train.txt").write_text("".join(f"v{i}.mp4 c{i}\n" for i in range(len(LENGTHS))))
    built = tfds.builder(
        "video_tfrecords",
        data_dir=str(tmp_path_factory.mktemp("new_feature_data")),
        config=VideoConfig(name="new_feature", num_workers=1),
    )
    built.download_and_prepare(download_config=tfds.download.DownloadConfig(manual_dir=str(manual)))
    yield built
    patch.undo()


def expected(filename: str) -> int:
    return 3 * LENGTHS[int(filename.rsplit("v", 1)[1].split(".")[0])]


def test_tfds_load_gives_the_new_feature(builder):
    examples = list(tfds.as_numpy(builder.as_dataset(split="train")))
    assert len(examples) == len(LENGTHS)
    for example in examples:
        assert example[NAME] == expected(example["filename"].decode())


def test_clip_source_gives_the_new_feature(builder):
    source = ClipSource("train", dataset_dir=builder.data_dir, num_frames=2)
    got = {source[i]["filename"]: source[i][NAME] for i in range(len(source))}
    assert got == {name: expected(name) for name in got} and len(got) == len(LENGTHS)
    assert all(isinstance(value, np.int32) for value in got.values())


def test_show_report_lists_the_new_features_values(builder):
    text = report.as_text(report.dataset_report(builder.data_dir))
    values = ", ".join(f"{3 * n} x 1" for n in sorted(LENGTHS, reverse=True))
    row = [line for line in text.splitlines() if line.strip().startswith(f"{NAME}:")]
    assert len(row) == 1 and sorted(row[0].split(": ", 1)[1].split(", ")) == sorted(
        values.split(", ")
    ), text


def test_a_record_read_as_the_typed_example_has_the_new_field(builder):
    records = stored.SplitRecords(builder.data_dir, "train")
    try:
        for i in range(len(records)):
            values = example_values.Values.of(records.reader.read(i), lambda: "a record")
            example = example_values.example_of(values)
            assert getattr(example, NAME) == expected(example.filename)
    finally:
        records.close()
