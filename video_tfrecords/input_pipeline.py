"""`clip_dataset`: the whole tf.data input pipeline, batches of (clip, label) ready to use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import tensorflow as tf
import tensorflow_datasets as tfds

from video_tfrecords import clip_plan
from video_tfrecords.clip_spec import check_positive_int, is_int
from video_tfrecords.decoders import ClipDecoder, EncodedFrames

__all__ = ["clip_dataset"]


def clip_dataset(
    split: str = "train",
    *,
    num_frames: int,
    batch_size: int,
    training: bool = True,
    seed: int | None = None,
    data_dir: str | None = None,
    builder_kwargs: Mapping[str, Any] | None = None,
    shuffle_buffer: int = 256,
    num_epochs: int | None = None,
    dtype: tf.dtypes.DType = tf.float32,
    num_parallel_calls: int = tf.data.AUTOTUNE,
    name: str = "video_tfrecords",
    **clip_kwargs,
) -> tf.data.Dataset:
    """A batched `(clip, label)` dataset for training or evaluation.

    Reads `name` with TFDS without decoding the videos, then samples and
    decodes one clip per example with `ClipDecoder(num_frames, **clip_kwargs)`.

    Training (`training=True`): files and examples are shuffled, clips default
    to mode="random" with random crops, the dataset repeats `num_epochs` times
    (forever if None) and batches drop the remainder (static batch size).
    Each epoch e uses the seed `fold_in(seed, e)` for example shuffling and
    clip sampling, so clips change every epoch yet a seeded run replays
    exactly; without a seed each epoch draws a fresh random seed.

    Evaluation (`training=False`): one pass (unless `num_epochs`), no
    shuffling, clips default to mode="center" / crop="center", and the last
    partial batch is kept.

    Args:
        split: TFDS split.
        num_frames: frames per clip.
        batch_size: clips per batch.
        training: training or evaluation defaults (see above).
        seed: optional int for a reproducible pipeline.
        data_dir: TFDS data directory.
        builder_kwargs: forwarded to `tfds.load` (e.g. {"config": ...}).
        shuffle_buffer: example shuffle buffer (training only).
        num_epochs: number of passes; None = forever in training, 1 in eval.
        dtype: tf.float32 (default) gives values in [0, 1]; tf.uint8 keeps raw
            bytes (4x less memory; normalise on the accelerator).
        num_parallel_calls: parallelism of clip decoding.
        name: registered TFDS dataset name.
        **clip_kwargs: the other `ClipSpec` arguments (stride, mode, num_clips,
            short_video, crop_size, crop, flip, short_side).

    Returns:
        A `tf.data.Dataset` of `(clip, label)` batches.
    """
    if "seed" in clip_kwargs:
        raise ValueError("Pass seed= directly to clip_dataset.")
    clip_kwargs.setdefault("mode", "random" if training else "center")
    clip_kwargs.setdefault("crop", "random" if training else "center")
    decoder = ClipDecoder(num_frames, **clip_kwargs)
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
    shuffle_buffer = check_positive_int("shuffle_buffer", shuffle_buffer)

    read_config = tfds.ReadConfig(
        try_autocache=False,
        shuffle_seed=seed,
        shuffle_reshuffle_each_iteration=True,
    )
    examples, info = tfds.load(
        name,
        split=split,
        data_dir=data_dir,
        builder_kwargs=dict(builder_kwargs) if builder_kwargs else None,
        shuffle_files=training,
        decoders={"video": EncodedFrames()},
        read_config=read_config,
        with_info=True,
    )
    # The frame feature gives static frame sizes (when fixed) and is checked to be JPEG.
    decoder.setup(feature=info.features["video"].feature)
    keep = [k for k in ("video", "label", "filename") if k in examples.element_spec]
    examples = examples.map(lambda ex: {k: ex[k] for k in keep})

    if num_epochs is None:
        epochs = tf.data.Dataset.counter()
    else:
        epochs = tf.data.Dataset.range(num_epochs)

    @tf.autograph.experimental.do_not_convert
    def seed_of_epoch(epoch):
        if seed is None:
            return clip_plan.fresh_seed(clip_plan.tf_ops())
        return clip_plan.fold_in(seed, epoch)

    epoch_seeds = epochs.map(seed_of_epoch)

    def one_epoch(epoch_seed):
        ds = examples
        if training:
            ds = ds.shuffle(shuffle_buffer, seed=epoch_seed, reshuffle_each_iteration=False)
        return ds.map(lambda ex: (ex, epoch_seed))

    def to_clip(ex, epoch_seed):
        clip = decoder.sample(ex["video"], epoch_seed, name=ex.get("filename"))
        if dtype == tf.float32:
            clip = tf.image.convert_image_dtype(clip, tf.float32)
        return clip, ex["label"]

    ds = epoch_seeds.flat_map(one_epoch)
    ds = ds.map(to_clip, num_parallel_calls=num_parallel_calls)
    ds = ds.batch(batch_size, drop_remainder=training)
    return ds.prefetch(tf.data.AUTOTUNE)
