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
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pathlib.Path(LOOPS).parent), *sys.path])}
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
    """An uninterrupted run (in this process), and a run SIGKILLed at a random step after its first checkpoint
    then started again (`killed`'s and `resume`'s arguments changed, if given); asserts that
    every step both read is the uninterrupted run's, and returns (kill step, resumed from)."""
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
    killed_and_resumed(base, tmp_path, steps=11)


def test_a_plain_dataloader_resumes_with_the_samplers_start_step(dataset, tmp_path):
    pytest.importorskip("torch")
    base = loop_args(dataset, "torch_plain", batch_size=3, workers=2)
    killed_and_resumed(base, tmp_path, steps=11)


def test_a_grain_pipeline_with_worker_processes_resumes_after_sigkill(dataset, tmp_path):
    pytest.importorskip("grain")
    base = loop_args(dataset, "grain", batch_size=3, workers=2)
    killed_and_resumed(base, tmp_path, steps=11)


def test_a_run_checkpointed_on_two_hosts_resumes_on_one_with_the_same_global_batches(
    dataset, tmp_path
):
    # Two hosts of batch 2 until the kill, then one of batch 4 from the step checkpointed;
    # the reference is one host all along: the two hosts' steps equal it too.
    base = loop_args(dataset, "clip_dataset_hosts", batch_size=4, hosts=1)
    killed_and_resumed(base, tmp_path, killed={"batch_size": 2, "hosts": 2})
