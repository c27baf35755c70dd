"""Training that survives preemption (issue 48): killed, not paused.

Each reader's loop (`training_loops.py`) runs in its own process, checkpoints as a job does, is
SIGKILLed at a random step after a checkpoint, and is started again: every batch it reads from
the checkpoint on (clips, labels, audio, captions, hashed) must be the batch an uninterrupted run
reads at that step. The uninterrupted run is the reference; on several hosts, one host's run of
the same global batch size is.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import training_loops
import videos
from video_tfrecords import VideoConfig
from video_tfrecords.video_tfrecords_dataset_builder import Builder  # noqa: F401 (registers it)

LOOPS = str(pathlib.Path(__file__).with_name("training_loops.py"))
CONFIG = "preempt"
NUM_VIDEOS = 10
CLASSES = ["a", "b", "c"]
SMALL = {"crop_size": [16, 16], "audio": True, "fps": 25, "captions": "random", "flip": True}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Ten 20-frame videos with audio, several labels and captions each (JSON Lines)."""
    manual = tmp_path_factory.mktemp("manual")
    lines = []
    for i in range(NUM_VIDEOS):
        path = videos.flashes_and_tones(
            manual / f"v{i}.mp4", num_frames=20, flashes=[i % 7, 11 + i % 5], rate=16000
        )
        labels = [CLASSES[i % 3]] + ([CLASSES[(i + 1) % 3]] if i % 2 else [])
        captions = [f"video {i}", f"flash at frame {i % 7}"]
        lines.append(json.dumps({"path": path, "labels": labels, "captions": captions}) + "\n")
    (manual / "labels.txt").write_text("\n".join(CLASSES) + "\n")
    (manual / "train.jsonl").write_text("".join(lines))
    data_dir = tmp_path_factory.mktemp("data")
    config = VideoConfig(name=CONFIG, num_workers=1, size=(32, 48), audio_rate=8000)
    builder = tfds.builder("video_tfrecords", data_dir=str(data_dir), config=config)
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual))
    )
    return {"data_dir": str(data_dir), "dataset_dir": builder.data_dir, "config": CONFIG}


