"""Finding any prepared TFDS dataset (with or without configs) and reading what TFDS wrote.

The datasets here are written by TFDS's own builders, so the layout is TFDS's:
data_dir/name/config/version, or data_dir/name/version without configs.
"""

import os

import numpy as np
import pytest
import tensorflow_datasets as tfds

from video_tfrecords.records.dataset_files import (
    find_dataset_dir,
    read_features,
    read_info,
    read_label_names,
    split_shards,
)
from video_tfrecords.records.example_parser import parse_example
from video_tfrecords.records.split_reader import SplitReader

NUM_VIDEOS = 3


class TinyVideos(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Three tiny JPEG videos, in a dataset without configs."""

    name = "tiny_videos"
    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        features = {
            "video": tfds.features.Video(shape=(None, 8, 8, 3), encoding_format="jpeg"),
            "label": tfds.features.ClassLabel(names=["even", "odd"]),
            "filename": tfds.features.Text(),
        }
        return tfds.core.DatasetInfo(builder=self, features=tfds.features.FeaturesDict(features))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples()}

    def _generate_examples(self):
        rng = np.random.default_rng(0)
        for i in range(NUM_VIDEOS):
            frames = rng.integers(0, 256, (4 + i, 8, 8, 3), dtype=np.uint8)
            yield i, {"video": frames, "label": i % 2, "filename": f"video_{i}.mp4"}


class TinyConfigVideos(TinyVideos, skip_registration=True):
    """The same videos, in a dataset with configs."""

    name = "tiny_config_videos"
    BUILDER_CONFIGS = [tfds.core.BuilderConfig(name="a"), tfds.core.BuilderConfig(name="b")]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tfds")
    TinyVideos(data_dir=str(folder)).download_and_prepare()
    TinyConfigVideos(data_dir=str(folder), config="b").download_and_prepare()
    return folder


def test_a_dataset_without_configs_is_found_with_config_none(data_dir):
    expected = str(data_dir / "tiny_videos" / "1.0.0")
    assert find_dataset_dir(data_dir, name="tiny_videos") == expected
    assert find_dataset_dir(data_dir, None, "1.0.0", name="tiny_videos") == expected
    with pytest.raises(FileNotFoundError, match="No version 2.0.0 of tiny_videos .* 1.0.0"):
        find_dataset_dir(data_dir, version="2.0.0", name="tiny_videos")
    with pytest.raises(FileNotFoundError, match="tiny_videos in .* has no configs"):
        find_dataset_dir(data_dir, "default", name="tiny_videos")


def test_a_dataset_with_configs_is_found_by_name_and_config(data_dir):
    expected = str(data_dir / "tiny_config_videos" / "b" / "1.0.0")
    assert find_dataset_dir(data_dir, "b", name="tiny_config_videos") == expected
    with pytest.raises(FileNotFoundError, match="No prepared config 'a' .* prepared configs: b"):
        find_dataset_dir(data_dir, "a", name="tiny_config_videos")
    # Without a config: the builder's default ('a', as tfds.load picks), which is not prepared.
    with pytest.raises(FileNotFoundError, match="No prepared config 'a' .* prepared configs: b"):
        find_dataset_dir(data_dir, name="tiny_config_videos")
    with pytest.raises(FileNotFoundError, match="No version 2.0.0 of tiny_config_videos/b in"):
        find_dataset_dir(data_dir, "b", "2.0.0", name="tiny_config_videos")


def test_a_missing_dataset_says_how_to_build_it(data_dir):
    missing = r"No prepared other dataset in .*`tfds build other --data_dir="
    with pytest.raises(FileNotFoundError, match=missing):
        find_dataset_dir(data_dir, name="other")
    with pytest.raises(FileNotFoundError, match="`tfds build video_tfrecords --manual_dir=..."):
        find_dataset_dir(data_dir, "default")


def test_reads_the_files_tfds_wrote(data_dir):
    folder = find_dataset_dir(data_dir, name="tiny_videos")
    info = read_info(folder)
    assert info["name"] == "tiny_videos"
    shards = split_shards(folder, "train", info)
    assert shards.file_format == "tfrecord" and sum(shards.lengths) == NUM_VIDEOS
    assert all(os.path.isfile(path) for path in shards.paths)
    features = read_features(folder)
    assert features["video"].kind == "Video" and features["filename"].kind == "Text"
    assert features["label"].is_scalar and not features["video"].is_scalar
    assert read_label_names(folder) == ["even", "odd"]
    reader = SplitReader(shards)
    names = sorted(bytes(parse_example(reader.read(i))["filename"][0]) for i in range(NUM_VIDEOS))
    assert names == [f"video_{i}.mp4".encode() for i in range(NUM_VIDEOS)]
