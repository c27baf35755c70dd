"""video_tfrecords: video datasets as JPEG frames in TFRecords, decoded clip by clip.

Importing the package registers the `video_tfrecords` TFDS builder. The clip
sampler is loaded on first use, so that build worker processes, which import
this package, never pay for importing TensorFlow.
"""

from video_tfrecords.config import VideoConfig
from video_tfrecords.video_tfrecords_dataset_builder import Builder

__all__ = ["Builder", "ClipDecoder", "EncodedFrames", "VideoConfig", "clip_dataset", "fold_in"]
_LAZY = {
    "ClipDecoder": "sampling",
    "EncodedFrames": "sampling",
    "clip_dataset": "pipeline",
    "fold_in": "clip_plan",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"video_tfrecords.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'video_tfrecords' has no attribute {name!r}")
