"""Beam generation writes exactly the examples of the plain build, skip records included."""

import pathlib

import numpy as np
import pytest
import tensorflow_datasets as tfds
from apache_beam.options.pipeline_options import PipelineOptions

import synthetic
from video_tfrecords import VideoConfig
from video_tfrecords.ingest import provenance

# Never DirectRunner: in Beam 2.77 it first tries to download a binary.
BEAM_OPTIONS = "runner=FnApiRunner,direct_num_workers=2,direct_running_mode=multi_processing"


def build(manual_dir, data_dir, beam_options=None, mode=None):
    builder = tfds.builder(
        "video_tfrecords",
        data_dir=str(data_dir),
        config=VideoConfig(name="beam_test", short_side=32, num_workers=1),
    )
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(
            manual_dir=str(manual_dir),
            beam_options=beam_options,
            download_mode=mode or tfds.GenerateMode.REUSE_DATASET_IF_EXISTS,
        )
    )
    return builder


def by_filename(builder, split):
    return {e["filename"]: e for e in tfds.as_numpy(builder.as_dataset(split))}


def test_beam_build_equals_plain_build(tmp_path):
    manual = tmp_path / "manual"
    for i in range(6):
        synthetic.write_video(
            str(manual / f"v{i}.mp4"), synthetic.moving_frames(4 + i, 48, 64, seed=i)
        )
    (manual / "bad.mp4").write_bytes(b"not a video at all" * 10)
    (manual / "train.txt").write_text(
        "".join(f"v{i}.mp4 c{i % 2}\n" for i in range(4)) + "bad.mp4 c0\nmissing.mp4 c1\n"
    )
    (manual / "val.txt").write_text("v4.mp4 c0\nv5.mp4 c1\n")

    plain = build(manual, tmp_path / "plain")
    beam = build(
        manual,
        tmp_path / "beam",
        PipelineOptions(flags=[f"--{o}" for o in BEAM_OPTIONS.split(",")]),
    )
    for split in ("train", "validation"):
        a, b = by_filename(plain, split), by_filename(beam, split)
        assert sorted(a) == sorted(b) and a
        for name in a:
            assert a[name]["label"] == b[name]["label"]
            np.testing.assert_array_equal(a[name]["video"], b[name]["video"])
    reloaded = tfds.builder("video_tfrecords/beam_test", data_dir=str(tmp_path / "beam"))
    key = lambda r: (r["split"], r["path"])
    assert sorted(reloaded.info.metadata["skipped"], key=key) == sorted(
        plain.info.metadata["skipped"], key=key
    )
    assert {s["path"] for s in reloaded.info.metadata["skipped"]} == {"bad.mp4", "missing.mp4"}
    assert reloaded.info.splits["train"].num_examples + 2 == 6
    assert not (
        tmp_path / "beam" / "video_tfrecords" / "beam_test" / "1.0.0" / "build_records"
    ).exists()


def test_a_beam_rebuild_refuses_changed_inputs_then_encodes_only_them(tmp_path):
    manual, data_dir = tmp_path / "manual", tmp_path / "beam"
    for i in range(4):
        synthetic.write_video(
            str(manual / f"v{i}.mp4"), synthetic.moving_frames(3 + i, 32, 48, seed=i)
        )
    (manual / "train.txt").write_text("v0.mp4 c0\nv1.mp4 c1\n")
    (manual / "val.txt").write_text("v2.mp4 c0\n")
    options = PipelineOptions(flags=["--runner=FnApiRunner", "--direct_running_mode=in_memory"])
    build(manual, data_dir, options)
    root = pathlib.Path(data_dir) / "downloads" / "video_tfrecords_cache" / "beam_test"
    entries = lambda: {p.parent.name: p.stat().st_mtime_ns for p in root.rglob("done.json")}
    before = entries()
    assert len(before) == 3
    with open(manual / "train.txt", "a") as f:
        f.write("v3.mp4 c1\n")
    with pytest.raises(provenance.StaleDatasetError) as refused:
        build(manual, data_dir, options)
    assert f"  - train.txt: 1 line added: {manual / 'train.txt'}:3: v3.mp4\n" in str(refused.value)
    assert entries() == before
    rebuilt = build(manual, data_dir, options, tfds.GenerateMode.FORCE_REDOWNLOAD)
    assert sum(before.get(k) != t for k, t in entries().items()) == 1
    assert sorted(by_filename(rebuilt, "train")) == [b"v0.mp4", b"v1.mp4", b"v3.mp4"]
