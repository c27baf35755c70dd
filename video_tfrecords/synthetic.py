"""Synthetic videos with motion and texture, for tests, dummy data and benchmarks.

Writes real H.264 mp4s through PyAV (whose wheel carries libx264; OpenCV's
wheel can only decode H.264) and other codecs through OpenCV. PyAV is a test
and benchmark dependency only, imported on use.
"""

from __future__ import annotations

import os

import cv2
import numpy as np


def moving_frames(num_frames: int, height: int, width: int, seed: int = 0) -> np.ndarray:
    """RGB uint8 frames [T, H, W, 3]: a panning textured scene and a moving square.

    The texture gives JPEG and H.264 realistic work; the motion makes every
    frame different, so tests can tell frames apart.
    """
    rng = np.random.default_rng(seed)
    pad = num_frames * 2
    texture = rng.integers(0, 256, (height // 4 + 2, (width + pad) // 4 + 2, 3), dtype=np.uint8)
    texture = cv2.resize(texture, ((width + pad) // 4 * 4 + 8, height // 4 * 4 + 8))
    texture = cv2.GaussianBlur(texture, (3, 3), 0)
    columns = np.arange(width)
    frames = np.empty((num_frames, height, width, 3), np.uint8)
    side = max(2, min(height, width) // 4)
    color = rng.integers(0, 256, 3, dtype=np.uint8)
    for t in range(num_frames):
        frame = texture[:height, 2 * t : 2 * t + width].copy()
        wave = 63.5 * (1 + np.sin(columns / 7.0 + t / 3.0))  # a moving grating
        frame[..., 0] = frame[..., 0] // 2 + wave.astype(np.uint8)
        y = (t * 3) % max(1, height - side)
        x = (t * 5) % max(1, width - side)
        frame[y : y + side, x : x + side] = color
        frames[t] = frame
    return frames


def write_video(path: str, frames_rgb: np.ndarray, fps: float = 25.0, codec: str = "h264") -> str:
    """Writes RGB frames to `path`: codec "h264" (PyAV) or an OpenCV fourcc ("mp4v", "MJPG")."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    num_frames, height, width = frames_rgb.shape[:3]
    if codec == "h264":
        import av  # pylint: disable=import-outside-toplevel

        with av.open(path, "w") as container:
            stream = container.add_stream("libx264", rate=round(fps))
            stream.width, stream.height = width, height
            stream.pix_fmt = "yuv420p"
            stream.options = {"crf": "18", "preset": "veryfast"}
            for frame in frames_rgb:
                container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
            container.mux(stream.encode())
        return path
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*codec), fps, (width, height))
    if not writer.isOpened():
        raise RuntimeError(f"OpenCV cannot write {codec!r} to {path}")
    for frame in frames_rgb:
        writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    writer.release()
    return path
