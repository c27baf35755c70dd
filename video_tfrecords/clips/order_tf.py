"""`clip_dataset`'s order, in tf.data: which example, with which epoch seed, at every position
of a run, and which batches are a host's.

Position p of a run is example `order_e[p % length]` of epoch e = p // length: each epoch the
whole split shuffled by its seed, epochs concatenated. Batch b holds positions [b * B, (b + 1) *
B); step s is batches [s * H, (s + 1) * H) of H hosts (host h the h-th), so a step's global batch
is positions [s * H * B, (s + 1) * H * B) on any number of hosts. A run starts at any step without
reading what comes before it, and a symbolic checkpoint of the iterator holds its place.
"""

from __future__ import annotations

import tensorflow as tf

from video_tfrecords.clips import backends, keys

__all__ = ["check_host_split", "host_batches"]


def check_host_split(host_split, training: bool, seed, num_shards: int) -> str:
    """`clip_dataset`'s host_split, its default filled in and checked."""
    if host_split is None:
        return "global_batches" if training and seed is not None else "contiguous"
    if host_split not in ("global_batches", "contiguous"):
        raise ValueError(
            f'host_split must be "global_batches" or "contiguous", got {host_split!r}.'
        )
    if host_split == "global_batches" and training and seed is None and num_shards > 1:
        raise ValueError(
            'host_split="global_batches" needs a seed in training: every host must draw the '
            "same order to take its own rows of it."
        )
    return host_split


def host_batches(
    length: int, *, seed, training: bool, batch_size: int, num_epochs, start_step,
    batches_a_step: int = 1, host: int = 0, num_hosts: int = 1,
) -> tf.data.Dataset:  # fmt: skip
    """This host's batches of (example index [B], epoch seed [B]) from global step `start_step`
    (an int, or a variable read each time an iterator starts) to the end; a step takes
    `batches_a_step` batches of each host (its replicas').

    Training drops a last partial step (every host gets as many batches); evaluation keeps it.
    """
    per_step = batch_size * num_hosts * batches_a_step
    stop = None
    if num_epochs is not None:  # positions in the run: whole steps in training
        stop = num_epochs * length
        stop = stop // per_step * per_step if training else stop

    @tf.autograph.experimental.do_not_convert
    def from_position(start):
        return _positions(length, seed, training, start, stop)

    if isinstance(start_step, int):
        positions = from_position(tf.constant(start_step * per_step, tf.int64))
    else:  # a variable: read as the iterator starts (Keras restores it before fit iterates)
        first = tf.data.Dataset.from_tensors(tf.constant(0, tf.int64)).map(
            lambda _: tf.cast(tf.convert_to_tensor(start_step), tf.int64) * per_step
        )
        positions = first.flat_map(from_position)
    batches = positions.batch(batch_size, drop_remainder=training)
    return batches.shard(num_hosts, host) if num_hosts > 1 else batches


def _positions(length: int, seed, training: bool, start, stop) -> tf.data.Dataset:
    """(example index, epoch seed) of positions start, start + 1, ... (to `stop`, if not None)."""
    first_epoch = start // length if length else tf.constant(0, tf.int64)
    if stop is None:
        epochs = tf.data.Dataset.counter(first_epoch)
    else:
        epochs = tf.data.Dataset.range(first_epoch, -(-stop // length) if length else 0)

    @tf.autograph.experimental.do_not_convert
    def one_epoch(epoch):
        if seed is None:
            epoch_seed = keys.fresh_seed(backends.tf_ops())
        else:
            epoch_seed = keys.epoch_seed(seed, epoch)
        indices = tf.range(length, dtype=tf.int64)
        if training:  # the whole split, shuffled by the epoch's seed
            shuffle_seed = tf.stack([epoch_seed, tf.constant(0, tf.int64)])
            indices = tf.random.experimental.stateless_shuffle(indices, seed=shuffle_seed)
        skip = tf.where(tf.equal(epoch, first_epoch), start - epoch * length, 0)
        last = (
            length
            if stop is None
            else tf.minimum(tf.constant(length, tf.int64), stop - epoch * length)
        )
        indices = indices[skip:last]
        return tf.data.Dataset.from_tensor_slices((indices, tf.fill(tf.shape(indices), epoch_seed)))

    return epochs.flat_map(one_epoch)
