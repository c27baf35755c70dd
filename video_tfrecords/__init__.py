"""video_tfrecords: video datasets as JPEG frames in TFRecords, decoded clip by clip.

Importing the package registers the `video_tfrecords` TFDS builder and imports
no TensorFlow: the readers are loaded on first use, so a process without
TensorFlow (PyTorch, JAX, Grain) can use `ClipSource`, and build workers start fast.
"""

from video_tfrecords.config import VideoConfig
from video_tfrecords.video_tfrecords_dataset_builder import Builder

__all__ = [
    "Builder",
    "ClipDecoder",
    "ClipSource",
    "ClipSpec",
    "EncodedFrames",
    "VideoConfig",
    "clip_dataset",
    "fold_in",
]
# Public name -> the module that defines it, imported when the name is first used.
_LAZY = {
    "ClipDecoder": "decoders",
    "EncodedFrames": "decoders",
    "ClipSource": "clip_source",
    "ClipSpec": "clips.spec",
    "clip_dataset": "input_pipeline",
    "fold_in": "clips.keys",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"video_tfrecords.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'video_tfrecords' has no attribute {name!r}")
