"""A split's stored examples as a clip reader needs them, without TensorFlow.

`SplitExamples` reads record i (`split_reader`), parses it (`example_parser`), checks it by
the dataset's checksum policy, and hands out a `StoredExample`: the frames as views into the
record (each checked as it is read), what a clip reads besides them (`schema.clip_inputs`),
the content fingerprint seeded clips are keyed on, and the other scalar features.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from video_tfrecords.clips import labels
from video_tfrecords.records import (
    annotation_inputs,
    dataset_files,
    example_parser,
    example_values,
    schema,
    split_reader,
)
from video_tfrecords.records.checksums import CheckedFrames, CorruptRecordError

__all__ = ["SplitExamples", "StoredExample"]


@dataclasses.dataclass
class StoredExample:
    """One record, interpreted: enough to sample its clip and fill a reader's output."""

    frames: object  # the JPEG frames (ByteValues, or CheckedFrames that check each frame read)
    label: int
    filename: str
    inputs: dict  # keyword arguments of `decode_np.sample_np` besides the frames and seed
    scalars: dict  # the other scalar features: str for Text, else NumPy scalars
    where: Callable[[], str]  # names the video, record and shard, for messages
    annotations: dict | None = None  # what `clips.labels.annotate` reads (2.4.0 on)


class SplitExamples:
    """The records of one split of a prepared dataset folder, by index.

    Checks, TFRecord: a shard's record headers when it is indexed; with `frame_crc32c`
    (2.1.0 on) and not `check_records`, each frame's CRC32C as it is read and, on a
    record's first read in the process, its CRC32C from the bytes outside the frames;
    otherwise each record's CRC32C over all its bytes on its first read. array_record:
    its own hashes on every read.
    """

    def __init__(
        self, dataset_dir: str, split: str, *, fingerprint_of: Callable, check_records: bool = False
    ):
        self.dataset_dir, self.split = dataset_dir, split
        # `clips.keys.video_fingerprint`, for datasets that do not store it (before 2.2.0): the
        # reader's, so that the stored format does not depend on how clips are keyed.
        self.fingerprint_of = fingerprint_of
        info = dataset_files.read_info(dataset_dir)
        self.features = dataset_files.read_features(dataset_dir)
        missing = [name for name in schema.REQUIRED if name not in self.features]
        if missing:
            raise ValueError(
                f"{dataset_dir}/features.json has no {', '.join(missing)} feature: "
                "not a video_tfrecords dataset."
            )
        shards = dataset_files.split_shards(dataset_dir, split, info)
        self.frame_checks = (
            schema.FRAME_CHECKSUMS in self.features
            and shards.file_format == "tfrecord"
            and not check_records
        )
        self.reader = split_reader.SplitReader(shards, check_records=not self.frame_checks)
        self.scalars = {
            name: feature
            for name, feature in self.features.items()
            if feature.is_scalar and name not in schema.REQUIRED
        }
        self.label_names = dataset_files.read_label_names(dataset_dir)
        # How many classes a label may name (the names listed, else features.json's count).
        self.num_classes = len(self.label_names or ()) or self.features[schema.LABEL].num_classes
        shape = self.features[schema.VIDEO].shape  # (frames, height, width, 3), -1 unknown
        self.frame_shape = tuple(shape[1:3]) if min(shape[1:3]) > 0 else None
        self.kinds = schema.annotation_kinds(self.features)
        self._new_fingerprint_cache()

    def __len__(self) -> int:
        return len(self.reader)

    def audio_channels(self) -> int:
        """The stored audio's channels; an error naming the dataset if it stores none."""
        channels = example_values.audio_channels(self.features)
        if channels is None:
            raise ValueError(
                f"audio=True, but {self.dataset_dir} stores no audio: build it with "
                "VideoConfig(audio_rate=16000) (any rate), e.g. --config "
                '\'{"name": "av", "audio_rate": 16000}\'.'
            )
        return channels

    def audio_rate(self, index: int) -> int | None:
        """Samples per second of record `index`'s audio (one rate per dataset), checked."""
        where = lambda: f"{self.reader.where(index)}, split {self.split!r}"
        return example_values.Values.of(self.reader.read(index), where).rate(schema.AUDIO_RATE)

    def _new_fingerprint_cache(self) -> None:
        """Room for each video's content fingerprint, hashed on its first seeded read here
        (datasets before 2.2.0 do not store it); 9 bytes a record."""
        self._fingerprints = np.zeros(len(self), np.int64)  # (pages taken as used)
        self._fingerprinted = np.zeros(len(self), np.bool_)  # set once it is stored

    def __getstate__(self):
        state = self.__dict__.copy()  # a copy (a worker) hashes on its own first reads
        del state["_fingerprints"], state["_fingerprinted"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._new_fingerprint_cache()

    def read(self, index: int):
        """Record `index`'s bytes (a view into a memory map, or array_record's)."""
        return self.reader.read(index)

    def read_many(self, indices) -> list:
        """Several records: array_record in one call per shard; TFRecords lazily, one at a time
        (a batch of records is not held in memory)."""
        if self.reader.shards.file_format == "array_record":
            return self.reader.read_many(indices)
        return map(self.reader.read, indices)

    def interpret(
        self, index: int, record, spec, *, seeded: bool, scalars: bool = True
    ) -> StoredExample:
        """Record `index` (its bytes `record`) as a clip of `spec` (a `ClipSpec`) reads it;
        `seeded`: the clip is drawn with a seed, so it needs the video's fingerprint;
        `scalars`: take the other scalar features (a batch of clips does not). Every
        value taken is checked (`example_values`): a damaged or hostile record raises
        CorruptRecordError naming the value, the video and the record."""
        where = lambda: f"{self.reader.where(index)}, split {self.split!r}"
        values = example_values.Values.of(record, where, schema.SIZE_TABLES)
        filename = _required(values)
        video_where = lambda: f"video `{filename}` ({where()})"
        values.where = video_where
        frames = values.take(schema.VIDEO)
        if isinstance(frames, example_parser.PlacedByteValues):
            frames.where = video_where
        frames = self._checked(index, record, values, frames)
        label = example_values.check_label(values, values.take(schema.LABEL), self.num_classes)
        times = values.take(schema.TIMESTAMPS)
        if times is not None:
            times = example_values.check_times(values, np.asarray(times), len(frames))
        inputs = {
            argument: self._input(values, feature, times)
            for argument, feature in schema.clip_inputs(spec).items()
            if feature != schema.FILENAME
        }
        if spec.audio:
            example_values.check_audio(values, inputs["audio"], inputs["audio_rate"], times)
        inputs.update(name=filename, frame_shape=self._frame_shape(values))
        if seeded:
            inputs["fingerprint"] = self._fingerprint(index, frames, values)
        taken = example_values.scalars(values, self.scalars) if scalars else {}
        return StoredExample(
            frames, label, filename, inputs, taken, where, self._annotations(values, times)
        )

    def typed(self, index: int) -> schema.Example:
        """Record `index` as the build stored it: a `schema.Example` of every feature, each
        value checked (`example_values.example_of`), and the record as `interpret` checks it."""
        where = lambda: f"{self.reader.where(index)}, split {self.split!r}"
        record = self.reader.read(index)
        values = example_values.Values.of(record, where)
        _required(values)
        example = example_values.example_of(values, self.features)
        example.video = self._checked(index, record, values, example.video)
        return example

    def _checked(self, index: int, record, values: example_values.Values, frames):
        """The frames, each checked as it is read, and on a record's first read its CRC32C
        outside them (with `frame_crc32c`, and records not checked whole as they are read)."""
        if not self.frame_checks:
            return frames
        checksums = values.take(schema.FRAME_CHECKSUMS)
        checksums = () if checksums is None else checksums
        list_crc = values.checksum(schema.VIDEO_CRC)
        video = values.parsed[schema.VIDEO]
        self.reader.check_outside_frames(index, record, video, checksums, list_crc)
        return CheckedFrames(frames, checksums, values.where)

    def _frame_shape(self, values: example_values.Values) -> tuple[int, int] | None:
        """The size every frame of the record must have: the dataset's (a config's `size`),
        else the record's own stored size (2.5.0 on), else unknown (the first frame's)."""
        stored = values.frame_size()
        if self.frame_shape is not None and stored not in (None, self.frame_shape):
            raise values.error(
                f"its frames are said to be {stored[1]}x{stored[0]}, but the dataset's are "
                f"{self.frame_shape[1]}x{self.frame_shape[0]}"
            )
        return self.frame_shape or stored

    def _annotations(self, values: example_values.Values, times) -> dict | None:
        """The stored labels with their segments, and captions, as `clips.labels.annotate`
        reads them (which checks how they fit together); None for a dataset without them."""

        def take(name, kind):
            if kind == "bytes":
                return [bytes(t) for t in values.listed(name, kind)]
            if name == schema.SPAN_START:
                return values.one(name, kind)
            return np.asarray(values.listed(name, kind), _DTYPES[kind])

        found = annotation_inputs.stored_annotations(self.kinds, take)
        if found is None:
            return None
        if times is None:
            times = take(schema.TIMESTAMPS, "float")
        found[labels.FRAME_TIMES] = times
        if schema.LABELS_KIND in self.kinds:
            found["num_classes"] = self.num_classes or 0
        return found

    def _input(self, values: example_values.Values, feature: str, times):
        """One clip input from the record, checked: the frames' times, the frame rate, the
        audio's samples (an int16 view of its bytes) and their rate."""
        if feature == schema.AUDIO:
            data = values.take(schema.AUDIO)
            if data is None:
                raise values.error("it has no audio")
            try:
                return example_values.pcm_view(data, self.audio_channels())
            except ValueError as e:
                raise values.error(str(e)) from None
        if feature == schema.TIMESTAMPS:
            return None if times is None else np.asarray(times, np.float32)
        value = values.rate(feature) if feature in (schema.FPS, schema.AUDIO_RATE) else None
        stored = feature in (schema.AUDIO_RATE, schema.FPS) and feature in self.features
        if value is None and stored:  # the dataset stores it, the record lacks it
            raise values.error(f"it has no {feature}")
        return value

    def _fingerprint(self, index: int, frames, values: example_values.Values) -> int:
        """The video's `fingerprint_of(frames)`: stored in the record (2.2.0 on, checked
        with it), else hashed once per process."""
        stored = values.take(schema.FINGERPRINT)
        if stored is not None:
            return stored
        if self._fingerprinted[index]:
            return int(self._fingerprints[index])
        fingerprint = self.fingerprint_of(frames)
        self._fingerprints[index] = fingerprint
        self._fingerprinted[index] = 1
        return fingerprint

    def close(self) -> None:
        """Closes the open files (they reopen on the next read)."""
        self.reader.close()


_DTYPES = {"float": np.float64, "int": np.int64}


def _required(values: example_values.Values) -> str:
    """The record's filename, once it has every feature a dataset requires (`schema.REQUIRED`,
    each with a value): else a CorruptRecordError naming what it lacks."""
    filename = values.take(schema.FILENAME)
    missing = [name for name in schema.REQUIRED if not len(values.parsed.get(name, ()))]
    if missing:
        video = "" if filename is None else f" (video `{filename}`)"
        raise CorruptRecordError(f"{values.where()}{video} has no {', '.join(missing)}.")
    return filename