def run_loop(args: dict, tmp_path, name: str) -> list[str]:
    """Runs one loop in a fresh process (its own process group, ended with it); its log lines."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(pathlib.Path(LOOPS).parent), *sys.path]),
    }
    errors = tmp_path / f"{name}.stderr"
    with open(errors, "w") as err:  # a file, not a pipe: orphaned workers would hold a pipe open
        process = subprocess.Popen(
            [sys.executable, LOOPS, json.dumps(args)], env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
    try:
        process.wait(timeout=300)
    finally:
        try:  # worker processes the loop left behind when it was killed
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    err = errors.read_text()
    killed = args.get("kill_at") is not None
    expected = -signal.SIGKILL if killed else 0
    assert process.returncode == expected, f"{name}: exit {process.returncode}\n{err[-3000:]}"
    return pathlib.Path(args["log"]).read_text().splitlines()


def digests(lines: list[str]) -> dict[int, str]:
    return {int(step): value for step, value in (line.split() for line in lines if line[0] != "s")}


def killed_and_resumed(base: dict, tmp_path, *, every=3, steps=10, killed=None, resume=None):
    """An uninterrupted run (in this process), and a run SIGKILLed at a random step after its
    first checkpoint then started again (`killed`'s and `resume`'s arguments changed, if given);
    asserts that every step both read is the uninterrupted run's; returns (kill step, resumed
    from)."""
    kill_at = random.Random().randrange(every, steps - 1)
    args = {**base, "steps": steps, "every": every}
    log = tmp_path / "reference.log"
    training_loops.run({**args, "log": str(log), "ckpt_dir": str(tmp_path), "every": 0})
    expected = digests(log.read_text().splitlines())
    assert sorted(expected) == list(range(steps))
    (tmp_path / "ckpt").mkdir()
    run = {**args, "log": str(tmp_path / "run.log"), "ckpt_dir": str(tmp_path / "ckpt")}
    first = run_loop({**run, **(killed or {}), "kill_at": kill_at}, tmp_path, "killed")
    second = run_loop({**run, **(resume or {})}, tmp_path, "resumed")
    resumed_from = int(second[len(first)].split()[1])
    context = f"killed after step {kill_at}, resumed from step {resumed_from}"
    assert first[-1].split()[0] == str(kill_at), context
    assert resumed_from == (kill_at + 1) // every * every, context  # the last checkpoint's step
    for name, lines in (("killed", first), ("resumed", second[len(first) + 1 :])):
        for step, value in digests(lines).items():
            assert value == expected[step], f"{name} run, step {step}: {context}"
    assert max(digests(second[len(first) :])) == steps - 1, context
    return kill_at, resumed_from


def loop_args(dataset: dict, reader: str, **kwargs) -> dict:
    args = {"reader": reader, "seed": 7, "num_frames": 4, "clip": SMALL, "workers": 0}
    return {**dataset, **args, **kwargs}


def test_a_clip_dataset_checkpoint_is_a_place_and_a_sigkill_resumes_at_the_next_batch(
    dataset, tmp_path
):
    # float32 batches of 8 x 16 x 224 x 224 x 3 (77 MB), with audio and captions.
    clip = {**SMALL, "crop_size": [224, 224]}
    base = loop_args(dataset, "clip_dataset", num_frames=16, batch_size=8, clip=clip)
    killed_and_resumed(base, tmp_path)
    checkpoints = {}
    for path in (tmp_path / "ckpt").iterdir():
        if path.name.startswith("data-"):
            prefix = path.name.split(".")[0]
            checkpoints[prefix] = checkpoints.get(prefix, 0) + path.stat().st_size
    assert checkpoints and max(checkpoints.values()) < 256 * 1024, checkpoints


def test_statefuldataloader_with_two_workers_resumes_after_sigkill(dataset, tmp_path):
    pytest.importorskip("torchdata")
    # 3 steps an epoch of 3 (one video left out each epoch): the kill falls in any epoch.
    base = loop_args(dataset, "torch_stateful", batch_size=3, workers=2)
    killed_and_resumed(base, tmp_path, every=2, steps=11)


def test_a_plain_dataloader_resumes_with_the_samplers_start_step(dataset, tmp_path):
    pytest.importorskip("torch")
    base = loop_args(dataset, "torch_plain", batch_size=3, workers=2)
    killed_and_resumed(base, tmp_path, every=2, steps=11)


def test_a_grain_pipeline_with_worker_processes_resumes_after_sigkill(dataset, tmp_path):
    pytest.importorskip("grain")
    base = loop_args(dataset, "grain", batch_size=3, workers=2)
    killed_and_resumed(base, tmp_path, every=2, steps=11)


def test_a_run_checkpointed_on_two_hosts_resumes_on_one_with_the_same_global_batches(
    dataset, tmp_path
):
    # Two hosts of batch 2 until the kill, then one of batch 4 from the step checkpointed;
    # the reference is one host all along: the two hosts' steps equal it too.
    base = loop_args(dataset, "clip_dataset_hosts", batch_size=4, hosts=1)
    killed_and_resumed(base, tmp_path, killed={"batch_size": 2, "hosts": 2})


# -- the global batch does not depend on the number of hosts ------------------------------------


def host_runs(dataset: dict, global_batch: int, hosts: int, **kwargs) -> list[list]:
    """Each step's global batch of `hosts` clip_dataset pipelines, their rows in host order."""
    from video_tfrecords import clip_dataset

    runs = []
    for host in range(hosts):
        ds = clip_dataset(
            "train", data_dir=dataset["data_dir"], builder_kwargs={"config": CONFIG},
            num_frames=2, batch_size=global_batch // hosts, seed=3, crop_size=(8, 8),
            dtype="uint8", shard_index=host, num_shards=hosts, **kwargs,
        )  # fmt: skip
        runs.append([tf.nest.flatten(batch) for batch in ds.as_numpy_iterator()])
    assert len({len(run) for run in runs}) == 1, "hosts read as many batches"
    return [  # each step: every value of the batch (clips, labels, captions), hosts' rows joined
        [np.concatenate([run[s][k] for run in runs]) for k in range(len(runs[0][s]))]
        for s in range(len(runs[0]))
    ]


