"""A split's shards for a distributed build: assigned by TFDS's rule, written whole or not at all.

Any engine can use it. The driver assigns (`assign`) from the encoded videos' cache
entries: the videos in a fixed pseudo-random order (a hash of split and path, so
that a shard does not hold one class), as many shards as TFDS's writer would make
(`ShardConfig.get_number_shards` of the `DownloadConfig`, on the examples' sizes
in the cache), cut where TFDS cuts (`boundaries`: an equal number of examples
each; a video's pieces stay in order, across shards if need be). A task then
writes one shard (`write`): each example built by `encoding.examples_of` and
serialized by TFDS's own serializer (`features.serialize_example`) into a file of
its own attempt beside the dataset folder, renamed into place only once it is
whole. An attempt that dies leaves nothing in the folder; two that finish leave
one whole shard holding the same examples. The driver turns the results into
TFDS split infos (`split_info`).

No task imports TensorFlow, which would cost every Python worker of an
executor about 2 CPU-seconds and 570 MB: the features travel pickled (TFDS
rebuilding them from JSON imports it), TFRecord files are written by
`records.tfrecord_shard.write_tfrecord` (TFDS's TFRecord writer is
TensorFlow's), array_record files by TFDS's `ExampleWriter`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Sequence

import tensorflow_datasets as tfds
from etils import epath
from tensorflow_datasets.core.utils import shard_utils

from video_tfrecords.ingest import cache, encoding
from video_tfrecords.records.tfrecord_shard import write_tfrecord

Video = tuple[encoding.Task, cache.Entry]
Part = tuple[encoding.Task, cache.Entry, int, int]  # a video's pieces start to stop


@dataclasses.dataclass(frozen=True)
class ShardJob:
    """One shard to write: its videos' pieces, in order, and where it goes."""

    split: str
    index: int
    num_shards: int
    path: str  # the shard's final place (in the dataset folder being built)
    attempts_dir: str  # where an attempt writes before the rename
    file_format: str  # a tfds.core.FileFormat value
    features: tfds.features.FeatureConnector  # the dataset's, pickled as they are
    parts: tuple[Part, ...]


@dataclasses.dataclass(frozen=True)
class ShardResult:
    """What a written shard holds: its number of examples and their serialized bytes."""

    split: str
    index: int
    num_examples: int
    num_bytes: int


def order_key(task: encoding.Task) -> bytes:
    """Where a video goes in its split: a hash of split and path (stable across runs)."""
    return hashlib.blake2b(f"{task.split}/{task.entry.path}".encode(), digest_size=8).digest()


def boundaries(num_examples: int, num_shards: int) -> list[int]:
    """The example index that ends each shard, by TFDS's own rule (its writer's)."""
    return list(shard_utils.get_shard_boundaries(num_examples, num_shards))


def assign(
    split: str,
    videos: Sequence[Video],
    *,
    download_config: tfds.download.DownloadConfig,
    file_format: tfds.core.FileFormat,
    dataset_name: str,
    dataset_dir: epath.PathLike,
    attempts_dir: epath.PathLike,
    features: tfds.features.FeatureConnector,
) -> list[ShardJob]:
    """The shards of one split, cut where TFDS's writer cuts, in the split's order."""
    videos = sorted(videos, key=lambda video: order_key(video[0]))
    num_examples = sum(len(entry.files) for _, entry in videos)
    if not num_examples:
        raise ValueError(f"split {split} has no example to write")
    size = sum(file_size for _, entry in videos for _, file_size, _ in entry.files)
    wanted = download_config.get_shard_config().get_number_shards(size, num_examples)
    ends = boundaries(num_examples, wanted)
    parts: list[list[Part]] = [[] for _ in ends]
    shard, done = 0, 0  # examples before the current video
    for task, entry in videos:
        start = 0
        while start < len(entry.files):  # a long video's pieces may fill several shards
            while done + start >= ends[shard]:
                shard += 1
            stop = min(len(entry.files), ends[shard] - done)
            parts[shard].append((task, entry, start, stop))
            start = stop
        done += len(entry.files)
    parts = [p for p in parts if p]  # TFDS's rule never leaves one empty; kept for safety
    template = file_template(split, file_format, dataset_name, dataset_dir)
    return [
        ShardJob(
            split=split,
            index=i,
            num_shards=len(parts),
            path=str(template.sharded_filepath(shard_index=i, num_shards=len(parts))),
            attempts_dir=str(attempts_dir),
            file_format=file_format.value,
            features=features,
            parts=tuple(shard_parts),
        )
        for i, shard_parts in enumerate(parts)
    ]


def file_template(
    split: str, file_format: tfds.core.FileFormat, dataset_name: str, dataset_dir: epath.PathLike
) -> tfds.core.ShardedFileTemplate:
    """TFDS's default file names: `{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}`."""
    return tfds.core.ShardedFileTemplate(
        data_dir=epath.Path(dataset_dir),
        dataset_name=dataset_name,
        split=split,
        filetype_suffix=file_format.file_suffix,
    )


def write(job: ShardJob) -> ShardResult:
    """Writes the job's shard into a file of this attempt, then renames it into place."""
    final = epath.Path(job.path)
    attempt = epath.Path(job.attempts_dir) / f"{final.name}.{uuid.uuid4().hex}"
    num_examples = num_bytes = 0

    def serialized():
        nonlocal num_examples, num_bytes
        for task, entry, start, stop in job.parts:
            outcome = encoding.Outcome(task, entry=entry)
            for key, example in encoding.examples_of(outcome, start, stop):
                data = job.features.serialize_example(example)
                num_examples += 1
                num_bytes += len(data)
                yield key, data

    try:
        if job.file_format == tfds.core.FileFormat.TFRECORD.value:
            write_tfrecord(attempt, (data for _, data in serialized()))
        else:
            tfds.core.ExampleWriter(tfds.core.FileFormat(job.file_format)).write(
                attempt, serialized()
            )
        attempt.rename(final)  # the shard appears whole, or not at all
    except BaseException:
        attempt.unlink(missing_ok=True)
        raise
    return ShardResult(job.split, job.index, num_examples, num_bytes)


def split_info(
    split: str,
    jobs: Sequence[ShardJob],
    results: Sequence[ShardResult],
    template: tfds.core.ShardedFileTemplate,
) -> tfds.core.SplitInfo:
    """The split's TFDS split info, from one result per shard (a shard written twice counts
    once; a shard missing is an error)."""
    by_index = {r.index: r for r in results if r.split == split}
    missing = [job.path for job in jobs if job.index not in by_index]
    if missing or len(by_index) != len(jobs):
        raise RuntimeError(f"split {split}: no result for the shards {missing}")
    ordered = [by_index[i] for i in range(len(jobs))]
    return tfds.core.SplitInfo(
        name=split,
        shard_lengths=[r.num_examples for r in ordered],
        num_bytes=sum(r.num_bytes for r in ordered),
        filename_template=template,
    )
