"""`ClipSource`: random access to clips of a prepared dataset, without TensorFlow.

For PyTorch (`torch.utils.data.Dataset`), JAX and Grain (`grain.MapDataset.source`).
It reads the records itself (`shard_reader`) and decodes only the clip's JPEGs with
libjpeg-turbo (`decode_np.sample_np`), so a seeded clip equals the one that
`tfds.load(..., decoders={"video": ClipDecoder(..., seed=S)})` gives.
"""

from __future__ import annotations

import functools

import numpy as np

from video_tfrecords.clips import audio as clip_audio
from video_tfrecords.clips import decode_np, keys
from video_tfrecords.clips.spec import ClipSpec, check_non_negative_int, is_int
from video_tfrecords.records import dataset_files, example_parser, shard_reader
from video_tfrecords.records.checksums import CheckedFrames, CorruptRecordError

__all__ = ["ClipSource"]

REQUIRED_FEATURES = ("video", "label", "filename")


class ClipSource:
    """Clips of one split of a prepared `video_tfrecords` dataset, by index.

    `source[i]` is a dict: "video" (uint8 [T, H, W, 3], or [num_clips, T, H, W, 3]),
    "label" (int), "filename" (str), and the dataset's other scalar features
    (NumPy scalars, or str); with `audio=True`, "audio": float32 in [-1, 1],
    [S, channels] (or [num_clips, S, channels]), the clip's window (`ClipSpec`).
    Only the clip's frames are decoded. A "video" of 32 MiB or more (10x3 test
    views) is memory this process reuses once nothing refers to that array or any
    view of it (`buffers`): copy it before passing its address on.

    Args:
        split: a split name ("train", "validation", "test").
        data_dir: where the dataset was built (`--data_dir`); default TFDS's
            (TFDS_DATA_DIR, else ~/tensorflow_datasets).
        config: the config's name (or a `VideoConfig`); default "default".
        version: a version folder, e.g. "2.2.0"; default the latest one present.
        num_frames, stride, mode, crop_size, flip, short_video, seed, **clip_args:
            the clip, as for `ClipDecoder` (see `ClipSpec`). With a seed, example
            i always gives the same clip (that of `ClipDecoder(seed=seed)`), until
            `set_epoch`; without one, every read draws a fresh clip.
        shard_index, num_shards: read only the `shard_index`-th of `num_shards`
            contiguous, disjoint parts of the split (one per host or worker);
            `len` and indices are those of the part.
        check_records: check each TFRecord record's CRC32C over all its bytes on
            its first read in the process, instead of frame by frame (below).
            What datasets built without `frame_crc32c` get.
        dataset_dir: the prepared dataset's own folder (`tfds.builder(...).data_dir`),
            instead of finding it from data_dir, config and version.

    What is checked when, TFRecord: a shard's record headers (CRC32C) when it
    is indexed (once; the index travels with pickled copies). Datasets with
    `frame_crc32c` (version 2.1.0 on): on every read, the CRC32C of each frame
    the clip reads; on a record's first read in the process, the record's own
    CRC32C, from its bytes outside the frames (label, metadata, the frame
    checksums) and the frames' stored checksums, without reading the frames.
    Older datasets: each record's CRC32C over all its bytes on its first read
    in the process. A pickled copy (a worker's) checks again; a forked one
    keeps its parent's checks. array_record: its own hashes on every read. The
    JPEG structure of every decoded frame on every read. TFRecord shards are
    memory-mapped: they must not be rewritten while a source has them open.
    """

    def __init__(
        self,
        split: str = "train",
        *,
        num_frames: int,
        data_dir=None,
        config=None,
        version: str | None = None,
        stride=1,
        mode: str = "random",
        crop_size=None,
        flip: bool = False,
        short_video: str = "loop",
        seed: int | None = None,
        shard_index: int = 0,
        num_shards: int = 1,
        check_records: bool = False,
        dataset_dir=None,
        **clip_args,
    ):
        self.spec = ClipSpec(
            num_frames,
            stride=stride,
            mode=mode,
            crop_size=crop_size,
            flip=flip,
            short_video=short_video,
            seed=seed,
            **clip_args,
        )
        if dataset_dir is None:
            dataset_dir = dataset_files.find_dataset_dir(data_dir, config, version)
        self.dataset_dir = str(dataset_dir)
        info = dataset_files.read_info(self.dataset_dir)
        self.features = dataset_files.read_features(self.dataset_dir)
        missing = [name for name in REQUIRED_FEATURES if name not in self.features]
        if missing:
            raise ValueError(
                f"{self.dataset_dir}/features.json has no {', '.join(missing)} feature: "
                "not a video_tfrecords dataset."
            )
        self.audio_channels = self._audio_channels()
        self.split = split
        shards = dataset_files.split_shards(self.dataset_dir, split, info)
        # With each frame's checksum stored, a read checks the frames it decodes, and a first
        # read the rest of the record, not the whole record (array_record checks its own).
        self._frame_checks = (
            dataset_files.FRAME_CHECKSUMS in self.features
            and shards.file_format == "tfrecord"
            and not check_records
        )
        self.reader = shard_reader.SplitReader(shards, check_records=not self._frame_checks)
        self._range = dataset_files.index_range(len(self.reader), shard_index, num_shards)
        self._scalars = {
            name: feature
            for name, feature in self.features.items()
            if feature.is_scalar and name not in REQUIRED_FEATURES
        }
        self.label_names = dataset_files.read_label_names(self.dataset_dir)
        self._epoch = 0
        self._new_fingerprint_cache()

    def _audio_channels(self) -> int | None:
        """The stored audio's channels, with `audio=True`; an error if the dataset has none."""
        if not self.spec.audio:
            return None
        feature = self.features.get("audio")
        if feature is None or not feature.shape or len(feature.shape) != 2:
            raise ValueError(
                f"audio=True, but {self.dataset_dir} stores no audio: build it with "
                "VideoConfig(audio_rate=16000) (any rate), e.g. --config "
                "'{\"name\": \"av\", \"audio_rate\": 16000}'."
            )
        return int(feature.shape[1])

    @functools.cached_property
    def audio_rate(self) -> int | None:
        """Samples per second of the stored audio (one rate per dataset, read from the first
        record of the source's part, once); None without `audio=True` or records."""
        if not self.spec.audio or not len(self):
            return None
        parsed = example_parser.parse_example(self.reader.read(self._range.start))
        rate = parsed.get("audio_rate")
        return None if rate is None or not len(rate) else int(rate[0])

    def _new_fingerprint_cache(self) -> None:
        """Room for each video's content fingerprint, hashed on its first seeded read here
        (datasets before 2.2.0 do not store it)."""
        # What a seeded clip mixes with the seed; 9 bytes per example.
        self._fingerprints = np.zeros(len(self), np.int64)
        self._fingerprinted = bytearray(len(self))  # set after its fingerprint is stored

    def __getstate__(self):
        state = self.__dict__.copy()  # a copy (a worker) hashes on its own first reads
        del state["_fingerprints"], state["_fingerprinted"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._new_fingerprint_cache()

    @property
    def built_from(self) -> dict | None:
        """What the dataset was built from (its built_from.json): each split's manifest and
        video lines (with each file's size and modification time), the class names, the
        config's fields, the manual dir; None for a dataset built before this was recorded."""
        return dataset_files.read_built_from(self.dataset_dir)

    def __len__(self) -> int:
        return len(self._range)

    def __repr__(self) -> str:
        return (
            f"ClipSource({self.dataset_dir}, split={self.split!r}, examples={len(self)}, "
            f"{self.spec})"
        )

    @property
    def seed(self) -> int | None:
        """The current clips' seed: the given one for epoch 0 (`set_epoch`), `fold_in(seed, e)`
        for epoch e > 0 (`keys.epoch_seed`)."""
        return self._epoch_seed(self._epoch)

    def set_epoch(self, epoch: int) -> None:
        """Moves indices below `len(self)` to the clips of `epoch` (as clip_dataset's epochs).

        In this process only: DataLoader workers, above all persistent ones, keep their copy's
        epoch. There, use indices that carry their epoch (`sampler`).
        """
        self._epoch = check_non_negative_int("epoch", epoch)

    def sampler(self, *, shuffle: bool = True, seed: int | None = None) -> EpochSampler:
        """Indices for a `torch.utils.data.DataLoader(source, sampler=...)` that carry the epoch.

        Call the sampler's `set_epoch(e)` before each epoch: it yields e * len + i (record i,
        epoch e), so every worker, persistent or not, reads epoch e's clips. `seed` shuffles
        the order (a fresh order every epoch without one).
        """
        return EpochSampler(len(self), shuffle=shuffle, seed=seed)

    def _epoch_seed(self, epoch: int) -> int | None:
        if self.spec.seed is None:
            return None
        return keys.epoch_seed(self.spec.seed, epoch)

    def _locate(self, index) -> tuple[int, int]:
        """(split-wide record index, epoch) of an index: i < len is record i at the source's
        epoch; e * len + i is record i at epoch e (Grain's global indices); negative indices
        count back from the end."""
        if not is_int(index):
            raise TypeError(f"ClipSource indices must be ints, got {index!r}.")
        index, length = int(index), len(self)
        if -length <= index < 0:
            index += length
        if index < 0 or not length:
            raise IndexError(f"index {index} out of range for a ClipSource of {length} clips.")
        epoch, position = divmod(index, length)
        return self._range[position], self._epoch if epoch == 0 else epoch

    def __getitem__(self, index) -> dict:
        record_index, epoch = self._locate(index)
        return self._example(record_index, self.reader.read(record_index), self._epoch_seed(epoch))

    def __iter__(self):
        """The examples in order, at the source's epoch."""
        return (self[i] for i in range(len(self)))

    def get(self, index, *, seed: int | None, out: np.ndarray | None = None, audio_out=None):
        """`source[index]` with the clip drawn with `seed` (None: fresh) instead of the source's.

        For a reader that serves several epochs at once (`clip_dataset`): the source's
        own seed and epoch are left as they are. `out`: a uint8 array of the clip's
        shape to decode into (returned as "video"); `audio_out`: a float32 one for "audio".
        """
        record_index, _ = self._locate(index)
        return self._example(record_index, self.reader.read(record_index), seed, out, audio_out)

    def __getitems__(self, indices) -> list[dict]:
        """Several examples at once (PyTorch's DataLoader and Grain call this for a batch).

        array_record shards are read in one call per shard; TFRecords one record
        at a time, each decoded before the next is read (a batch of records is
        not held in memory).
        """
        located = [self._locate(i) for i in indices]
        record_indices = [record_index for record_index, _ in located]
        if self.reader.shards.file_format == "array_record":
            data = self.reader.read_many(record_indices)
        else:
            data = map(self.reader.read, record_indices)
        return [
            self._example(i, record, self._epoch_seed(epoch))
            for (i, epoch), record in zip(located, data)
        ]

    _getitems = __getitems__  # Grain's name for batched reads

    def _example(self, record_index: int, record, seed, out=None, audio_out=None) -> dict:
        """The output dict of one record: the sampled clip and the scalar features."""
        where = lambda: f"{self.reader.where(record_index)}, split {self.split!r}"
        try:
            parsed = example_parser.parse_example(record)
        except ValueError as e:
            raise CorruptRecordError(f"{where()}: {e}") from e
        missing = [name for name in REQUIRED_FEATURES if not len(parsed.get(name, ()))]
        if "filename" not in missing:
            filename = bytes(parsed["filename"][0]).decode("utf-8", "replace")
        if missing:
            video = "" if "filename" in missing else f" (video `{filename}`)"
            raise CorruptRecordError(f"{where()}{video} has no {', '.join(missing)}.")
        frames = parsed["video"]
        if self._frame_checks:
            video_where = lambda: f"video `{filename}` ({where()})"
            checksums = parsed.get(dataset_files.FRAME_CHECKSUMS, ())
            if not isinstance(frames, example_parser.ByteValues):
                raise CorruptRecordError(f"{video_where()}: its frames are not bytes.")
            frames = CheckedFrames(frames, checksums, video_where)
            self.reader.check_outside_frames(record_index, record, parsed["video"], checksums)
        fingerprint = None if seed is None else self._fingerprint(record_index, frames, parsed)
        try:
            sound = self._audio(parsed, lambda: f"video `{filename}` ({where()})", audio_out)
            video = decode_np.sample_np(
                self.spec,
                frames,
                seed,
                name=filename,
                fingerprint=fingerprint,
                out=out,
                **self._times(parsed),
                **sound,
            )
        except CorruptRecordError:
            raise  # names the video and its file already
        except ValueError as e:
            raise ValueError(f"{e} ({where()})") from e
        example = {"label": int(parsed["label"][0]), "filename": filename}
        if self.spec.audio:
            video, example["audio"] = video
        example = {"video": video, **example}
        for name, feature in self._scalars.items():
            values = parsed.get(name)
            if values is not None and len(values):
                example[name] = _scalar(feature, values)
        return example

    def _audio(self, parsed: dict, where, audio_out) -> dict:
        """With `audio=True`: the record's int16 samples (a view of its bytes) and their rate."""
        if not self.spec.audio:
            return {}
        values, rate = parsed.get("audio"), parsed.get("audio_rate")
        if not isinstance(values, example_parser.ByteValues) or len(values) != 1 or rate is None:
            raise CorruptRecordError(f"{where()} has no audio (or no audio_rate).")
        try:
            samples = clip_audio.pcm_view(values[0], self.audio_channels)
        except ValueError as e:
            raise CorruptRecordError(f"{where()}: {e}.") from None
        return {"audio": samples, "audio_rate": int(rate[0]), "audio_out": audio_out}

    def _times(self, parsed: dict) -> dict:
        """The frames' timestamps (else the stored fps) when the clips are taken by time; with
        audio both (its window lasts stored frame periods)."""
        if self.spec.fps is None and not self.spec.audio:
            return {}
        times = {}
        timestamps = parsed.get("timestamps")
        if timestamps is not None and len(timestamps):
            times["timestamps"] = np.asarray(timestamps, np.float32)
        if self.spec.audio or not times:
            fps = parsed.get("fps")
            times["source_fps"] = float(fps[0]) if fps is not None and len(fps) else None
        return times

    def _fingerprint(self, record_index: int, frames, parsed: dict) -> int:
        """The video's `keys.video_fingerprint`: stored in the record (2.2.0 on, checked
        with it), else hashed once per process."""
        stored = parsed.get(dataset_files.FINGERPRINT)
        if stored is not None and len(stored):
            return int(stored[0])
        position = record_index - self._range.start
        if self._fingerprinted[position]:
            return int(self._fingerprints[position])
        fingerprint = keys.video_fingerprint(frames)
        self._fingerprints[position] = fingerprint
        self._fingerprinted[position] = 1
        return fingerprint

    def index_all(self) -> ClipSource:
        """Indexes every TFRecord shard now, so that pickled copies (workers) need not.

        array_record shards have no index and are not opened (record counts are
        checked where they are first read). Returns self.
        """
        self.reader.index_all()
        return self

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


class EpochSampler:
    """Indices of one epoch at a time, each carrying its epoch: e * length + i (see `sampler`).

    A plain iterable with `len` and `set_epoch`, as PyTorch's DistributedSampler: the
    indices are made in the main process, so the epoch reaches every DataLoader worker.
    """

    def __init__(self, length: int, *, shuffle: bool = True, seed: int | None = None):
        self.length, self.shuffle, self.seed = length, shuffle, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = check_non_negative_int("epoch", epoch)

    def __len__(self) -> int:
        return self.length

    def __iter__(self):
        order = np.arange(self.length)
        if self.shuffle:
            seed = None if self.seed is None else keys.epoch_seed(self.seed, self.epoch) % 2**64
            np.random.default_rng(seed).shuffle(order)
        return iter((order + self.epoch * self.length).tolist())
