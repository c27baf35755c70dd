"""`EpochSampler`: a DataLoader's indices that carry their epoch, so every worker reads that
epoch's clips (`ClipSource.sampler`); on several hosts, each host's rows of one global order, so
that what the model sees at a step does not depend on how many hosts there are."""

from __future__ import annotations

import numpy as np

from video_tfrecords.clips import keys
from video_tfrecords.clips.spec import check_non_negative_int, check_positive_int

__all__ = ["EpochSampler"]


class EpochSampler:
    """Indices of one epoch at a time, each carrying its epoch: e * length + i.

    A plain iterable with `len` and `set_epoch`, as PyTorch's DistributedSampler: the
    indices are made in the main process, so the epoch reaches every DataLoader worker.
    A pass that runs to its end moves the sampler to the next epoch (`set_epoch` is then
    optional), and `state_dict` / `load_state_dict` hold the epoch and the place in it, so
    torchdata's `StatefulDataLoader` resumes mid-epoch with no bookkeeping.

    With `batch_size` (the DataLoader's, per host): epoch e's order (a permutation of the
    whole split, from `seed` and e) is cut into global batches of batch_size * num_shards
    (the remainder dropped), and host `shard_index` takes rows [shard_index * batch_size,
    (shard_index + 1) * batch_size) of each. So step s's global batch (every host's batch s,
    in host order) is the same on any number of hosts, and `start_step` starts a run at a
    global step (counted from epoch 0) whatever the host count that wrote the checkpoint.
    """

    def __init__(
        self,
        length: int,
        *,
        shuffle: bool = True,
        seed: int | None = None,
        batch_size: int | None = None,
        shard_index: int = 0,
        num_shards: int = 1,
        start_step: int = 0,
    ):
        self.length, self.shuffle = check_non_negative_int("length", length), shuffle
        self.num_shards = check_positive_int("num_shards", num_shards)
        self.shard_index = check_non_negative_int("shard_index", shard_index)
        if self.shard_index >= self.num_shards:
            raise ValueError(f"shard_index {shard_index} must be < num_shards {num_shards}.")
        self.batch_size = (
            None if batch_size is None else check_positive_int("batch_size", batch_size)
        )
        if self.batch_size is None and (num_shards > 1 or start_step):
            raise ValueError(
                "EpochSampler(num_shards=, start_step=) splits and counts global batches: "
                "pass batch_size=, the DataLoader's batch size (per host)."
            )
        if shuffle and seed is None and num_shards > 1:
            raise ValueError(
                "EpochSampler(num_shards > 1, shuffle=True) needs a seed: every host must draw "
                "the same order to take its own rows of it."
            )
        self._given_seed = seed
        # Unseeded: one seed drawn now (a fresh order every epoch still), kept in state_dict.
        self.seed = int(np.random.default_rng().integers(2**63)) if seed is None else int(seed)
        self.epoch = 0
        self.pending = None  # (epoch, step): where the next pass starts (start_step, a restore)
        self.start_at(check_non_negative_int("start_step", start_step))

    @property
    def global_batch(self) -> int | None:
        return None if self.batch_size is None else self.batch_size * self.num_shards

    @property
    def steps_per_epoch(self) -> int | None:
        """Global batches (steps) in an epoch, with batch_size; else None."""
        return None if self.batch_size is None else self.length // self.global_batch

    def start_at(self, step: int) -> None:
        """Moves the sampler to global step `step` (from epoch 0): the next pass yields the rest
        of that step's epoch, the passes after it the epochs that follow."""
        if not step:
            return
        per_epoch = self.steps_per_epoch
        if not per_epoch:
            raise ValueError(
                f"start_step={step}, but an epoch of {self.length} examples holds no global "
                f"batch of {self.global_batch}."
            )
        epoch, within = divmod(step, per_epoch)
        self.epoch, self.pending = epoch, (epoch, within * self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """The epoch of the next pass (from its start, unless `start_step` put it mid-way)."""
        self.epoch = check_non_negative_int("epoch", epoch)
        if self.pending is not None and self.pending[0] != self.epoch:
            self.pending = None

    def __len__(self) -> int:
        if self.batch_size is None:
            return self.length
        return self.steps_per_epoch * self.batch_size

    def order(self, epoch: int) -> np.ndarray:
        """This host's record indices of epoch `epoch`, in order (without the epoch)."""
        order = np.arange(self.length)
        if self.shuffle:
            np.random.default_rng(keys.epoch_seed(self.seed, epoch) % 2**64).shuffle(order)
        if self.batch_size is None:
            return order
        steps, rows = self.steps_per_epoch, self.batch_size
        batches = order[: steps * self.global_batch].reshape(steps, self.num_shards, rows)
        return batches[:, self.shard_index].reshape(-1)

    def __iter__(self) -> _EpochIterator:
        start = 0
        if self.pending is not None:
            if self.pending[0] == self.epoch:
                start = self.pending[1]
            self.pending = None
        return _EpochIterator(self, self.epoch, start)

    def state_dict(self) -> dict:
        """The epoch of the next pass and what the indices depend on (checked on load)."""
        return {
            "epoch": self.epoch, "seed": self.seed, "length": self.length,
            "global_batch": self.global_batch, "shuffle": self.shuffle,
        }  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        for name in ("length", "global_batch", "shuffle"):
            if state[name] != getattr(self, name):
                raise ValueError(
                    f"This sampler's {name} is {getattr(self, name)}, the checkpoint's "
                    f"{state[name]}: a run on another number of hosts starts with "
                    "start_step=, the global step, instead of a loader's state."
                )
        if self._given_seed is not None and state["seed"] != self._given_seed:
            raise ValueError(
                f"This sampler's seed is {self._given_seed}, the checkpoint's {state['seed']}."
            )
        self.seed, self.epoch, self.pending = state["seed"], state["epoch"], None


class _EpochIterator:
    """One pass: epoch `epoch`'s indices from `start` on. Its state is the place in the epoch;
    at its end it moves its sampler to the next epoch."""

    def __init__(self, sampler: EpochSampler, epoch: int, start: int):
        self.sampler = sampler
        self._start(epoch, start)

    def _start(self, epoch: int, start: int) -> None:
        self.epoch, self.yielded = epoch, start
        self.indices = (self.sampler.order(epoch) + epoch * self.sampler.length).tolist()
        if start >= len(self.indices):
            self._finish()

    def __iter__(self):
        return self

    def __next__(self) -> int:
        if self.yielded >= len(self.indices):
            self._finish()
            raise StopIteration
        self.yielded += 1
        return self.indices[self.yielded - 1]

    def _finish(self) -> None:
        if self.sampler.epoch == self.epoch:  # not moved since (set_epoch, load_state_dict)
            self.sampler.epoch = self.epoch + 1

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "yielded": self.yielded}

    def load_state_dict(self, state: dict) -> None:
        self._start(state["epoch"], state["yielded"])
