"""Shared fixtures: real videos written on the fly (H.264 via PyAV, others via OpenCV)."""

import os

import cv2
import numpy as np
import pytest

import synthetic

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def opencv_frames(path) -> np.ndarray:
    """Every frame OpenCV decodes from `path`, as RGB [T, H, W, 3]: the reference."""
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    capture.release()
    return np.stack(frames)


def decode_jpegs(jpegs) -> np.ndarray:
    """JPEG bytes -> RGB frames [T, H, W, 3], decoded with OpenCV (the IDCT ClipDecoder uses)."""
    return np.stack(
        [
            cv2.cvtColor(cv2.imdecode(np.frombuffer(j, np.uint8), 1), cv2.COLOR_BGR2RGB)
            for j in jpegs
        ]
    )


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


@pytest.fixture
def make_video(tmp_path):
    """make_video(name, num_frames, height, width, fps=25, codec="h264") -> path."""

    def make(name="clip.mp4", num_frames=10, height=48, width=64, fps=25.0, codec="h264", seed=0):
        path = tmp_path / name
        frames = synthetic.moving_frames(num_frames, height, width, seed)
        return synthetic.write_video(str(path), frames, fps=fps, codec=codec)

    return make


def pytest_collection_modifyitems(config, items):
    """Drops TensorFlow's `TestCase.test_session`: a context manager, not a test."""
    kept = [item for item in items if item.name != "test_session"]
    config.hook.pytest_deselected(items=[item for item in items if item.name == "test_session"])
    items[:] = kept