def test_clip_datasets_global_batches_are_the_same_on_any_number_of_hosts(dataset):
    one = host_runs(dataset, 6, 1, num_epochs=3)
    assert len(one) == 3 * NUM_VIDEOS // 6  # 30 clips: 5 steps, none dropped but at the end
    for hosts in (2, 3):
        runs = host_runs(dataset, 6, hosts, num_epochs=3)
        for step, (got, want) in enumerate(zip(runs, one, strict=True)):
            for a, b in zip(got, want, strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{hosts} hosts, step {step}")
    # start_step: the steps an unbroken run reads from there, on any number of hosts.
    for hosts, start in ((1, 2), (2, 3), (3, 1)):
        later = host_runs(dataset, 6, hosts, num_epochs=3, start_step=start)
        assert len(later) == len(one) - start
        for got, want in zip(later, one[start:]):
            for a, b in zip(got, want, strict=True):
                np.testing.assert_array_equal(a, b)


def test_the_contiguous_split_stays_for_hosts_that_hold_their_part(dataset):
    from video_tfrecords import ClipSource, clip_dataset

    for host in range(2):
        ds = clip_dataset(
            "train", data_dir=dataset["data_dir"], builder_kwargs={"config": CONFIG},
            num_frames=2, batch_size=1, seed=3, crop_size=(8, 8), dtype="uint8",
            shard_index=host, num_shards=2, host_split="contiguous", num_epochs=2,
            captions="all",
        )  # fmt: skip
        names = [inputs["captions"][0][0].decode() for inputs, _ in ds.as_numpy_iterator()]
        part = ClipSource(
            "train", dataset_dir=dataset["dataset_dir"], num_frames=2, captions="all",
            shard_index=host, num_shards=2,
        )  # fmt: skip
        expected = sorted(example["captions"][0] for example in part)
        assert len(expected) == NUM_VIDEOS // 2
        assert sorted(names[: len(expected)]) == sorted(names[len(expected) :]) == expected


def test_the_samplers_global_batches_are_the_same_on_any_number_of_ranks():
    from video_tfrecords.clip_source import EpochSampler

    def steps(ranks: int, passes: int = 3, **kwargs) -> list[list[int]]:
        """Each step's global batch (ranks' rows in rank order), pass after pass, no set_epoch."""
        samplers = [
            EpochSampler(10, seed=4, batch_size=6 // ranks, shard_index=r, num_shards=ranks,
                         **kwargs)
            for r in range(ranks)
        ]  # fmt: skip
        found = []
        for _ in range(passes):
            rows = [list(sampler) for sampler in samplers]
            size = 6 // ranks
            found += [
                [i for r in rows for i in r[s * size : (s + 1) * size]]
                for s in range(len(rows[0]) // size)
            ]
        return found

    one = steps(1)
    assert len(one) == 3  # an epoch of 10: one global batch of 6, the rest dropped
    for epoch, batch in enumerate(one):  # pass e: epoch e's indices, e * 10 + record
        assert len(set(batch)) == 6 and all(epoch * 10 <= i < (epoch + 1) * 10 for i in batch)
    assert len({tuple(i % 10 for i in batch) for batch in one}) == 3  # a new order each epoch
    assert steps(2) == steps(3) == one
    assert steps(2, passes=2, start_step=1) == steps(3, passes=2, start_step=1) == one[1:]
    with pytest.raises(ValueError, match="needs a seed"):
        EpochSampler(10, batch_size=2, shard_index=0, num_shards=2)
    with pytest.raises(ValueError, match="batch_size"):
        EpochSampler(10, seed=1, shard_index=0, num_shards=2)


def test_ddp_ranks_dataloaders_give_one_ranks_global_batches_of_clips(dataset):
    torch = pytest.importorskip("torch")
    from video_tfrecords import ClipSource

    source = ClipSource(
        "train", dataset_dir=dataset["dataset_dir"], num_frames=2, seed=1, crop_size=(8, 8)
    )

    def run(ranks: int) -> list[np.ndarray]:
        loaders = [
            torch.utils.data.DataLoader(source, batch_size=4 // ranks, sampler=source.sampler(
                seed=2, batch_size=4 // ranks, shard_index=r, num_shards=ranks))
            for r in range(ranks)
        ]  # fmt: skip
        found = []
        for _ in range(2):  # two epochs, each loader passed once per epoch
            batches = [[b["video"].numpy() for b in loader] for loader in loaders]
            found += [np.concatenate([rank[s] for rank in batches]) for s in range(len(batches[0]))]
        return found

    one = run(1)
    assert len(one) == 2 * (NUM_VIDEOS // 4)
    for got, want in zip(run(2), one, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_samplers_state_carries_the_epoch_through_a_statefuldataloader(dataset):
    pytest.importorskip("torchdata")
    from torchdata.stateful_dataloader import StatefulDataLoader

    from video_tfrecords import ClipSource

    source = ClipSource(
        "train", dataset_dir=dataset["dataset_dir"], num_frames=1, seed=1, crop_size=(8, 8)
    )

    def loader():
        sampler = source.sampler(seed=2, batch_size=5)
        return StatefulDataLoader(source, batch_size=5, sampler=sampler, num_workers=0), sampler

    def names(loader) -> list:  # one pass
        return [b["filename"] for b in loader]

    first, sampler = loader()
    epochs = [names(first) for _ in range(3)]  # three passes, no set_epoch: epochs 0, 1, 2
    assert sampler.epoch == 3 and len({repr(e) for e in epochs}) == 3
    ended = first.state_dict()  # at the end of epoch 2
    batches = iter(first)
    epoch_3 = [next(batches)["filename"]]
    mid_epoch = first.state_dict()  # one batch into epoch 3
    epoch_3 += [b["filename"] for b in batches]
    epoch_4 = names(first)
    assert len(epoch_3) == len(epoch_4) == 2 and epoch_3 != epoch_4

    second, _ = loader()
    second.load_state_dict(ended)  # the next pass is epoch 3, as torchdata goes on after an end
    assert [names(second), names(second)] == [epoch_3, epoch_4]
    third, _ = loader()
    third.load_state_dict(mid_epoch)  # the rest of epoch 3, then epoch 4
    assert [names(third), names(third)] == [epoch_3[1:], epoch_4]
    with pytest.raises(ValueError, match="start_step="):  # another global batch size
        source.sampler(seed=2, batch_size=3).load_state_dict(sampler.state_dict())


def test_grains_epochs_reach_the_clips(dataset):
    grain = pytest.importorskip("grain")
    from video_tfrecords import ClipSource

    source = ClipSource(
        "train", dataset_dir=dataset["dataset_dir"], num_frames=4, seed=1, crop_size=(16, 16)
    )
    epochs = list(source.grain_dataset().shuffle(seed=3).repeat(2))
    for epoch in range(2):
        source.set_epoch(epoch)  # one process: the clips each epoch must give
        expected = {e["filename"]: e["video"] for e in source}
        got = epochs[epoch * NUM_VIDEOS : (epoch + 1) * NUM_VIDEOS]
        assert sorted(e["filename"] for e in got) == sorted(expected)
        for example in got:
            np.testing.assert_array_equal(example["video"], expected[example["filename"]])
    # Grain's own source wrapper takes indices modulo the length: the epoch is lost there.
    source.set_epoch(0)
    plain = list(grain.MapDataset.source(source).repeat(2))
    np.testing.assert_array_equal(plain[0]["video"], plain[NUM_VIDEOS]["video"])


class Interrupted(Exception):
    pass


def keras_fit(dataset: dict, backup_dir, *, stop_at=None) -> dict[int, str]:
    """{optimizer step: digest of the batch it trained on} of `model.fit` over clip_dataset with
    BackupAndRestore(save_freq=2), the dataset starting at the optimizer's restored step;
    `stop_at`: the run is cut short (an exception) before that step's batch."""
    import keras

    seen = {}

    class Recorder(keras.Model):
        def train_step(self, data):
            step = self.optimizer.iterations
            tf.py_function(lambda s, x, y: seen.__setitem__(int(s), training_loops.digest([x, y])),
                           [step, data[0], data[1]], [])  # fmt: skip
            return super().train_step(data)

    inputs = keras.Input((2, 8, 8, 3))
    outputs = keras.layers.Dense(3)(keras.layers.GlobalAveragePooling3D()(inputs))
    model = Recorder(inputs, outputs)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=False)
    from video_tfrecords import KerasStartStep, clip_dataset

    resume = KerasStartStep()
    data = clip_dataset(
        "train",
        data_dir=dataset["data_dir"],
        builder_kwargs={"config": CONFIG},
        num_frames=2,
        batch_size=3,
        seed=9,
        crop_size=(8, 8),
        start_step=resume.step,
    ).map(lambda inputs, labels: (inputs["video"], labels))  # the dataset stores captions too
    callbacks = [
        keras.callbacks.BackupAndRestore(str(backup_dir), save_freq=2, delete_checkpoint=False),
        resume,
    ]
    if stop_at is not None:

        class Stop(keras.callbacks.Callback):
            def on_train_batch_begin(self, batch, logs=None):
                if model.optimizer.iterations.numpy() == stop_at:
                    raise Interrupted

        callbacks.append(Stop())
    try:
        model.fit(data, epochs=3, steps_per_epoch=4, callbacks=callbacks, verbose=0)
    except Interrupted:
        pass
    return seen


def test_keras_fit_with_backup_and_restore_resumes_at_its_batch(dataset, tmp_path):
    from video_tfrecords import clip_dataset

    reference = keras_fit(dataset, tmp_path / "reference")
    assert sorted(reference) == list(range(12))
    read = clip_dataset(
        "train", data_dir=dataset["data_dir"], builder_kwargs={"config": CONFIG}, num_frames=2,
        batch_size=3, seed=9, crop_size=(8, 8),
    ).map(lambda inputs, labels: (inputs["video"], labels))  # fmt: skip
    for step, (clips, labels) in enumerate(read.take(12)):  # step s trains on batch s
        assert reference[step] == training_loops.digest([clips, labels]), step
    first = keras_fit(dataset, tmp_path / "backup", stop_at=7)  # backed up after step 6
    assert sorted(first) == list(range(7))
    resumed = keras_fit(dataset, tmp_path / "backup")
    # Keras restores the weights and the epoch (1): it runs epochs 1 and 2 whole, 8 steps from
    # the optimizer's step 6; each step's batch is the uninterrupted run's.
    assert sorted(resumed) == list(range(6, 14))
    for step in range(6, 12):
        assert resumed[step] == reference[step], step


def test_a_keras_variable_as_start_step_is_refused(dataset):
    """The optimizer's own step races fit's first step (read as s or s + 1): KerasStartStep."""
    import keras

    from video_tfrecords import clip_dataset

    optimizer = keras.optimizers.SGD(0.1)
    with pytest.raises(ValueError, match="KerasStartStep"):
        clip_dataset(
            "train", data_dir=dataset["data_dir"], builder_kwargs={"config": CONFIG},
            num_frames=2, batch_size=3, seed=9, start_step=optimizer.iterations,
        )  # fmt: skip


def test_tfds_load_with_clip_decoder_restores_its_place_only_without_tfds_autocache(dataset):
    from video_tfrecords import ClipDecoder

    def loaded(autocache: bool):
        ds = tfds.load(
            f"video_tfrecords/{CONFIG}", split="train", data_dir=dataset["data_dir"],
            shuffle_files=True, decoders={"video": ClipDecoder(2, seed=1, crop_size=(8, 8))},
            read_config=tfds.ReadConfig(shuffle_seed=1, try_autocache=autocache),
        )  # fmt: skip
        options = tf.data.Options()
        options.experimental_symbolic_checkpoint = True
        ds = ds.map(lambda e: (e["video"], e["label"])).shuffle(4, seed=2).repeat().batch(2)
        return ds.with_options(options)

    iterator = iter(loaded(autocache=False))
    next(iterator)
    saved = tf.train.Checkpoint(data=iterator).write(str(dataset["data_dir"] + "/tfds_ckpt"))
    expected = [tf.nest.flatten(next(iterator)) for _ in range(6)]
    restored = iter(loaded(autocache=False))
    tf.train.Checkpoint(data=restored).read(saved).assert_consumed()
    for want in expected:
        for a, b in zip(tf.nest.flatten(next(restored)), want, strict=True):
            np.testing.assert_array_equal(a, b)
    cached = iter(loaded(autocache=True))  # TFDS caches a small split in memory: refused
    next(cached)
    with pytest.raises(tf.errors.UnimplementedError, match="CacheDatasetV2"):
        tf.train.Checkpoint(data=cached).write(str(dataset["data_dir"] + "/tfds_cached"))


def test_grains_global_batches_split_among_hosts_by_slicing(dataset):
    pytest.importorskip("grain")
    from video_tfrecords import ClipSource

    source = ClipSource(
        "train", dataset_dir=dataset["dataset_dir"], num_frames=2, seed=1, crop_size=(8, 8)
    )

    def steps(hosts: int, start: int = 0, count: int = 6) -> list[np.ndarray]:
        """Global steps start.. of `hosts` hosts: each a batch of 4 // hosts from the batches
        `start * hosts + host`, `+ hosts`, ... (the documented slice)."""
        batched = (
            source.grain_dataset().shuffle(seed=3).repeat().batch(4 // hosts, drop_remainder=True)
        )
        parts = [list(batched[start * hosts + h :: hosts][:count]) for h in range(hosts)]
        return [np.concatenate([p[s]["video"] for p in parts]) for s in range(count)]

    one = steps(1, count=8)
    for got, want in zip(steps(2) + steps(2, start=2), one[:6] + one[2:], strict=True):
        np.testing.assert_array_equal(got, want)
