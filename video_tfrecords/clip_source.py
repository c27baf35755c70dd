"""`ClipSource`: random access to clips of a prepared dataset, without TensorFlow.

For PyTorch (`torch.utils.data.Dataset`), JAX and Grain (`grain.MapDataset.source`).
It reads the records itself (`records.examples`) and decodes only the clip's JPEGs with
libjpeg-turbo (`decode_np.sample_np`), so a seeded clip equals the one that
`tfds.load(..., decoders={"video": ClipDecoder(..., seed=S)})` gives.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from video_tfrecords.clips import backends, decode_np, keys, labels
from video_tfrecords.clips.epoch_sampler import EpochSampler
from video_tfrecords.clips.plan import clip_key
from video_tfrecords.clips.spec import ClipSpec, check_non_negative_int, is_int
from video_tfrecords.records import annotation_inputs, built_from, dataset_files, schema
from video_tfrecords.records.checksums import CorruptRecordError
from video_tfrecords.records.examples import SplitExamples, StoredExample

__all__ = ["ClipSource", "EpochSampler"]


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
        num_frames, stride, mode, ..., audio: the clip: `ClipSpec`'s arguments,
            as for `ClipDecoder`. With a seed, example i always gives the same
            clip (that of `ClipDecoder(seed=seed)`), until `set_epoch`; without
            one, every read draws a fresh clip.
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
    keeps its parent's checks. array_record: its own hashes on every read. On
    every read, each value taken from the record (its kind, count and range) and
    every decoded frame's JPEG header before it is decoded (the size its example
    stores, the build's encoding, at most 8192 x 8192 pixels): a dataset whose
    checksums were recomputed after damage, or written by anyone, raises
    CorruptRecordError, never a large allocation. TFRecord shards are
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
        shard_index: int = 0,
        num_shards: int = 1,
        check_records: bool = False,
        dataset_dir=None,
        stride: int | tuple[int, int] = ClipSpec.stride,
        mode: str = ClipSpec.mode,
        num_clips: int = ClipSpec.num_clips,
        short_video: str = ClipSpec.short_video,
        crop_size: tuple[int, int] | None = ClipSpec.crop_size,
        crop: str = ClipSpec.crop,
        flip: bool = ClipSpec.flip,
        seed: int | None = ClipSpec.seed,
        short_side: int | tuple[int, int] | None = ClipSpec.short_side,
        fps: float | None = ClipSpec.fps,
        num_crops: int = ClipSpec.num_crops,
        crop_area: tuple[float, float] = ClipSpec.crop_area,
        crop_aspect: tuple[float, float] = ClipSpec.crop_aspect,
        audio: bool = ClipSpec.audio,
        labels: str = ClipSpec.labels,
        captions: str | None = ClipSpec.captions,
        segment: bool = ClipSpec.segment,
    ):
        self.spec = ClipSpec.from_arguments(locals())
        if dataset_dir is None:
            dataset_dir = dataset_files.find_dataset_dir(data_dir, config, version)
        self.dataset_dir = str(dataset_dir)
        self.split = split
        self.examples = SplitExamples(
            self.dataset_dir, split, fingerprint_of=keys.video_fingerprint,
            check_records=check_records,
        )  # fmt: skip
        self._check_annotations()
        self.audio_channels = self.examples.audio_channels() if self.spec.audio else None
        self._range = dataset_files.index_range(len(self.examples), shard_index, num_shards)
        self._epoch = 0

    def _check_annotations(self) -> None:
        """The clip arguments that read annotations name ones the dataset stores."""
        kinds = self.examples.kinds
        labels.check_asked(
            self.spec, labels=schema.LABELS_KIND in kinds, captions=schema.CAPTIONS_KIND in kinds,
            where=self.dataset_dir,
        )  # fmt: skip

    # What the stored examples tell, for readers built on a source (clip_dataset, benchmarks).
    features = property(lambda self: self.examples.features)
    label_names = property(lambda self: self.examples.label_names)
    reader = property(lambda self: self.examples.reader)

    @functools.cached_property
    def audio_rate(self) -> int | None:
        """Samples per second of the stored audio (one rate per dataset, read from the first
        record of the source's part, once); None without `audio=True` or records."""
        if not self.spec.audio or not len(self):
            return None
        return self.examples.audio_rate(self._range.start)

    @property
    def built_from(self) -> dict | None:
        """What the dataset was built from (its built_from.json): each split's manifest and
        video lines (with each file's size and modification time), the class names, the
        config's fields, the manual dir; None for a dataset built before this was recorded."""
        return built_from.read(self.dataset_dir)

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

    def sampler(
        self, *, shuffle: bool = True, seed: int | None = None, batch_size: int | None = None,
        shard_index: int = 0, num_shards: int = 1, start_step: int = 0,
    ) -> EpochSampler:  # fmt: skip
        """Indices for a `torch.utils.data.DataLoader(source, sampler=...)` that carry the epoch.

        It yields e * len + i (record i, epoch e), so every worker, persistent or not, reads
        epoch e's clips; a pass run to its end moves it to the next epoch (or `set_epoch(e)`),
        and its `state_dict` holds the epoch (torchdata's `StatefulDataLoader` resumes with it).
        `seed` shuffles the order (a fresh order every epoch without one). For DDP, every rank
        passes batch_size (the DataLoader's), shard_index=rank, num_shards=world size and the
        same seed, on a source of the whole split: step s's global batch is then the same on
        any number of ranks, and `start_step=s` resumes at it (`EpochSampler`).
        """
        return EpochSampler(
            len(self), shuffle=shuffle, seed=seed, batch_size=batch_size,
            shard_index=shard_index, num_shards=num_shards, start_step=start_step,
        )  # fmt: skip

    def grain_dataset(self):
        """This source as a `grain.MapDataset` whose index e * len + i reaches it whole, so
        Grain's epochs (`.shuffle(seed).repeat()`) reach the clips: `grain.MapDataset.source`
        takes indices modulo the length, and every epoch would then give the same clips."""
        from video_tfrecords.clips.epoch_grain import EpochMapDataset

        return EpochMapDataset(self)

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
        seed = self._epoch_seed(epoch)
        return self._example(self._stored(record_index, seed), seed)

    def __iter__(self):
        """The examples in order, at the source's epoch."""
        return (self[i] for i in range(len(self)))

    def get(
        self, index, *, seed: int | None, out: np.ndarray | None = None, audio_out=None,
        deferred: list | None = None, scalars: bool = True,
    ):  # fmt: skip
        """`source[index]` with the clip drawn with `seed` (None: fresh) instead of the source's.

        For a reader that serves several epochs at once (`clip_dataset`): the source's
        own seed and epoch are left as they are. `out`: a uint8 array of the clip's
        shape to decode into (returned as "video"); `audio_out`: a float32 one for "audio".
        `deferred` (with `out`): a list that gets the clip's frame reads, checks and decodes
        as callables to run (in order; errors name the video and record) instead of running
        them now: "video" holds the clip once they have run (`decode_np.sample_np`).
        `scalars=False` leaves the stored scalar features out (a batch of clips has no use for
        them, and taking each checked is a few percent of a clip's time besides the decode).
        """
        record_index, _ = self._locate(index)
        stored = self._stored(record_index, seed, scalars)
        return self._example(stored, seed, out, audio_out, None if out is None else deferred)

    def __getitems__(self, indices) -> list[dict]:
        """Several examples at once (PyTorch's DataLoader and Grain call this for a batch).

        array_record shards are read in one call per shard; TFRecords one record
        at a time, each decoded before the next is read (a batch of records is
        not held in memory).
        """
        located = [self._locate(i) for i in indices]
        records = self.examples.read_many([record_index for record_index, _ in located])
        examples = []
        for (record_index, epoch), record in zip(located, records):
            seed = self._epoch_seed(epoch)
            stored = self.examples.interpret(record_index, record, self.spec, seeded=seed is not None)
            examples.append(self._example(stored, seed))
        return examples

    _getitems = __getitems__  # Grain's name for batched reads

    def stored_example(self, index) -> schema.Example:
        """Record `index` as the build stored it, for a look at the data: every feature, the
        frames still JPEG bytes (`schema.Example`, read without TensorFlow; each value checked)."""
        record_index, _ = self._locate(index)
        return self.examples.typed(record_index)

    def plan(self, index) -> dict[str, np.ndarray]:
        """What `source[index]` takes from its video, without decoding pixels: `decode_np.plan_np`
        with boxes ("indices", "crop_offsets", "flip", "boxes" in the stored frame's pixels,
        "frame_size"), drawn with the same seed and epoch; "frame_range": [first, stop) of the
        stored frames the clip was drawn from (with `segment=True`, its segment's)."""
        record_index, epoch = self._locate(index)
        seed = self._epoch_seed(epoch)
        stored = self._stored(record_index, seed)
        frames, inputs, first = stored.frames, stored.inputs, 0
        with _located(stored):
            if self.spec.segment and stored.annotations is not None:
                key = clip_key(backends.NP_OPS, self.spec, frames, seed, inputs.get("fingerprint"))
                frames, inputs, first = self._in_segment(stored, key)
            inputs = {k: v for k, v in inputs.items() if k not in ("audio", "audio_rate")}
            plan = decode_np.plan_np(self.spec, frames, seed, boxes=True, **inputs)
        plan["indices"] = np.where(plan["indices"] >= 0, plan["indices"] + first, -1)
        plan["frame_range"] = np.array([first, first + len(frames)])
        return plan

    def _stored(self, record_index: int, seed, scalars: bool = True) -> StoredExample:
        record = self.examples.read(record_index)
        return self.examples.interpret(
            record_index, record, self.spec, seeded=seed is not None, scalars=scalars
        )

    def _example(self, stored: StoredExample, seed, out=None, audio_out=None, deferred=None):
        """The output dict of one record: the sampled clip and the scalar features; with
        stored annotations, the clip's labels and caption(s) (`clips.labels.annotate`).
        Errors name the video and its file; a frame or value the stored data should not hold
        raises CorruptRecordError."""
        if deferred is None:
            with _located(stored):
                return self._decoded(stored, seed, out, audio_out, None)
        decodes = []
        with _located(stored):
            example = self._decoded(stored, seed, out, audio_out, decodes)
        deferred.extend(functools.partial(_run_located, stored, decode) for decode in decodes)
        return example

    def _decoded(self, stored: StoredExample, seed, out, audio_out, deferred) -> dict:
        annotated = stored.annotations is not None
        if annotated and seed is None and self.spec.seed is None:
            seed = keys.fresh_seed()  # one draw for the clip and its annotations
        frames, inputs, first, key = stored.frames, stored.inputs, 0, None
        if annotated:  # the whole example's key: the segment's and the captions' draws
            fingerprint = inputs.get("fingerprint")
            key = clip_key(backends.NP_OPS, self.spec, frames, seed, fingerprint)
        if annotated:
            frames, inputs, first = self._in_segment(stored, key)
        video = decode_np.sample_np(
            self.spec, frames, seed, out=out, audio_out=audio_out, deferred=deferred, **inputs
        )
        example = {"label": stored.label, "filename": stored.filename}
        if self.spec.audio:
            video, example["audio"] = video
        if annotated:
            planned = {k: v for k, v in inputs.items() if k not in ("audio", "audio_rate")}
            plan = decode_np.plan_np(self.spec, frames, seed, **planned)
            indices = np.where(plan["indices"] >= 0, plan["indices"] + first, -1)
            times = stored.annotations[labels.FRAME_TIMES]
            found = labels.annotate(self.spec, stored.annotations, indices, times, key)
            example.update({k: v if k == "labels" else _text(v) for k, v in found.items()})
        return {"video": video, **example, **stored.scalars}

    def _in_segment(self, stored: StoredExample, key) -> tuple:
        """(frames, clip inputs, first frame) a clip is drawn from: with `segment=True`, its
        segment's (`records.annotation_inputs.segment_inputs`)."""
        notes = stored.annotations
        return annotation_inputs.segment_inputs(
            self.spec, notes, notes[labels.FRAME_TIMES], stored.frames, stored.inputs, key
        )

    def index_all(self) -> ClipSource:
        """Indexes every TFRecord shard now, so that pickled copies (workers) need not.

        array_record shards have no index and are not opened (record counts are
        checked where they are first read). Returns self.
        """
        self.examples.reader.index_all()
        return self

    def close(self) -> None:
        """Closes the open files (they reopen on the next read)."""
        self.examples.close()


@contextlib.contextmanager
def _located(stored: StoredExample):
    """Errors raised within name the video, the record and its file (CorruptRecordError kept as
    such)."""
    try:
        yield
    except ValueError as e:
        where, video = stored.where(), f"`{stored.filename}`"
        if where in str(e):  # (the record's own checks name it already)
            raise
        where = where if video in str(e) else f"video {video}, {where}"
        kind = CorruptRecordError if isinstance(e, CorruptRecordError) else ValueError
        raise kind(f"{e} ({where})") from (None if kind is CorruptRecordError else e)


def _run_located(stored: StoredExample, decode) -> None:
    """A deferred decode of `stored`'s clip, its errors naming the video and record."""
    with _located(stored):
        decode()


def _text(value):
    """Captions as str: one, or a list (of lists) of them."""
    return value.decode("utf-8") if isinstance(value, bytes) else [_text(v) for v in value]
