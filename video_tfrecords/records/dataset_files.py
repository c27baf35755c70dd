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

from video_tfrecords.clips.jpeg import MAX_PIXELS
from video_tfrecords.records.schema import DATASET_NAME
from video_tfrecords.util.errors import CorruptRecordError

__all__ = [
    "FILE_FORMATS",
    "Feature",
    "Shards",
    "default_config",
    "default_data_dir",
    "find_dataset_dir",
    "index_range",
    "read_features",
    "read_info",
    "read_json",
    "read_label_names",
    "read_metadata",
    "split_shards",
]

FILE_FORMATS = ("tfrecord", "array_record")
# The largest JSON or label file read (built_from.json: its own, `built_from.MAX_BYTES`):
# dataset_info.json, a few kB a split; labels, a line a class.
MAX_FILE_BYTES = 256 << 20
MAX_SHARD_RECORDS = 1 << 40  # (a shard is also checked against its file's size when opened)


def _read_text(path: str, limit: int = MAX_FILE_BYTES) -> str:
    """A metadata file's text (UTF-8), refused past `limit` bytes before it is read."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise CorruptRecordError(
                f"{path} is {size} bytes: more than the {limit} a dataset's own "
                "files take; not one TFDS or the build wrote."
            )
        return f.read().decode("utf-8")


def read_json(path: str, kind: type = dict, limit: int = MAX_FILE_BYTES):
    """A JSON file of `kind` (a CorruptRecordError names the file otherwise); ValueError if it
    is not JSON."""
    value = json.loads(_read_text(path, limit))
    if not isinstance(value, kind):
        raise CorruptRecordError(f"{path} holds a JSON {type(value).__name__}, not an object.")
    return value


def _count(value, path: str, what: str, top: int) -> int:
    """A count TFDS wrote (an int, or an int as a string), checked to be 0 to `top`."""
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise CorruptRecordError(f"{path}: {what} is {value!r}, not a count from 0 to {top}.")
    return value


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
        try:
            name = read_json(path).get("default_config_name")
        except ValueError as e:
            raise CorruptRecordError(f"Cannot read {path}: {e}") from None
        if name is not None and not isinstance(name, str):
            raise CorruptRecordError(f"{path}: default_config_name is {name!r}, not a name.")
        return name
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
    """The parsed dataset_info.json of a prepared dataset folder: what a reader takes from it
    (name, file format, each split's name, file template and shard lengths) checked."""
    path = os.path.join(dataset_dir, "dataset_info.json")
    try:
        info = read_json(path)
    except CorruptRecordError:
        raise
    except (OSError, ValueError) as e:
        raise FileNotFoundError(f"Cannot read the dataset info {path}: {e}") from e
    for key in ("name", "fileFormat"):
        if not isinstance(info.get(key, ""), str):
            raise CorruptRecordError(f"{path}: {key} is {info[key]!r}, not a string.")
    splits = info.get("splits", [])
    if not isinstance(splits, list) or not all(isinstance(s, dict) for s in splits):
        raise CorruptRecordError(f"{path}: splits is not a list of objects.")
    for number, split in enumerate(splits):
        where = f"splits[{number}]"
        for key in ("name", "filepathTemplate"):
            if not isinstance(split.get(key, ""), str):
                raise CorruptRecordError(f"{path}: {where}.{key} is {split[key]!r}, not a string.")
        lengths = split.get("shardLengths", [])
        if not isinstance(lengths, list) or len(lengths) > 1 << 20:
            raise CorruptRecordError(f"{path}: {where}.shardLengths is not a list of shards.")
        for shard, length in enumerate(lengths):
            _count(length, path, f"{where}.shardLengths[{shard}]", MAX_SHARD_RECORDS)
        _count(split.get("numBytes", 0), path, f"{where}.numBytes", 1 << 62)
    return info


def read_metadata(dataset_dir: str) -> dict:
    """The dataset's metadata.json (the build's skips and notes: lists of {split, path,
    reason}, each a string); empty for a dataset without one."""
    path = os.path.join(dataset_dir, "metadata.json")
    try:
        metadata = read_json(path)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        if isinstance(e, CorruptRecordError):
            raise
        raise CorruptRecordError(f"Cannot read {path}: {e}") from None
    for kind in ("skipped", "notes"):
        records = metadata.get(kind, [])
        if not isinstance(records, list) or not all(
            isinstance(r, dict) and all(isinstance(r.get(k, ""), str) for k in _RECORD_KEYS)
            for r in records
        ):
            raise CorruptRecordError(
                f"{path}: {kind} is not a list of {{split, path, reason}} records of strings."
            )
    return metadata


_RECORD_KEYS = ("split", "path", "reason")


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
    lengths = tuple(int(n) for n in splits[split].get("shardLengths", []))  # (read_info's)
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
    num_classes: int | None = None  # a ClassLabel's

    @property
    def is_scalar(self) -> bool:
        """Whether an example holds one value of it (a label, a string, a number)."""
        return self.kind in ("ClassLabel", "Text") or (
            self.kind in ("Scalar", "Tensor") and self.shape == ()
        )


def read_features(dataset_dir: str) -> dict[str, Feature]:
    """The top-level features of a prepared dataset, from its features.json (what a reader
    takes from it checked: a frame size no frame can have, a shape that is not one, ...)."""
    path = os.path.join(dataset_dir, "features.json")
    try:
        features = read_json(path)["featuresDict"]["features"]
    except CorruptRecordError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise FileNotFoundError(f"Cannot read the features of {path}: {e!r}") from e
    if not isinstance(features, dict) or not all(isinstance(f, dict) for f in features.values()):
        raise CorruptRecordError(f"{path}: featuresDict.features is not an object of features.")
    return {name: _feature(path, name, feature) for name, feature in features.items()}


def _feature(path: str, name: str, feature: dict) -> Feature:
    """One feature of features.json, its values checked."""
    wrong = lambda what: CorruptRecordError(f"{path}: feature {name!r} has {what}.")
    kind = feature.get("pythonClassName", "")
    tensor = feature.get("tensor") or feature.get("video") or {}  # a Video: its own key
    if not isinstance(kind, str) or not isinstance(tensor, dict):
        raise wrong("a class name or tensor that is not one")
    shape = tensor.get("shape", {})
    dims = shape.get("dimensions", []) if isinstance(shape, dict) else shape
    try:
        shape = tuple(int(d) for d in dims)
    except (TypeError, ValueError):
        raise wrong(f"the shape {dims!r}") from None
    if len(shape) > 8 or any(not -1 <= d < 1 << 31 for d in shape):
        raise wrong(f"the shape {list(shape)}")
    if name == "video" and (len(shape) != 4 or shape[3] != 3 or (
        min(shape[1:3]) >= 0 and not 0 < shape[1] * shape[2] <= MAX_PIXELS
    )):  # fmt: skip
        raise wrong(f"the shape {list(shape)}, not (frames, height, width, 3) of a frame size "
                    f"of 1 to {MAX_PIXELS} pixels")  # fmt: skip
    classes = feature.get("classLabel", {})
    num_classes = None
    if isinstance(classes, dict) and "numClasses" in classes:
        num_classes = _count(classes["numClasses"], path, f"{name}'s numClasses", 1 << 31)
    if not isinstance(tensor.get("dtype", ""), str):
        raise wrong(f"the dtype {tensor['dtype']!r}")
    return Feature(kind.rsplit(".", 1)[-1], tensor.get("dtype"), shape, num_classes)


def read_label_names(dataset_dir: str, feature: str = "label") -> list[str] | None:
    """Class names of a ClassLabel feature (line i = id i), or None if TFDS wrote none."""
    path = os.path.join(dataset_dir, f"{feature}.labels.txt")
    if not os.path.isfile(path):
        return None
    try:
        return [line for line in _read_text(path).splitlines() if line]
    except UnicodeDecodeError as e:
        raise CorruptRecordError(f"{path} is not UTF-8 text: {e}") from None


def index_range(length: int, shard_index: int, num_shards: int) -> range:
    """The `shard_index`-th of `num_shards` contiguous, disjoint, near-equal parts of the range."""
    if not (isinstance(num_shards, int) and num_shards > 0):
        raise ValueError(f"num_shards must be a positive int, got {num_shards!r}.")
    if not (isinstance(shard_index, int) and 0 <= shard_index < num_shards):
        raise ValueError(f"shard_index must be an int in [0, {num_shards}), got {shard_index!r}.")
    return range(length * shard_index // num_shards, length * (shard_index + 1) // num_shards)

