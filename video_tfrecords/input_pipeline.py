"""`clip_dataset`: the whole tf.data input pipeline, batches of (clip, label) ready to use.

tf.data over `ClipSource`: a dataset of example indices (the split shuffled
whole every epoch, or in order), batched, then one `tf.numpy_function` per
batch that reads the batch's records from memory-mapped shards and decodes
only the clips' JPEGs with libjpeg-turbo, straight into the batch. No record
is read whole, and the decoder releases the GIL, so tf.data's parallel calls
decode batches on every core. The batches are page-aligned arrays handed to
TensorFlow without a copy and reused once TensorFlow lets go of them (see
`buffers`), so a batch costs neither a copy nor fresh pages.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from video_tfrecords.clip_source import ClipSource
from video_tfrecords.clips import audio as clip_audio
from video_tfrecords.clips import backends, buffers, order_tf
from video_tfrecords.clips import labels as clip_labels
from video_tfrecords.clips.spec import ClipSpec, check_non_negative_int, check_positive_int, is_int
from video_tfrecords.records import dataset_files, schema

__all__ = ["clip_dataset"]

# ClipSpec's arguments that clip_dataset passes on to its ClipSource (the seed is its own).
CLIP_ARGUMENTS = {f.name for f in dataclasses.fields(ClipSpec)} - {"num_frames", "seed"}


class _Calls:
    """Batch reads under way in this process, and whether it is exiting (see `_drain_at_exit`)."""

    lock = threading.Lock()
    running = 0
    last = 0.0  # time.monotonic() of the last start or end of a read
    exiting = False


@atexit.register
def _drain_at_exit(quiet: float = 0.1, limit: float = 5.0) -> None:
    """Lets tf.data's threads stop calling into Python before the interpreter shuts down.

    A thread of TensorFlow's that takes the GIL once the interpreter is
    finalizing is ended on the spot, and an iterator still alive then (a
    script's last one) waits for it forever: the process hangs at exit. From
    here on reads end at once with an error, and this waits (without the GIL)
    until none has run for `quiet` seconds: tf.data's buffers are full by then
    and its threads idle.
    """
    _Calls.exiting = True
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with _Calls.lock:
            idle = _Calls.running == 0 and time.monotonic() - _Calls.last > quiet
        if idle:
            return
        time.sleep(quiet / 4)


def clip_dataset(
    split: str = "train",
    *,
    num_frames: int,
    batch_size: int,
    training: bool = True,
    seed: int | None = None,
    data_dir: str | None = None,
    builder_kwargs: Mapping[str, Any] | None = None,
    num_epochs: int | None = None,
    dtype: tf.dtypes.DType = tf.float32,
    num_parallel_calls: int = tf.data.AUTOTUNE,
    name: str = "video_tfrecords",
    input_context: tf.distribute.InputContext | None = None,
    shard_index: int = 0,
    num_shards: int = 1,
    start_step: int | tf.Variable = 0,
    host_split: str | None = None,
    stride: int | tuple[int, int] = ClipSpec.stride,
    mode: str | None = None,
    num_clips: int = ClipSpec.num_clips,
    short_video: str = ClipSpec.short_video,
    crop_size: tuple[int, int] | None = ClipSpec.crop_size,
    crop: str | None = None,
    flip: bool = ClipSpec.flip,
    short_side: int | tuple[int, int] | None = ClipSpec.short_side,
    fps: float | None = ClipSpec.fps,
    num_crops: int = ClipSpec.num_crops,
    crop_area: tuple[float, float] = ClipSpec.crop_area,
    crop_aspect: tuple[float, float] = ClipSpec.crop_aspect,
    audio: bool = ClipSpec.audio,
    labels: str = ClipSpec.labels,
    captions: str | None = ClipSpec.captions,
    segment: bool = ClipSpec.segment,
) -> tf.data.Dataset:
    """A batched `(clip, label)` dataset for training or evaluation.

    Finds the prepared TFDS dataset `name` (as `tfds.load` does; it is not built
    here: build it with `tfds build`) and reads it with `ClipSource(split,
    num_frames=num_frames, ...)`: one clip per example, decoding only
    its frames. Clips are stacked into batches: on a dataset whose frames vary
    in size (no `size` in its config), pass `crop_size`.

    Training (`training=True`): the examples are shuffled whole every epoch,
    clips default to mode="random" with random crops, the dataset repeats
    `num_epochs` times (forever if None) and batches drop the remainder
    (static batch size; epochs are concatenated, then batched). Epoch e uses
    the seed `keys.epoch_seed(seed, e)` (seed itself, then `fold_in(seed, e)`)
    for its order and its clips, those of `ClipSource(seed=seed)` after
    `set_epoch(e)`: clips change every epoch yet a seeded run replays exactly;
    without a seed every epoch draws a fresh order and every read a fresh clip.

    Evaluation (`training=False`): one ordered pass (unless `num_epochs`),
    clips default to mode="center" / crop="center", the last partial batch is
    kept.

    Args:
        split: TFDS split.
        num_frames: frames per clip.
        batch_size: clips per batch (per replica with `input_context`: use
            `input_context.get_per_replica_batch_size(global_batch_size)`).
        training: training or evaluation defaults (see above).
        seed: optional int for a reproducible pipeline.
        data_dir: TFDS data directory.
        builder_kwargs: {"config": ..., "version": ...}: which prepared variant to read.
        num_epochs: number of passes; None = forever in training, 1 in eval.
        dtype: tf.float32 (default) gives clips of values in [0, 1] (beside audio and
            captions too); tf.uint8 keeps raw bytes (4x less memory; normalise on the
            accelerator).
        num_parallel_calls: batches decoded at once (each in one of tf.data's
            threads); the output order does not depend on it.
        name: registered TFDS dataset name (a `Video(encoding_format="jpeg")`
            feature "video", a ClassLabel "label" and a Text "filename").
        input_context: a `tf.distribute.InputContext` (as
            `distribute_datasets_from_function` passes it): input pipeline
            `input_pipeline_id` of `num_input_pipelines` reads its share (`host_split`).
            Overrides shard_index / num_shards.
        shard_index, num_shards: this host's index and the number of hosts (`host_split`).
        start_step: the global step the run starts at: its batches from there are an
            unbroken run's, on any number of hosts (a checkpoint's step resumes a run). A
            `tf.Variable` is read as each iterator makes its first batch (do not also
            checkpoint such an iterator); Keras: `KerasStartStep().step`, so that
            `BackupAndRestore` resumes at its batch. With input_context, a step is a batch of
            every replica.
        host_split: "global_batches" (default in seeded training): each global batch
            (batch_size x hosts) is drawn from the whole split, host h taking its h-th
            batch_size rows, so a step's batch, and `start_step`, do not depend on the number
            of hosts. "contiguous" (default otherwise): host h reads the h-th contiguous part
            of the split, shuffled on its own (hosts holding only their part's files;
            unseeded runs, whose hosts cannot share an order).
        stride, mode, ..., labels, captions, segment: the clip: `ClipSpec`'s arguments (documented
            there, with its defaults), but `mode` and `crop` default by `training`
            ("random", else "center"); the clips' seed is `seed`'s, per epoch.

    A run resumes after a preemption from a few KB: `tf.train.Checkpoint(data=iterator)`
    saves the iterator's place, not the batches in flight (tf.data's symbolic checkpoints;
    restored, it reads the next batches again); on another number of hosts, `start_step`.

    Returns:
        A `tf.data.Dataset` of `(clip, label)` batches: clips [B, T, H, W, 3]
        (or [B, num_clips, T, H, W, 3]), labels int64 [B]. With `audio=True`,
        `({"video": clip, "audio": audio}, label)`: audio float32 in [-1, 1],
        [B, S, channels] (or [B, num_clips, S, channels]); S is static with `fps`.
        On a dataset with several labels (JSON Lines `labels`, `segments`), the labels are
        float32 multi-hot vectors [B, classes] (or [B, views, classes]) as `labels` says; with
        captions, the inputs are a dict holding "caption" (tf.string [B] or [B, views],
        captions="random") or "captions" (all, [B, most] or [B, views, most], padded with "").
    """
    clip_args = {name: value for name, value in locals().items() if name in CLIP_ARGUMENTS}
    default = "random" if training else "center"
    clip_args.update(mode=mode or default, crop=crop or default)
    batch_size = check_positive_int("batch_size", batch_size)
    if seed is not None and not is_int(seed):
        raise ValueError(f"seed must be None or an int, got {seed!r}.")
    dtype = tf.as_dtype(dtype)
    if dtype not in (tf.uint8, tf.float32):
        raise ValueError(f"dtype must be tf.uint8 or tf.float32, got {dtype!r}.")
    if num_epochs is None and not training:
        num_epochs = 1
    if num_epochs is not None:
        num_epochs = check_positive_int("num_epochs", num_epochs)
    batches_a_step = 1
    if input_context is not None:
        shard_index = input_context.input_pipeline_id
        num_shards = input_context.num_input_pipelines
        batches_a_step = max(1, input_context.num_replicas_in_sync // num_shards)
    host_split = order_tf.check_host_split(host_split, training, seed, num_shards)
    if is_int(start_step):
        start_step = check_non_negative_int("start_step", start_step)
    elif not hasattr(start_step, "assign"):
        raise ValueError(f"start_step must be an int or a variable, got {start_step!r}.")
    elif type(start_step).__module__.startswith("keras"):
        raise ValueError(
            "start_step is a Keras variable: a model's or optimizer's changes as fit trains, "
            "and fit's first step can count the optimizer's step up before the pipeline reads "
            "it. Pass start_step=resume.step, resume = video_tfrecords.KerasStartStep(), and "
            "resume in fit's callbacks: it copies the optimizer's step as each epoch begins."
        )
    contiguous = host_split == "contiguous"
    source = ClipSource(
        split,
        num_frames=num_frames,
        dataset_dir=_prepared_dir(name, data_dir, builder_kwargs),
        shard_index=shard_index if contiguous else 0,
        num_shards=num_shards if contiguous else 1,
        **clip_args,
    ).index_all()
    frame_size = tuple(None if s < 0 else s for s in source.features["video"].shape[1:3])
    if None in frame_size and source.spec.crop_size is None:
        raise ValueError(
            f"clip_dataset stacks clips into batches, but the frames of {source.dataset_dir} "
            "vary in size (its config has no `size`): pass crop_size=(h, w) (with short_side= "
            "to scale the frames first), or build with a fixed size (VideoConfig(size=(h, w)))."
        )
    if source.spec.audio and source.spec.fps is None:
        raise ValueError(
            "clip_dataset stacks each clip's audio into batches, and without fps= its length "
            "follows each video's own frame rate (25, 29.97, 30 fps...): pass fps=, the rate "
            "the clip's frames are taken at, so every window has one length."
        )
    clip_shape = source.spec.output_shape(frame_size)
    audio_shape = _audio_shape(source)
    extra = annotated_outputs(source)
    reader = BatchReader(
        source, clip_shape, seeded=seed is not None, audio_shape=audio_shape, extra=extra
    )
    batches = order_tf.host_batches(
        len(source), seed=seed, training=training, batch_size=batch_size, num_epochs=num_epochs,
        start_step=start_step, batches_a_step=batches_a_step,
        host=0 if contiguous else shard_index, num_hosts=1 if contiguous else num_shards,
    )  # fmt: skip

    def read(indices, seeds):
        types = [tf.uint8] + ([tf.float32] if audio_shape else []) + [tf.int64]
        types += [tf.float32 if name == "labels" else tf.string for name in extra]
        arrays = tf.numpy_function(reader.read, [indices, seeds], types, stateful=seed is None)
        arrays[0].set_shape([batch_size if training else None, *clip_shape])
        batch = arrays[0].shape[:1]
        if dtype == tf.float32:  # [0, 1], here where the clips are, whatever is beside them
            arrays[0] = tf.image.convert_image_dtype(arrays[0], tf.float32)
        if audio_shape is not None:
            arrays[1].set_shape([*batch, *audio_shape])
        named = dict(zip(["audio"] * bool(audio_shape) + ["label", *extra], arrays[1:]))
        named["label"].set_shape(batch)
        for key, shape in extra.items():
            named[key].set_shape([*batch, *shape])
        label = named.pop("label")
        labels = named.pop("labels", label)  # multi-hot vectors, on a dataset of several labels
        return ({"video": arrays[0], **named}, labels) if named else (arrays[0], labels)

    if num_parallel_calls == tf.data.AUTOTUNE:
        num_parallel_calls = len(os.sched_getaffinity(0))  # one batch per core at a time
    # In use at once: the batches being decoded, the one prefetched, the caller's, TF's copies.
    buffers.SHARED.keep_at_least(num_parallel_calls + 4)
    ds = batches.map(read, num_parallel_calls=num_parallel_calls, deterministic=True)
    options = tf.data.Options()
    options.autotune.enabled = False  # its model re-tunes all the time for a fixed-cost map
    # An iterator's checkpoint holds its place (KBs), not the batches in flight (a batch of
    # 32 float32 clips of 16 x 224 x 224 is 300 MB); restored, it decodes them again.
    options.experimental_symbolic_checkpoint = True
    return ds.prefetch(1).with_options(options)


def annotated_outputs(source: ClipSource) -> dict[str, list]:
    """What a batch holds beside clips, audio and labels on a dataset with several labels or
    captions (2.4.0 on), and each one's shape within the batch: "labels", the multi-hot
    vectors (the batch's labels then); "caption" (captions="random") or "captions" (every
    one, padded with "" to the batch's most)."""
    spec, kinds = source.spec, source.examples.kinds
    views = [spec.num_views] if spec.multi_clip else []
    found = {}
    if schema.LABELS_KIND in kinds:
        found["labels"] = [*views, len(source.label_names or ())]
    if schema.CAPTIONS_KIND in kinds:
        one = clip_labels.caption_mode(spec) == "random"
        found["caption" if one else "captions"] = views if one else [*views, None]
    return found


def _audio_shape(source: ClipSource) -> list | None:
    """A clip's audio shape [(views,) S, channels] (S known with `fps`), None without audio."""
    if not source.spec.audio:
        return None
    spec, rate = source.spec, source.audio_rate
    ops = backends.NP_OPS
    length = None if rate is None else int(clip_audio.window_length(ops, spec, rate, None))
    shape = [length, source.audio_channels]
    return [spec.num_views, *shape] if spec.multi_clip else shape


def _prepared_dir(name: str, data_dir, builder_kwargs) -> str:
    """The prepared dataset's folder, found as `tfds.load` finds it; nothing is built or
    created: a clear error says how to build it."""
    kwargs = dict(builder_kwargs or {})
    config = kwargs.pop("config", None)
    version = kwargs.pop("version", None)
    if kwargs:
        raise ValueError(f"builder_kwargs takes config and version only, got {sorted(kwargs)}.")
    return dataset_files.find_dataset_dir(data_dir, config, version, name=name)


class BatchReader:
    """Reads a batch of clips from a `ClipSource` into one reused, page-aligned array."""

    def __init__(
        self, source: ClipSource, clip_shape, *, seeded: bool, audio_shape=None, extra=None
    ):
        self.source = source
        self.extra = dict(extra or {})  # `annotated_outputs`
        self.clip_shape = None if None in clip_shape else tuple(clip_shape)  # when static
        self.seeded = seeded
        self.buffers = buffers.SHARED
        # Static whenever there are records: clip_dataset requires fps= with audio, and a
        # dataset has one audio rate. Each clip's window is cut straight into the batch.
        self.audio_shape = None if audio_shape is None else tuple(audio_shape)
        # Decodes deferred to the batch's end when records are views into memory maps; an
        # array_record record is its own bytes, which a batch's would hold meanwhile.
        self.defer = source.examples.reader.shards.file_format == "tfrecord"

    def read(self, indices: np.ndarray, seeds: np.ndarray) -> tuple[np.ndarray, ...]:
        """(clips uint8 [B, ...], labels int64 [B]), with audio (clips, audio float32 [B, ...],
        labels); errors are ValueErrors naming the video."""
        with _Calls.lock:
            _Calls.running += 1
            _Calls.last = time.monotonic()
        try:
            if _Calls.exiting:
                raise ValueError("clip_dataset: the process is exiting.")
            return self._read(indices, seeds)
        except ValueError:
            raise
        except Exception as e:  # tf.numpy_function would turn an IndexError into end of data
            raise ValueError(f"{type(e).__name__}: {e}") from e
        finally:
            with _Calls.lock:
                _Calls.running -= 1
                _Calls.last = time.monotonic()

    def _read(self, indices, seeds):
        labels = np.empty(len(indices), np.int64)
        extra = {name: [] for name in self.extra}
        clips = sounds = None
        if self.clip_shape is not None:
            clips = self.buffers.take((len(indices), *self.clip_shape))
        if self.audio_shape is not None:
            sounds = np.empty((len(indices), *self.audio_shape), np.float32)
        # Every clip's record, plan and checks first, then all the frames' decodes back to
        # back (TFRecords: views into memory maps, nothing is held): each kind of work keeps
        # its caches warm, a few percent of a clip's time.
        decodes = [] if clips is not None and self.defer else None
        for k, (index, seed) in enumerate(zip(indices.tolist(), seeds.tolist())):
            out = None if clips is None else clips[k]
            audio_out = None if sounds is None else sounds[k]
            example = self.source.get(
                index, seed=seed if self.seeded else None, out=out, audio_out=audio_out,
                deferred=decodes, scalars=False,
            )  # fmt: skip
            video = example["video"]
            if clips is None:
                clips = self.buffers.take((len(indices), *video.shape))
                clips[0] = video
            elif video.shape != clips.shape[1:]:
                raise ValueError(
                    f"Clips of one batch must have one shape: video `{example['filename']}` "
                    f"gives {video.shape}, the batch's first {clips.shape[1:]}; set crop_size "
                    "or short_side, or build with a fixed `size`."
                )
            labels[k] = example["label"]
            for name, values in extra.items():
                values.append(example[name])
        for decode in decodes or ():
            decode()
        arrays = [clips, labels] if sounds is None else [clips, sounds, labels]
        return arrays + [_stacked(name, values, self.extra[name]) for name, values in extra.items()]


def _stacked(name: str, values: list, shape: list) -> np.ndarray:
    """A batch's multi-hot labels (float32) or captions (bytes; lists padded with b"")."""
    if name == "labels":
        return np.asarray(values, np.float32)
    if name == "caption":
        return np.asarray([_utf8(v) for v in values], object)
    rows = [_utf8(row) for v in values for row in (v if len(shape) == 2 else [v])]
    most = max((len(row) for row in rows), default=0)
    padded = [row + [b""] * (most - len(row)) for row in rows]
    return np.asarray(padded, object).reshape(len(values), *shape[:-1], most)


def _utf8(value):
    """str -> bytes, in lists too."""
    return value.encode("utf-8") if isinstance(value, str) else [_utf8(v) for v in value]
