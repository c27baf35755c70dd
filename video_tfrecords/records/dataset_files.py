"""Finding a prepared TFDS dataset and reading what TFDS wrote about it, without TensorFlow.

TFDS (which loads no TensorFlow either) is imported only where it is used, when a reader finds
its dataset: a pickled reader (a spawned DataLoader worker) does not load it at all.

TFDS's own readers (`tfds.data_source`, `builder_from_directory`) build the
features' decoders, and the Video feature needs TensorFlow. This module reads
the files TFDS writes next to the shards instead: `dataset_info.json` for the
splits and shards, `features.json` for the features, `*.labels.txt` for class
names, and finds the dataset's folder the way `tfds.load` does.
"""

from __future__ import annotations

import dataclasses
import json
import os

from video_tfrecords.records.schema import DATASET_NAME

__all__ = [
    "FILE_FORMATS",
    "Feature",
    "Shards",
    "default_config",
    "default_data_dir",
    "find_dataset_dir",
    "index_range",
    "read_built_from",
    "read_features",
    "read_info",
    "read_label_names",
    "split_shards",
]

FILE_FORMATS = ("tfrecord", "array_record")
BUILT_FROM = "built_from.json"  # what the build was made from (ingest/provenance.py writes it)


def default_data_dir() -> str:
    """TFDS's default data dir (TFDS_DATA_DIR, else ~/tensorflow_datasets), as tfds.load uses."""
    import tensorflow_datasets as tfds

    return tfds.core.constants.get_default_data_dir()


def _subfolders(path: str) -> list[str]:
    return sorted(e.name for e in os.scandir(path) if e.is_dir()) if os.path.isdir(path) else []


def _versions(config_dir: str) -> list:
    """The complete versions prepared in a folder (those with a dataset_info.json), as TFDS's
    `Version`s."""
    import tensorflow_datasets as tfds

    versions = []
    for name in _subfolders(config_dir):
        if os.path.isfile(os.path.join(config_dir, name, "dataset_info.json")):
            try:
                versions.append(tfds.core.Version(name))
            except ValueError:
                continue  # TFDS's "incomplete.*" folders of a build in progress
    return sorted(versions)


def default_config(name: str, dataset_root: str | None = None) -> str | None:
    """The config tfds.load picks for `name`: the registered builder's first, else the default
    that TFDS's build wrote in `dataset_root/.config/metadata.json` (a reader that never
    imported the builder); None for a dataset without configs."""
    import tensorflow_datasets as tfds

    try:
        configs = tfds.builder_cls(name).BUILDER_CONFIGS
    except tfds.core.DatasetNotFoundError:
        path = os.path.join(dataset_root or "", ".config", "metadata.json")
        if dataset_root is None or not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            return json.load(f).get("default_config_name")
    return configs[0].name if configs else None


def find_dataset_dir(
    data_dir: str | os.PathLike | None,
    config: str | None = None,
    version: str | None = None,
    *,
    name: str = DATASET_NAME,
) -> str:
    """The folder of a prepared dataset, as tfds.load finds it: data_dir/name/config/version.

    `config`: a name or a BuilderConfig; None: the builder's first config, as tfds.load
    picks (none for a dataset without configs, which TFDS writes as data_dir/name/version).
    Without `version`, the latest complete version present. Errors say what exists.
    """
    data_dir = os.path.expanduser(os.fspath(data_dir or default_data_dir()))
    dataset_dir = os.path.join(data_dir, name)
    if config is None:
        config = default_config(name, dataset_dir)
    config = getattr(config, "name", config)
    configs = [c for c in _subfolders(dataset_dir) if _versions(os.path.join(dataset_dir, c))]
    if configs:
        if config not in configs:
            raise FileNotFoundError(
                f"No prepared config {config!r} of {name} in {dataset_dir}; "
                f"prepared configs: {', '.join(configs)}."
            )
        folder, label = os.path.join(dataset_dir, config), f"{name}/{config}"
    else:
        folder, label = dataset_dir, name
        if not _versions(folder):
            manual = " --manual_dir=..." if name == DATASET_NAME else ""
            raise FileNotFoundError(
                f"No prepared {name} dataset in {data_dir} (nothing in {dataset_dir}). "
                f"Build one with `tfds build {name}{manual} --data_dir={data_dir}`."
            )
        if config is not None:
            raise FileNotFoundError(
                f"{name} in {dataset_dir} has no configs (its versions are right under it); "
                f"ask for config None instead of {config!r}."
            )
    versions = _versions(folder)
    if version is None:
        chosen = versions[-1]
    else:
        matches = [v for v in versions if str(v) == str(version)]
        if not matches:
            listed = ", ".join(map(str, versions))
            raise FileNotFoundError(
                f"No version {version} of {label} in {dataset_dir}; prepared versions: {listed}."
            )
        chosen = matches[0]
    return os.path.join(folder, str(chosen))


