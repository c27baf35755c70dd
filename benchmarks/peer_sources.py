"""Source videos of peers and recipes: H.264 mp4s (libx264 defaults, a keyframe exactly every
GOP frames) at two sizes and two GOP lengths, both GOPs encoding the same frames. Generated scenes
(1/f texture, panning camera, moving objects, grain, a cut every 4 s: about as hard for H.264 and
JPEG as real footage), or `--real`: windows of bikes.mp4, bigbuckbunny.mp4 looped to 10 s."""

from __future__ import annotations

import os
from dataclasses import dataclass

import cv2
import numpy as np

import video_sets
from timing import log

FPS = 25
SCENE_SECONDS = 4


@dataclass(frozen=True)
class SourceSet:
    """Videos of one size and GOP length, and where their manifest lives."""

    name: str
    height: int
    width: int
    paths: tuple[str, ...]
    manual_dir: str


def pink_field(rng: np.random.Generator, height: int, width: int, slope: float) -> np.ndarray:
    """Zero-mean, unit-variance noise whose amplitude spectrum falls as 1/f**slope."""
    fy = np.fft.fftfreq(height)[:, None]
    fx = np.fft.rfftfreq(width)[None, :]
    radius = np.sqrt(fy * fy + fx * fx)
    radius[0, 0] = 1.0
    spectrum = rng.normal(size=radius.shape) + 1j * rng.normal(size=radius.shape)
    field = np.fft.irfft2(spectrum / radius**slope, s=(height, width))
    field -= field.mean()
    return (field / field.std()).astype(np.float32)


def textured_rgb(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """An RGB float image: 1/f luminance detail with smoother, weaker colour (as in photos)."""
    luma = 115 + 48 * pink_field(rng, height, width, 1.6)
    cb, cr = (14 * pink_field(rng, height, width, 2.0) for _ in range(2))  # cb drawn first
    rgb = np.stack([luma + 1.402 * cr, luma - 0.344 * cb - 0.714 * cr, luma + 1.772 * cb], -1)
    return np.clip(rgb, 0, 255).astype(np.float32)


def scene_frames(rng: np.random.Generator, count: int, height: int, width: int) -> np.ndarray:
    """One shot: a camera panning over a textured scene while three textured objects move."""
    speed = rng.uniform(0.4, 2.5, 2) * rng.choice([-1, 1], 2) * (height / 256) ** 0.5
    room = np.ceil(np.abs(speed) * count).astype(int) + 4
    background = textured_rgb(rng, height + room[1], width + room[0])
    objects = []
    for _ in range(3):
        radius = rng.uniform(0.08, 0.2, 2) * height
        size = np.ceil(radius * 2).astype(int) + 2
        patch = textured_rgb(rng, size[1], size[0])
        mask = np.zeros((size[1], size[0]), np.float32)
        cv2.ellipse(mask, tuple(size // 2), tuple(radius.astype(int)), 0, 0, 360, 1.0, -1)
        mask = cv2.GaussianBlur(mask, (5, 5), 0)[..., None]
        start = rng.uniform([0, 0], [width - size[0], height - size[1]])
        velocity = rng.uniform(-3, 3, 2) * (height / 256)
        objects.append((patch, mask, start, velocity))
    grain = [rng.normal(0, 1.0, (height, width, 1)).astype(np.float32) for _ in range(7)]
    frames = np.empty((count, height, width, 3), np.uint8)
    for t in range(count):
        x0, y0 = (room - 2) / 2 + speed * (t - count / 2)
        shift = np.float32([[1, 0, -x0], [0, 1, -y0]])
        frame = cv2.warpAffine(background, shift, (width, height), flags=cv2.INTER_LINEAR)
        for patch, mask, start, velocity in objects:
            paste(frame, patch, mask, start + velocity * t)
        frame += grain[t % len(grain)]
        frames[t] = np.clip(frame, 0, 255)
    return frames


def paste(frame: np.ndarray, patch: np.ndarray, mask: np.ndarray, at: np.ndarray) -> None:
    """Blends `patch` into `frame` through `mask` at (x, y) = `at`, clipped to the frame."""
    height, width = frame.shape[:2]
    x, y = int(at[0]) % width, int(at[1]) % height
    h, w = min(patch.shape[0], height - y), min(patch.shape[1], width - x)
    region = frame[y : y + h, x : x + w]
    alpha = mask[:h, :w]
    region[:] = region * (1 - alpha) + patch[:h, :w] * alpha


def natural_frames(num_frames: int, height: int, width: int, seed: int) -> np.ndarray:
    """RGB uint8 [T, H, W, 3]: shots of SCENE_SECONDS each, cut to one another."""
    rng = np.random.default_rng(seed)
    shot = SCENE_SECONDS * FPS
    return np.concatenate([scene_frames(rng, min(shot, num_frames - first), height, width)
                           for first in range(0, num_frames, shot)])  # fmt: skip


def real_frames(folder: str, index: int, num_frames: int, height: int, width: int) -> np.ndarray:
    """Real footage at height x width: a window of bikes.mp4 (640x272), else bigbuckbunny.mp4
    (1280x720, 132 frames) area-resized; looped, every other video mirrored."""
    clip = video_sets.fetch_clip(folder, video_sets.BIKES if height <= 272 else video_sets.BUNNY)
    frames = video_sets.read_rgb(clip)
    if height <= 272:
        top, room = (frames.shape[1] - height) // 2, frames.shape[2] - width
        left = room * index // 7 % (room + 1)
        view = frames[:, top : top + height, left : left + width]
    else:
        view = np.roll(frames, -17 * index, axis=0)
    view = view[:, :, ::-1] if index % 2 else view
    if view.shape[1:3] != (height, width):
        area = cv2.INTER_AREA
        view = np.stack([cv2.resize(f, (width, height), interpolation=area) for f in view])
    return np.ascontiguousarray(np.resize(view, (num_frames, *view.shape[1:])))


def make_sets(out: str, layouts: list, videos: int, num_frames: int, real: bool) -> list[SourceSet]:
    """The source sets, one per (height, width, GOP); encodes only videos not made before. The sets
    of one size share their frames (each GOP is an encoding of the same video)."""
    kind = "real" if real else "natural"

    def path(height, gop, i):
        folder = f"{height}p_gop{gop}_f{num_frames}"
        return os.path.join(out, kind, folder, f"v{i:02d}.mp4")

    for height, width in dict.fromkeys((h, w) for h, w, _ in layouts):
        gops = [g for h, w, g in layouts if (h, w) == (height, width)]
        for i in range(videos):
            if all(os.path.exists(path(height, gop, i)) for gop in gops):
                continue
            log(f"making {kind} video {i} at {width}x{height}")
            if real:
                frames = real_frames(os.path.join(out, "real_clips"), i, num_frames, height, width)
            else:
                frames = natural_frames(num_frames, height, width, seed=1000 * height + i)
            for gop in gops:
                os.makedirs(os.path.dirname(path(height, gop, i)), exist_ok=True)
                video_sets.write_h264(path(height, gop, i), frames, gop)
    sets = []
    for height, width, gop in layouts:
        paths = tuple(path(height, gop, i) for i in range(videos))
        manual_dir = os.path.dirname(paths[0])
        with open(os.path.join(manual_dir, "train.txt"), "w") as f:
            f.writelines(f"{os.path.basename(p)} class{i % 2}\n" for i, p in enumerate(paths))
        name = f"{width}x{height} GOP {gop}"
        sets.append(SourceSet(name, height, width, paths, manual_dir))
    return sets
