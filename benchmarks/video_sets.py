"""Video sets for the overview, resume and build_memory: synthetic Kinetics-like H.264 videos,
or the first of your own, and their manifests."""

from __future__ import annotations

import fractions
import os
import pathlib
import sys
from dataclasses import dataclass

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import synthetic  # the test videos' maker
from video_tfrecords import manifest

SCENE_FRAMES = 250  # a long video is a sequence of 10 s scenes


@dataclass(frozen=True)
class VideoSet:
    """Distinct videos (absolute paths), listed `copies` times in `manual_dir/train.txt`."""

    manual_dir: str
    paths: list[str]
    copies: int = 1

    @property
    def examples(self) -> int:
        """Examples a build of the set writes."""
        return len(self.paths) * self.copies


def video_set(manual_dir: str, paths: list[str], copies: int = 1) -> VideoSet:
    """Writes manual_dir/train.txt listing each path `copies` times, through symlinks.

    Copies make epochs longer than a batch without making more videos.
    """
    manual_dir = os.path.abspath(manual_dir)  # the manifest lists the links by absolute path
    os.makedirs(manual_dir, exist_ok=True)
    paths = [os.path.abspath(p) for p in paths]
    listed = (
        paths if copies == 1 else [symlink(manual_dir, p, k) for k in range(copies) for p in paths]
    )
    lines = "".join(f"{path} class{i % 4}\n" for i, path in enumerate(listed))
    with open(os.path.join(manual_dir, "train.txt"), "w") as f:
        f.write(lines)
    return VideoSet(manual_dir, paths, copies)


def symlink(manual_dir: str, path: str, copy: int) -> str:
    """A link named for the copy, in manual_dir/copies, to `path`."""
    link = os.path.join(manual_dir, "copies", f"{copy}_{os.path.basename(path)}")
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(path, link)
    return link


def synthetic_videos(folder: str, count: int, frames: int, height: int, width: int) -> list[str]:
    """Paths of `count` H.264 mp4s of `frames` frames at height x width (made if missing)."""
    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, f"video_{i:03d}.mp4") for i in range(count)]
    for i, path in enumerate(paths):
        if not os.path.exists(path):
            partial = path + ".partial.mp4"
            write_scenes(partial, frames, height, width, seed=i)
            os.replace(partial, path)
    return paths


def write_scenes(path: str, frames: int, height: int, width: int, seed: int) -> None:
    """Streams `frames` frames of synthetic scenes into an H.264 mp4, one scene in memory at a time.

    Same encoder settings as `synthetic.write_video` (libx264, crf 18, veryfast, 25 fps).
    """
    import av  # pylint: disable=import-outside-toplevel

    with av.open(path, "w") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height = width, height
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "18", "preset": "veryfast"}
        stream.codec_context.time_base = fractions.Fraction(1, 25)
        for scene, first in enumerate(range(0, frames, SCENE_FRAMES)):
            count = min(SCENE_FRAMES, frames - first)
            for rgb in synthetic.moving_frames(count, height, width, seed * 1000 + scene):
                container.mux(stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")))
        container.mux(stream.encode())


def user_videos(manual_dir: str, limit: int, min_frames: int) -> list[str]:
    """The first `limit` videos of the user's manifests (train first) with >= `min_frames` frames."""
    import cv2

    dataset = manifest.read_dataset(manual_dir)
    splits = sorted(dataset.splits, key=lambda s: (s != "train", s))
    paths = []
    for entry in (e for split in splits for e in dataset.splits[split]):
        path = str(manifest.resolve(manual_dir, entry.path))
        capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
        if capture.get(cv2.CAP_PROP_FRAME_COUNT) >= min_frames:
            paths.append(path)
        capture.release()
        if len(paths) == limit:
            break
    return paths
