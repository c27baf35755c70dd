"""Saving and restoring a reader's place: ms and bytes at batch 32, against reading a batch.

clip_dataset's iterator as it is made (a symbolic checkpoint) and with tf.data's explicit one (the
batches in flight): `tf.train.Checkpoint.write`, and a restart's first batch against a new
pipeline's; torchdata's and Grain's state. Wall time, interleaved: run it on a quiet machine.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import time

import builds
import video_sets
from timing import arguments, interleave, log, median, ratio, table

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

NUM_FRAMES, SEED = 16, 7


def dataset(args) -> str:
    """The `default` build of synthetic videos (made once): its data dir."""
    videos, frames = (4, 40) if args.quick else (16, 120)
    paths = video_sets.synthetic_videos(os.path.join(args.out, "videos"), videos, frames, 256, 340)
    manual = video_sets.video_set(os.path.join(args.out, f"manual_{videos}"), paths, 4)
    return builds.built_once(manual.manual_dir, os.path.join(args.out, f"data_{videos}"))


def pipeline(data_dir: str, batch: int, crop: int, symbolic: bool):
    import tensorflow as tf

    from video_tfrecords import clip_dataset

    ds = clip_dataset("train", data_dir=data_dir, num_frames=NUM_FRAMES, batch_size=batch,
                      seed=SEED, crop_size=(crop, crop), flip=True)  # fmt: skip
    if not symbolic:
        options = tf.data.Options()
        options.experimental_symbolic_checkpoint = False
        ds = ds.with_options(options)
    return ds


def clip_dataset_round(data_dir, batch, crop, symbolic) -> dict:
    """One save and restore: ms to save, bytes, ms to a restored pipeline's first batch and to a
    fresh one's, and whether the restored batches are the ones after the save."""
    import numpy as np
    import tensorflow as tf

    ds = pipeline(data_dir, batch, crop, symbolic)
    iterator = iter(ds)
    for _ in range(3):
        next(iterator)
    folder = tempfile.mkdtemp(prefix="ckpt_")
    try:
        start = time.perf_counter()
        path = tf.train.Checkpoint(data=iterator).write(os.path.join(folder, "data"))
        save = time.perf_counter() - start
        size = sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder))
        expected = next(iterator)[1].numpy()
        del iterator
        start = time.perf_counter()
        fresh = iter(pipeline(data_dir, batch, crop, symbolic))
        next(fresh)
        first = time.perf_counter() - start
        del fresh
        start = time.perf_counter()
        restored = iter(pipeline(data_dir, batch, crop, symbolic))
        tf.train.Checkpoint(data=restored).read(path).assert_consumed()
        labels = next(restored)[1].numpy()
        restore = time.perf_counter() - start
    finally:
        shutil.rmtree(folder)
    assert np.array_equal(labels, expected), "the restored pipeline read another batch"
    return {"save": 1000 * save, "bytes": size, "restore": 1000 * restore, "first": 1000 * first}


def loader_states(data_dir, batch, crop) -> list[list]:
    """Rows: torchdata's StatefulDataLoader (2 workers) and a Grain pipeline (2 workers), their
    state's bytes and ms to take (median of 5), after a few batches."""
    rows = []
    from video_tfrecords import ClipSource

    source = ClipSource("train", data_dir=data_dir, num_frames=NUM_FRAMES, seed=SEED,
                        crop_size=(crop, crop))  # fmt: skip
    try:
        from torchdata.stateful_dataloader import StatefulDataLoader
    except ImportError:
        log("no torchdata: its row is left out")
    else:
        sampler = source.sampler(seed=SEED, batch_size=batch)
        loader = StatefulDataLoader(source, batch_size=batch, sampler=sampler, num_workers=2)
        batches = (b for _ in iter(int, 1) for b in loader)  # epoch after epoch
        rows.append(["StatefulDataLoader, 2 workers", *state_cost(
            lambda: next(batches), lambda: pickle.dumps(loader.state_dict()))])  # fmt: skip
        del batches, loader
    import grain

    ds = source.grain_dataset().shuffle(seed=SEED).repeat().batch(batch, drop_remainder=True)
    iterator = iter(ds.to_iter_dataset().mp_prefetch(grain.MultiprocessingOptions(num_workers=2)))
    rows.append(["Grain MapDataset, 2 worker processes", *state_cost(
        lambda: next(iterator), lambda: pickle.dumps(iterator.get_state()))])  # fmt: skip
    iterator.close()
    return rows


def state_cost(advance, take) -> list[str]:
    times, size = [], 0
    for _ in range(5):
        advance()
        start = time.perf_counter()
        size = len(take())
        times.append(1000 * (time.perf_counter() - start))
    return [f"{size:,}", f"{median(times):.2f}", "-"]


def main():
    args = arguments(__doc__, "checkpoint", rounds=5, quick_rounds=1, cpu=False).parse_args()
    rounds = args.rounds
    batch, crop = (4, 112) if args.quick else (32, 224)
    data_dir = dataset(args)
    results = interleave(
        {kind: lambda s=(kind == "symbolic"): clip_dataset_round(data_dir, batch, crop, s)
         for kind in ("symbolic", "explicit")}, rounds,
    )  # fmt: skip
    megabytes = 4 * batch * NUM_FRAMES * crop * crop * 3 / 2**20
    print(f"Saving and restoring a reader's place: batches of {batch} float32 clips of "
          f"{NUM_FRAMES} x {crop} x {crop} ({megabytes:.0f} MB a batch), median of {rounds} "
          "round(s), wall ms\n")  # fmt: skip
    rows = []
    for kind, label in (("symbolic", "clip_dataset (its default: symbolic)"),
                        ("explicit", "clip_dataset, explicit checkpoint")):  # fmt: skip
        runs = results[kind]
        series = {k: [r[k] for r in runs] for k in runs[0]}
        restart = (f"{median(series['restore']):.0f} vs {median(series['first']):.0f}: "
                   f"{ratio(series['restore'], series['first'])}x")  # fmt: skip
        rows.append([label, f"{median(series['bytes']):,.0f}", f"{median(series['save']):.0f}",
                     restart])  # fmt: skip
    rows += loader_states(data_dir, batch, crop)
    print("\n".join(table(
        ["reader", "state bytes", "save ms", "restart to first batch ms: restored vs new"], rows
    )))  # fmt: skip


if __name__ == "__main__":
    main()
