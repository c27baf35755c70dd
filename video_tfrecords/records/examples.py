"""A split's stored examples as a clip reader needs them, without TensorFlow.

`SplitExamples` reads record i (`shard_reader`), parses it (`example_parser`), checks it by
the dataset's checksum policy, and hands out a `StoredExample`: the frames as views into the
record (each checked as it is read), what a clip reads besides them (`schema.clip_inputs`),
the content fingerprint seeded clips are keyed on, and the other scalar features.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from video_tfrecords.clips import audio as clip_audio
from video_tfrecords.clips import keys
from video_tfrecords.records import dataset_files, example_parser, schema, shard_reader
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

    def __init__(self, dataset_dir: str, split: str, *, check_records: bool = False):
        self.dataset_dir, self.split = dataset_dir, split
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
        self.reader = shard_reader.SplitReader(shards, check_records=not self.frame_checks)
        self.scalars = {
            name: feature
            for name, feature in self.features.items()
            if feature.is_scalar and name not in schema.REQUIRED
        }
        self.label_names = dataset_files.read_label_names(dataset_dir)
        self.kinds = schema.annotation_kinds(self.features)
        self._new_fingerprint_cache()

    def __len__(self) -> int:
        return len(self.reader)

    def audio_channels(self) -> int:
        """The stored audio's channels; an error naming the dataset if it stores none."""
        feature = self.features.get(schema.AUDIO)
        if feature is None or not feature.shape or len(feature.shape) != 2:
            raise ValueError(
                f"audio=True, but {self.dataset_dir} stores no audio: build it with "
                "VideoConfig(audio_rate=16000) (any rate), e.g. --config "
                "'{\"name\": \"av\", \"audio_rate\": 16000}'."
            )
        return int(feature.shape[1])

    def audio_rate(self, index: int) -> int | None:
        """Samples per second of record `index`'s audio (one rate per dataset)."""
        rate = example_parser.parse_example(self.reader.read(index)).get(schema.AUDIO_RATE)
        return None if rate is None or not len(rate) else int(rate[0])

    def _new_fingerprint_cache(self) -> None:
        """Room for each video's content fingerprint, hashed on its first seeded read here
        (datasets before 2.2.0 do not store it); 9 bytes a record."""
        self._fingerprints = np.zeros(len(self), np.int64)
        self._fingerprinted = bytearray(len(self))  # set after its fingerprint is stored

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

    def interpret(self, index: int, record, spec, *, seeded: bool) -> StoredExample:
        """Record `index` (its bytes `record`) as a clip of `spec` (a `ClipSpec`) reads it;
        `seeded`: the clip is drawn with a seed, so it needs the video's fingerprint."""
        where = lambda: f"{self.reader.where(index)}, split {self.split!r}"
        try:
            parsed = example_parser.parse_example(record)
        except ValueError as e:
            raise CorruptRecordError(f"{where()}: {e}") from e
        missing = [name for name in schema.REQUIRED if not len(parsed.get(name, ()))]
        if schema.FILENAME not in missing:
            filename = bytes(parsed[schema.FILENAME][0]).decode("utf-8", "replace")
        if missing:
            video = "" if schema.FILENAME in missing else f" (video `{filename}`)"
            raise CorruptRecordError(f"{where()}{video} has no {', '.join(missing)}.")
        video_where = lambda: f"video `{filename}` ({where()})"
        frames = parsed[schema.VIDEO]
        if self.frame_checks:
            checksums = parsed.get(schema.FRAME_CHECKSUMS, ())
            if not isinstance(frames, example_parser.ByteValues):
                raise CorruptRecordError(f"{video_where()}: its frames are not bytes.")
            frames = CheckedFrames(frames, checksums, video_where)
            self.reader.check_outside_frames(index, record, parsed[schema.VIDEO], checksums)
        inputs = {
            argument: self._input(parsed, feature, video_where)
            for argument, feature in schema.clip_inputs(spec).items()
            if feature != schema.FILENAME
        }
        inputs["name"] = filename
        if seeded:
            inputs["fingerprint"] = self._fingerprint(index, frames, parsed)
        scalars = {
            name: _scalar(feature, parsed[name])
            for name, feature in self.scalars.items()
            if name in parsed and len(parsed[name])
        }
        return StoredExample(
            frames, int(parsed[schema.LABEL][0]), filename, inputs, scalars, where,
            self._annotations(parsed),
        )  # fmt: skip

    def _annotations(self, parsed: dict) -> dict | None:
        """The stored labels with their segments, and captions, as `clips.labels.annotate`
        reads them; None for a dataset without them."""
        if not self.kinds & {schema.LABELS_KIND, schema.CAPTIONS_KIND}:
            return None
        floats = lambda name: np.asarray(parsed.get(name, ()), np.float64)
        found = {"timestamps": floats(schema.TIMESTAMPS)}
        if schema.LABELS_KIND in self.kinds:
            segments = schema.LABEL_SEGMENTS
            found.update(
                labels=np.asarray(parsed.get(schema.LABELS, ()), np.int64),
                segment_label=np.asarray(parsed.get(f"{segments}/label", ()), np.int64),
                segment_start=floats(f"{segments}/start"),
                segment_end=floats(f"{segments}/end"),
                num_classes=len(self.label_names or ()),
            )
        if schema.CAPTIONS_KIND in self.kinds:
            captions = schema.CAPTIONS
            found.update(
                text=[bytes(t) for t in parsed.get(f"{captions}/text", ())],
                start=floats(f"{captions}/start"),
                end=floats(f"{captions}/end"),
            )
        return found

    def _input(self, parsed: dict, feature: str, where):
        """One clip input from the record: the frames' times, a scalar, or the audio's samples
        as an int16 view of its bytes."""
        values = parsed.get(feature)
        if feature == schema.AUDIO:
            if not isinstance(values, example_parser.ByteValues) or len(values) != 1:
                raise CorruptRecordError(f"{where()} has no audio.")
            try:
                return clip_audio.pcm_view(values[0], self.audio_channels())
            except ValueError as e:
                raise CorruptRecordError(f"{where()}: {e}.") from None
        if values is None or not len(values):
            if feature == schema.AUDIO_RATE:
                raise CorruptRecordError(f"{where()} has no audio_rate.")
            return None
        if feature == schema.TIMESTAMPS:
            return np.asarray(values, np.float32)
        return values[0].item() if isinstance(values, np.ndarray) else values[0]

    def _fingerprint(self, index: int, frames, parsed: dict) -> int:
        """The video's `keys.video_fingerprint`: stored in the record (2.2.0 on, checked
        with it), else hashed once per process."""
        stored = parsed.get(schema.FINGERPRINT)
        if stored is not None and len(stored):
            return int(stored[0])
        if self._fingerprinted[index]:
            return int(self._fingerprints[index])
        fingerprint = keys.video_fingerprint(frames)
        self._fingerprints[index] = fingerprint
        self._fingerprinted[index] = 1
        return fingerprint

    def close(self) -> None:
        """Closes the open files (they reopen on the next read)."""
        self.reader.close()


def _scalar(feature: dataset_files.Feature, values):
    """One value of a scalar feature: str for Text, else a NumPy scalar of its dtype."""
    if feature.kind == "Text":
        return bytes(values[0]).decode("utf-8", "replace")
    if feature.kind == "ClassLabel":
        return np.int64(values[0])
    return np.asarray(values[0]).astype(feature.dtype or values.dtype)[()]
