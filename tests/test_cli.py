"""The real `tfds build` command on dummy_data/, then `tfds.load` of what it wrote."""

import os
import pathlib
import subprocess
import sys

import tensorflow_datasets as tfds

from conftest import opencv_frames, psnr
from video_tfrecords.config import DATASET_VERSION

REPO = pathlib.Path(__file__).parent.parent
TFDS = str(pathlib.Path(sys.executable).parent / "tfds")


def tfds_build(*args, cwd):
    result = subprocess.run(
        [TFDS, "build", *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def manifest_lines(name):
    text = (REPO / "dummy_data" / name).read_text().splitlines()
    return [line.rsplit(maxsplit=1) for line in text if line and not line.startswith("#")]


def test_tfds_build_from_repo_root_then_tfds_load(tmp_path):
    data_dir = tmp_path / "data"
    tfds_build(
        "video_tfrecords",
        "--manual_dir=dummy_data",
        f"--data_dir={data_dir}",
        "--config=default",
        cwd=REPO,
    )
    for split, manifest in [
        ("train", "train.txt"),
        ("validation", "val.txt"),
        ("test", "test.txt"),
    ]:
        dataset, info = tfds.load(
            "video_tfrecords", split=split, data_dir=str(data_dir), with_info=True
        )
        names = info.features["label"].names
        stored = {e["filename"].decode(): e for e in tfds.as_numpy(dataset)}
        expected = dict(manifest_lines(manifest))
        assert {path: names[e["label"]] for path, e in stored.items()} == expected
        for path, example in stored.items():
            source = opencv_frames(REPO / "dummy_data" / path)
            assert example["video"].shape == source.shape
            assert min(psnr(a, b) for a, b in zip(source, example["video"])) >= 30


def test_json_config_from_the_command_line(tmp_path):
    data_dir = tmp_path / "data"
    config = '{"name": "tiny", "short_side": 24, "max_frames": 3, "num_workers": 1}'
    tfds_build(
        "video_tfrecords",
        "--manual_dir=dummy_data",
        f"--data_dir={data_dir}",
        f"--config={config}",
        cwd=REPO,
    )
    dataset = tfds.load("video_tfrecords/tiny", split="train", data_dir=str(data_dir))
    shapes = sorted(e["video"].shape for e in tfds.as_numpy(dataset))
    assert shapes == [(3, 24, 32, 3), (3, 24, 32, 3), (3, 32, 24, 3)]


def test_imports_flag_works_from_any_directory(tmp_path):
    """Needs the package installed (`pip install -e .`, as the README does)."""
    data_dir = tmp_path / "data"
    tfds_build(
        "video_tfrecords/native",
        "--imports=video_tfrecords",
        f"--manual_dir={REPO / 'dummy_data'}",
        f"--data_dir={data_dir}",
        cwd=tmp_path,
    )
    assert (
        data_dir / "video_tfrecords" / "native" / DATASET_VERSION / "dataset_info.json"
    ).exists()
    assert os.listdir(tmp_path) == ["data"]
