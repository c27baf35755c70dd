"""The example scripts run end to end on dummy_data/, and TFDS's viewers work."""

import pathlib
import subprocess
import sys

import cv2
import tensorflow_datasets as tfds

REPO = pathlib.Path(__file__).parent.parent


def run_example(name, *args):
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / name), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,  # the assert below shows stderr
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_keras_example_trains_then_show_draws_its_clips(tmp_path):
    data_dir = str(tmp_path / "data")
    out = run_example("train_keras.py", f"--data_dir={data_dir}", "--epochs=2")
    assert "trained on 2 epoch(s): loss" in out

    sheet_path = tmp_path / "clips.png"
    result = subprocess.run(
        [sys.executable, "-m", "video_tfrecords.show", f"--data_dir={data_dir}",
         "--num_frames=5", "--frame_height=40", f"--out={sheet_path}"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "3 tiles of 3 clips" in result.stdout
    sheet = cv2.imread(str(sheet_path))
    assert sheet.std() > 10  # real pictures, not a blank image

    dataset, info = tfds.load("video_tfrecords", split="train", data_dir=data_dir, with_info=True)
    frame = tfds.as_dataframe(dataset.take(2), info)
    assert len(frame) == 2 and {"video", "label", "filename"} <= set(frame.columns)
