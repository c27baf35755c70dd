"""Tiny training loops, one per reader, that checkpoint as a real job does and can be SIGKILLed.

`python training_loops.py ARGS_JSON` runs one: it resumes from the checkpoint in `ckpt_dir` if
there is one, reads batches up to `steps`, writes "step digest" a line into `log` (the digest of
everything in the batch: clips, labels, audio, captions), writes a checkpoint after every
`every` steps (the reader's state and the step, renamed into place whole), and SIGKILLs itself
right after logging step `kill_at`. No model: the batches are what a model would see.

Readers: "clip_dataset" (tf.train.Checkpoint of the iterator), "clip_dataset_hosts" (`hosts`
pipelines in lockstep, as many hosts would read, the global batch their rows in host order; the
checkpoint a step, resumed with start_step= on any number of hosts), "torch_stateful"
(torchdata's StatefulDataLoader over ClipSource's sampler, its state_dict), "torch_plain" (a
DataLoader, resumed with the sampler's start_step=), "grain" (a grain.MapDataset pipeline, its
iterator's get_state()).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import signal
import sys

import numpy as np


def digest(batch) -> str:
    """A hash of every value of a batch (arrays with their dtype and shape, strings)."""
    h = hashlib.sha256()

    def visit(value):
        if isinstance(value, dict):
            for key in sorted(value):
                h.update(str(key).encode())
                visit(value[key])
        elif isinstance(value, (list, tuple)):
            h.update(b"[%d" % len(value))
            for item in value:
                visit(item)
        elif isinstance(value, (str, bytes)):
            h.update(value.encode() if isinstance(value, str) else value)
        else:
            array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
            h.update(f"{array.dtype}{array.shape}".encode())
            if array.dtype == object:
                visit(array.ravel().tolist())
            else:
                h.update(np.ascontiguousarray(array).tobytes())

    visit(batch)
    return h.hexdigest()[:24]


def write_whole(path: str, data: bytes) -> None:
    """`data` into `path`, renamed into place once written (a kill leaves the old file)."""
    with open(path + ".tmp", "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def clip_arguments(args: dict) -> dict:
    return {"num_frames": args["num_frames"], "seed": args["seed"], **args["clip"]}


def source_of(args: dict):
    from video_tfrecords import ClipSource

    return ClipSource("train", dataset_dir=args["dataset_dir"], **clip_arguments(args))


def tf_dataset(args: dict, batch_size: int, **kwargs):
    from video_tfrecords import clip_dataset

    return clip_dataset(
        "train", data_dir=args["data_dir"], builder_kwargs={"config": args["config"]},
        batch_size=batch_size, **clip_arguments(args), **kwargs,
    )  # fmt: skip


class ClipDatasetLoop:
    """clip_dataset, its iterator saved with tf.train.Checkpoint (a symbolic checkpoint)."""

    def __init__(self, args, saved):
        import tensorflow as tf

        self.tf = tf
        self.iterator = iter(tf_dataset(args, args["batch_size"]))
        self.checkpoint = tf.train.Checkpoint(data=self.iterator)
        self.prefix = os.path.join(args["ckpt_dir"], "data")
        if saved is not None:
            self.checkpoint.read(saved["path"]).assert_consumed()

    def next(self):
        return next(self.iterator)

    def state(self, step):
        path = self.checkpoint.write(f"{self.prefix}-{step}")
        return {"path": path}


class HostsLoop:
    """`hosts` hosts' clip_dataset pipelines read in lockstep; a step's global batch is their
    batches in host order. The checkpoint is the step alone."""

    def __init__(self, args, saved):
        hosts, start = args["hosts"], 0 if saved is None else saved["step"]
        self.iterators = [
            iter(tf_dataset(args, args["batch_size"], shard_index=h, num_shards=hosts,
                            start_step=start))
            for h in range(hosts)
        ]  # fmt: skip

    def next(self):
        import tensorflow as tf

        parts = [next(it) for it in self.iterators]
        return tf.nest.map_structure(lambda *rows: np.concatenate(rows), *parts)

    def state(self, step):
        return {}


class TorchLoop:
    """A DataLoader over ClipSource with its sampler: torchdata's StatefulDataLoader (its
    state_dict saved) or torch's own (resumed with the sampler's start_step)."""

    def __init__(self, args, saved):
        import torch

        source = source_of(args)
        stateful = args["reader"] == "torch_stateful"
        start = 0 if saved is None or stateful else saved["step"]
        sampler = source.sampler(seed=args["seed"], batch_size=args["batch_size"], start_step=start)
        if stateful:
            from torchdata.stateful_dataloader import StatefulDataLoader as loader_type
        else:
            loader_type = torch.utils.data.DataLoader
        self.loader = loader_type(
            source, batch_size=args["batch_size"], sampler=sampler,
            num_workers=args["workers"], persistent_workers=args["workers"] > 0,
        )  # fmt: skip
        if stateful and saved is not None:
            self.loader.load_state_dict(saved["loader"])
        self.stateful, self.batches = stateful, iter(self.loader)

    def next(self):
        while True:  # a pass's end is the next epoch's start, as a training loop goes on
            try:
                return next(self.batches)
            except StopIteration:
                self.batches = iter(self.loader)

    def state(self, step):
        return {"loader": self.loader.state_dict()} if self.stateful else {}


class GrainLoop:
    """A grain.MapDataset pipeline over ClipSource (epochs, shuffle, batch, worker processes),
    its iterator's state saved."""

    def __init__(self, args, saved):
        import grain

        dataset = (
            source_of(args).grain_dataset().shuffle(seed=args["seed"]).repeat()
            .batch(args["batch_size"], drop_remainder=True)
        )  # fmt: skip
        options = grain.MultiprocessingOptions(num_workers=args["workers"])
        self.iterator = iter(dataset.to_iter_dataset().mp_prefetch(options))
        if saved is not None:
            self.iterator.set_state(saved["iterator"])

    def next(self):
        return next(self.iterator)

    def state(self, step):
        return {"iterator": self.iterator.get_state()}

    def close(self):
        self.iterator.close()


LOOPS = {
    "clip_dataset": ClipDatasetLoop, "clip_dataset_hosts": HostsLoop,
    "torch_stateful": TorchLoop, "torch_plain": TorchLoop, "grain": GrainLoop,
}  # fmt: skip


def run(args: dict) -> None:
    """Runs the loop `args` names (in this process: a test's uninterrupted reference)."""
    latest = os.path.join(args["ckpt_dir"], "latest.pickle")
    saved = None
    if os.path.exists(latest):
        with open(latest, "rb") as f:
            saved = pickle.load(f)
    loop = LOOPS[args["reader"]](args, saved)
    step = 0 if saved is None else saved["step"]
    with open(args["log"], "a") as log:
        log.write(f"start {step}\n")
        while step < args["steps"]:
            log.write(f"{step} {digest(loop.next())}\n")
            log.flush()
            step += 1
            if args["every"] and step % args["every"] == 0:
                write_whole(latest, pickle.dumps({"step": step, **loop.state(step)}))
            if step - 1 == args.get("kill_at"):
                os.kill(os.getpid(), signal.SIGKILL)
    getattr(loop, "close", lambda: None)()


if __name__ == "__main__":
    run(json.loads(sys.argv[1]))
    os._exit(0)  # no interpreter teardown with reader threads and worker processes alive
