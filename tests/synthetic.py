"""Synthetic videos with motion and texture, for tests, dummy data and benchmarks.

Writes real H.264 mp4s through PyAV (whose wheel carries libx264; OpenCV's
wheel can only decode H.264) and other codecs through OpenCV. PyAV is a test
and benchmark dependency only, imported on use.
"""

from __future__ import annotations

import fractions
import os

import cv2
import numpy as np


def moving_frames(num_frames: int, height: int, width: int, seed: int = 0) -> np.ndarray:
    """RGB uint8 frames [T, H, W, 3]: a panning textured scene and a moving square.

    Like natural video, the fine detail is in brightness and the colour varies
    smoothly (what JPEG's and H.264's 4:2:0 chroma subsampling assume). The
    texture gives the codecs realistic work; the motion makes every frame
    different, so tests can tell frames apart.
    """
    rng = np.random.default_rng(seed)
    scene_width = width + 2 * num_frames
    detail = rng.integers(40, 216, (height // 3 + 1, scene_width // 3 + 1), dtype=np.uint8)
    detail = cv2.GaussianBlur(cv2.resize(detail, (scene_width, height)), (3, 3), 0)
    hue = np.linspace(0, 2 * np.pi, scene_width)[None, :, None] + rng.uniform(0, 6.3, 3)
    tint = 0.75 + 0.25 * np.sin(hue + np.linspace(0, np.pi, height)[:, None, None])
    scene = (detail[..., None] * tint).astype(np.uint8)
    side = max(2, min(height, width) // 4)
    color = rng.integers(0, 256, 3, dtype=np.uint8)
    frames = np.empty((num_frames, height, width, 3), np.uint8)
    for t in range(num_frames):
        frames[t] = scene[:, 2 * t : 2 * t + width]
        y = (t * 3) % max(1, height - side)
        x = (t * 5) % max(1, width - side)
        frames[t, y : y + side, x : x + side] = color
    return frames


def write_video(
    path: str,
    frames_rgb: np.ndarray,
    fps: float = 25.0,
    codec: str = "h264",
    timestamps_ms: list[int] | None = None,
) -> str:
    """Writes RGB frames to `path`: codec "h264" (PyAV) or an OpenCV fourcc ("mp4v", "MJPG").

    `timestamps_ms` (h264 only) gives each frame its own time: a variable frame rate.
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    height, width = frames_rgb.shape[1:3]
    if codec == "h264":
        import av  # pylint: disable=import-outside-toplevel

        with av.open(path, "w") as container:
            stream = container.add_stream("libx264", rate=round(fps))
            stream.width, stream.height = width, height
            stream.pix_fmt = "yuv420p"
            stream.options = {"crf": "18", "preset": "veryfast"}
            if timestamps_ms is not None:
                stream.codec_context.time_base = fractions.Fraction(1, 1000)
            for index, frame in enumerate(frames_rgb):
                picture = av.VideoFrame.from_ndarray(frame, format="rgb24")
                if timestamps_ms is not None:
                    picture.pts = timestamps_ms[index]
                    picture.time_base = fractions.Fraction(1, 1000)
                container.mux(stream.encode(picture))
            container.mux(stream.encode())
        return path
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*codec), fps, (width, height))
    if not writer.isOpened():
        raise RuntimeError(f"OpenCV cannot write {codec!r} to {path}")
    for frame in frames_rgb:
        writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    writer.release()
    return path
