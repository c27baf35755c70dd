"""Killing `tfds build` midway leaves nothing that passes for a dataset; a rerun completes."""

import pathlib
import signal
import subprocess
import sys
import time

import pytest
import tensorflow_datasets as tfds

from video_tfrecords import synthetic

TFDS = str(pathlib.Path(sys.executable).parent / "tfds")


def test_killed_build_is_not_loadable_and_a_rerun_completes(tmp_path):
    manual, data_dir = tmp_path / "manual", tmp_path / "data"
    frames = synthetic.moving_frames(60, 96, 128)
    lines = []
    for i in range(30):
        synthetic.write_video(str(manual / f"v{i}.mp4"), frames, codec="MJPG")
        lines.append(f"v{i}.mp4 c{i % 3}")
    (manual / "train.txt").write_text("\n".join(lines) + "\n")
    command = [
        TFDS,
        "build",
        "video_tfrecords",
        f"--manual_dir={manual}",
        f"--data_dir={data_dir}",
        '--config={"name": "slow", "num_workers": 1, "short_side": null}',
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    # Wait until the build has started writing (TFDS writes into an "incomplete" folder).
    while time.time() < deadline and not any("incomplete" in p.name for p in data_dir.rglob("*")):
        assert process.poll() is None, "the build finished before it could be interrupted"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (data_dir / "video_tfrecords" / "slow" / "1.0.0" / "dataset_info.json").exists()
    with pytest.raises(Exception, match="(?i)not found|no such|does not exist|incomplete"):
        tfds.load("video_tfrecords/slow", split="train", data_dir=str(data_dir))

    subprocess.run(command, check=True, capture_output=True, timeout=600)
    dataset = tfds.load("video_tfrecords/slow", split="train", data_dir=str(data_dir))
    assert sum(1 for _ in dataset) == 30