def read_info(dataset_dir: str) -> dict:
    """The parsed dataset_info.json of a prepared dataset folder."""
    path = os.path.join(dataset_dir, "dataset_info.json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise FileNotFoundError(f"Cannot read the dataset info {path}: {e}") from e


def read_built_from(dataset_dir: str) -> dict | None:
    """What the dataset in `dataset_dir` was built from: its manifests' lines, each video's
    file, size and time, the config, the manual dir (None for a build that kept no record)."""
    path = os.path.join(dataset_dir, BUILT_FROM)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None


@dataclasses.dataclass(frozen=True)
class Shards:
    """The files of one split, in TFDS's read order, with their number of examples."""

    split: str
    file_format: str
    paths: tuple[str, ...]
    lengths: tuple[int, ...]


def split_shards(dataset_dir: str, split: str, info: dict | None = None) -> Shards:
    """The shard files of `split`, named as TFDS names them; an error lists the splits."""
    import tensorflow_datasets as tfds

    info = info if info is not None else read_info(dataset_dir)
    splits = {s["name"]: s for s in info.get("splits", [])}
    if split not in splits:
        raise ValueError(
            f"No split {split!r} in {dataset_dir}; splits: {', '.join(splits) or 'none'}."
        )
    file_format = info.get("fileFormat") or "tfrecord"
    if file_format not in FILE_FORMATS:
        raise ValueError(
            f"{dataset_dir} is stored as {file_format!r}; readable formats: {FILE_FORMATS}."
        )
    lengths = tuple(int(n) for n in splits[split].get("shardLengths", []))
    template = tfds.core.ShardedFileTemplate(
        data_dir=tfds.core.Path(dataset_dir),
        template=splits[split].get("filepathTemplate")
        or "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}",
        dataset_name=info.get("name", DATASET_NAME),
        split=split,
        filetype_suffix=file_format,
    )
    paths = tuple(os.fspath(p) for p in template.sharded_filepaths(len(lengths)))
    return Shards(split, file_format, paths, lengths)


@dataclasses.dataclass(frozen=True)
class Feature:
    """What features.json says about one feature: its TFDS class, dtype and shape."""

    kind: str  # TFDS class name: "Video", "ClassLabel", "Text", "Scalar", "Tensor", ...
    dtype: str | None = None
    shape: tuple[int, ...] | None = None

    @property
    def is_scalar(self) -> bool:
        """Whether an example holds one value of it (a label, a string, a number)."""
        return self.kind in ("ClassLabel", "Text") or (
            self.kind in ("Scalar", "Tensor") and self.shape == ()
        )


def read_features(dataset_dir: str) -> dict[str, Feature]:
    """The top-level features of a prepared dataset, from its features.json."""
    path = os.path.join(dataset_dir, "features.json")
    try:
        with open(path, encoding="utf-8") as f:
            features = json.load(f)["featuresDict"]["features"]
    except (OSError, ValueError, KeyError) as e:
        raise FileNotFoundError(f"Cannot read the features of {path}: {e!r}") from e
    parsed = {}
    for name, feature in features.items():
        kind = feature.get("pythonClassName", "").rsplit(".", 1)[-1]
        tensor = feature.get("tensor") or feature.get("video") or {}  # a Video: its own key
        dims = tensor.get("shape", {}).get("dimensions", [])
        parsed[name] = Feature(kind, tensor.get("dtype"), tuple(int(d) for d in dims))
    return parsed


def read_label_names(dataset_dir: str, feature: str = "label") -> list[str] | None:
    """Class names of a ClassLabel feature (line i = id i), or None if TFDS wrote none."""
    path = os.path.join(dataset_dir, f"{feature}.labels.txt")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return [line for line in f.read().splitlines() if line]


def index_range(length: int, shard_index: int, num_shards: int) -> range:
    """The `shard_index`-th of `num_shards` contiguous, disjoint, near-equal parts of the range."""
    if not (isinstance(num_shards, int) and num_shards > 0):
        raise ValueError(f"num_shards must be a positive int, got {num_shards!r}.")
    if not (isinstance(shard_index, int) and 0 <= shard_index < num_shards):
        raise ValueError(f"shard_index must be an int in [0, {num_shards}), got {shard_index!r}.")
    return range(length * shard_index // num_shards, length * (shard_index + 1) // num_shards)

