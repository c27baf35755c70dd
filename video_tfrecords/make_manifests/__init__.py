"""Manifests for `tfds build video_tfrecords` from a dataset's published annotation files.

    python -m video_tfrecords.make_manifests kinetics --annotations A --videos V --out OUT

Each format's quirks (quoted labels, CRLF lines, case mismatches, label-less test splits, spans
past the video, start >= end, repeated ids) are handled once and tested. Whole labelled videos
make `{path} {label}` manifests; several labels, spans, segments or captions make JSON Lines
ones (`writer`). The conversion uses the standard library and the build's manifest rules
(`ingest/manifest.py`).
"""

from video_tfrecords.make_manifests.activitynet_json import activitynet
from video_tfrecords.make_manifests.charades_csv import charades
from video_tfrecords.make_manifests.class_folders import folders
from video_tfrecords.make_manifests.common import AnnotationError, Result
from video_tfrecords.make_manifests.hmdb51_splits import hmdb51
from video_tfrecords.make_manifests.kinetics_csv import kinetics
from video_tfrecords.make_manifests.msrvtt_json import msrvtt
from video_tfrecords.make_manifests.ssv2_json import ssv2
from video_tfrecords.make_manifests.ucf101_lists import ucf101

# Format name (the command line's FORMAT) -> its function.
FORMATS = {
    "kinetics": kinetics,
    "ucf101": ucf101,
    "hmdb51": hmdb51,
    "ssv2": ssv2,
    "charades": charades,
    "activitynet": activitynet,
    "msrvtt": msrvtt,
    "folders": folders,
}

__all__ = [
    "FORMATS",
    "AnnotationError",
    "Result",
    "activitynet",
    "charades",
    "folders",
    "hmdb51",
    "kinetics",
    "msrvtt",
    "ssv2",
    "ucf101",
]
