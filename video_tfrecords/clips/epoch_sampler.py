"""`EpochSampler`: a DataLoader's indices that carry their epoch, so every worker reads that
epoch's clips (`ClipSource.sampler`)."""

from __future__ import annotations

import numpy as np

from video_tfrecords.clips import keys
from video_tfrecords.clips.spec import check_non_negative_int

__all__ = ["EpochSampler"]


class EpochSampler:
    """Indices of one epoch at a time, each carrying its epoch: e * length + i.

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
