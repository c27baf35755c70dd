"""video_tfrecords: video datasets as JPEG frames in TFRecords, decoded clip by clip.

Every public name is loaded on first use, so `from video_tfrecords import ClipSource` (a
PyTorch, JAX or Grain process, each of a DataLoader's spawned workers) loads neither
TensorFlow nor PyAV nor the builder. The TFDS builder registers itself when its module is
imported: by `tfds build`, by `Builder` or `ClipDecoder` here, and by importing this package
where tensorflow_datasets is already loaded (`import tensorflow_datasets as tfds,
video_tfrecords`); under the `tfds` command it first sets the command's hooks
(`ingest.tfds_command`). Reading a prepared dataset never needs it: `tfds.load` reads one
without its builder from its files.
"""

import sys

__all__ = [
    "Builder",
    "ClipDecoder",
    "ClipSource",
    "ClipSpec",
    "ConfigError",
    "CorruptRecordError",
    "EncodedFrames",
    "KerasStartStep",
    "ManifestError",
    "VideoBuildError",
    "VideoConfig",
    "clip_dataset",
    "fold_in",
]
# Public name -> the module that defines it, imported when the name is first used.
_LAZY = {
    "Builder": "video_tfrecords_dataset_builder",
    "ClipDecoder": "decoders",
    "ClipSource": "clip_source",
    "ClipSpec": "clips.spec",
    "ConfigError": "config",
    "CorruptRecordError": "records.checksums",
    "EncodedFrames": "decoders",
    "KerasStartStep": "clips.keras_start",
    "ManifestError": "ingest.manifest",
    "VideoBuildError": "ingest.encoding",
    "VideoConfig": "config",
    "clip_dataset": "input_pipeline",
    "fold_in": "clips.keys",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"video_tfrecords.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'video_tfrecords' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])


if "tensorflow_datasets" in sys.modules:  # its user will ask TFDS for the builder by name
    from video_tfrecords.ingest.tfds_command import setup as _setup_tfds_command

    _setup_tfds_command()  # under `tfds build` only: its errors first, TFDS's INFO lines off
    import video_tfrecords.video_tfrecords_dataset_builder  # noqa: F401
