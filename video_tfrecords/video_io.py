"""Streams a video file into JPEG-encoded frames with OpenCV.

One frame at a time: decode -> (select) -> resize -> JPEG-encode, so a build
holds a video's JPEG bytes, never its raw frames. OpenCV's wheel bundles FFmpeg,
so no `ffmpeg` binary is needed. This module imports neither TensorFlow nor
TFDS, which keeps the build's worker processes light to start.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterator
from typing import Protocol

import cv2
import numpy as np


class VideoError(Exception):
    """The file cannot be read as a video; the message says why."""


@dataclasses.dataclass(frozen=True)
class EncodeOptions:
    """How frames are chosen, sized and encoded (see `VideoConfig` for each field)."""

    short_side: int | None = 256
    size: tuple[int, int] | None = None  # (height, width)
    upscale: bool = False
    fps: float | None = None
    max_frames: int | None = None
    num_frames: int | None = None
    jpeg_quality: int = 90


class FrameSink(Protocol):
    """Where `encode_video` puts each JPEG frame: a list, or a serializing spool."""

    def append(self, frame: bytes) -> None: ...

    def __len__(self) -> int: ...


@dataclasses.dataclass
class EncodedVideo:
    """A video's JPEG frames and what is known of its source."""

    frames: FrameSink  # a list of JPEG bytes unless `encode_video` was given another sink
    fps: float  # frame rate of the stored frames
    height: int  # of the stored frames
    width: int
    source_fps: float
    source_height: int
    source_width: int
    source_num_frames: int  # counted by decoding, not from the container header
    reported_num_frames: int  # what the container header claims (may be wrong)

    @property
    def truncated(self) -> bool:
        """The header promised clearly more frames than could be decoded."""
        return self.reported_num_frames > max(
            self.source_num_frames * 1.05, self.source_num_frames + 2
        )


def output_size(height: int, width: int, options: EncodeOptions) -> tuple[int, int]:
    """The (height, width) frames are stored at."""
    if options.size is not None:
        return tuple(options.size)
    short = min(height, width)
    if options.short_side is None or (short <= options.short_side and not options.upscale):
        return height, width
    scale = options.short_side / short
    return max(1, round(height * scale)), max(1, round(width * scale))


def to_bgr(frame: np.ndarray) -> np.ndarray:
    """Brings gray or BGRA frames to 3-channel BGR uint8 (what JPEG stores)."""
    if frame.ndim == 2 or frame.shape[2] == 1:
        frame = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR)
    elif frame.shape[2] == 4:
        frame = cv2.cvtColor(frame, cv2.COLOR_BGRA2BGR)
    if frame.dtype != np.uint8:
        frame = cv2.convertScaleAbs(frame, alpha=255.0 / max(1, np.iinfo(frame.dtype).max))
    return frame


def resize(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resizes to (height, width): area averaging when shrinking 2x or more, else linear.

    Linear filtering does not alias below a 2x reduction and costs a seventh of
    INTER_AREA at, e.g., 480x360 -> 341x256: the resize was half the build time.
    """
    height, width = size
    if frame.shape[:2] == (height, width):
        return frame
    strong_shrink = height * 2 <= frame.shape[0] or width * 2 <= frame.shape[1]
    interpolation = cv2.INTER_AREA if strong_shrink else cv2.INTER_LINEAR
    return cv2.resize(frame, (width, height), interpolation=interpolation)


def encode_jpeg(frame_bgr: np.ndarray, quality: int) -> bytes:
    """JPEG-encodes a BGR frame (the file stores RGB, as every decoder expects)."""
    ok, buffer = cv2.imencode(".jpg", frame_bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise VideoError(f"JPEG encoding failed for a frame of shape {frame_bgr.shape}")
    return buffer.tobytes()


def open_capture(path: str) -> cv2.VideoCapture:
    """Opens `path` with OpenCV's FFmpeg backend, or raises VideoError saying why."""
    if not os.path.exists(path):
        raise VideoError("file not found")
    if os.path.isdir(path):
        raise VideoError("is a directory, not a video file")
    if os.path.getsize(path) == 0:
        raise VideoError("empty file (0 bytes)")
    capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    if not capture.isOpened():
        raise VideoError("OpenCV/FFmpeg cannot open it as a video (not a video, or corrupt)")
    return capture


def iter_frames(capture: cv2.VideoCapture) -> Iterator[tuple[float, np.ndarray]]:
    """Yields (timestamp in ms, BGR frame) for every decodable frame, in order."""
    while True:
        ok, frame = capture.read()
        if not ok:
            return
        yield capture.get(cv2.CAP_PROP_POS_MSEC), frame


class FpsClock:
    """Keeps the first frame at or after each tick of a `fps` clock.

    Driven by the frames' own timestamps, so variable-frame-rate videos come out
    evenly paced. Never duplicates frames: a slower source keeps every frame.
    """

    def __init__(self, fps: float):
        self.period = 1000.0 / fps
        self.next_tick: float | None = None

    def keep(self, timestamp_ms: float) -> bool:
        if self.next_tick is None:
            self.next_tick = timestamp_ms
        if timestamp_ms < self.next_tick - 1e-3:
            return False
        ticks_passed = math.floor((timestamp_ms - self.next_tick) / self.period) + 1
        self.next_tick += self.period * max(1, ticks_passed)
        return True


def evenly_spaced(count: int, n: int) -> np.ndarray:
    """`n` frame indices spread evenly over `count` frames, first and last included."""
    if count <= n:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, n).round().astype(np.int64))


def count_frames(path: str) -> int:
    """Counts the frames that actually decode (container headers can be wrong)."""
    capture = open_capture(path)
    count = 0
    while capture.grab():
        count += 1
    capture.release()
    return count


def encode_video(
    path: str, options: EncodeOptions, frames: FrameSink | None = None
) -> EncodedVideo:
    """Decodes `path` frame by frame into JPEG bytes at the stored size and rate.

    Each JPEG is appended to `frames` (a new list by default) as soon as it
    is encoded: a build passes a sink that serializes them on the spot.
    Raises VideoError for files that are missing, not videos, or have no frame.
    """
    jpegs = [] if frames is None else frames
    capture = open_capture(path)
    source_fps = capture.get(cv2.CAP_PROP_FPS) or 0.0
    if not math.isfinite(source_fps) or source_fps <= 0:
        source_fps = 0.0
    reported = int(capture.get(cv2.CAP_PROP_FRAME_COUNT) or 0)

    selected = None
    if options.num_frames is not None:
        selected = set(evenly_spaced(count_frames(path), options.num_frames).tolist())
    clock = FpsClock(options.fps) if options.fps is not None else None

    first_ms = last_ms = None
    source_hw = size = None
    source_num_frames = 0
    for index, (timestamp, frame) in enumerate(iter_frames(capture)):
        source_num_frames = index + 1
        if options.max_frames is not None and len(jpegs) >= options.max_frames:
            while capture.grab():  # finish counting without converting frames
                source_num_frames += 1
            break
        if selected is not None and index not in selected:
            continue
        if clock is not None and not clock.keep(timestamp):
            continue
        frame = to_bgr(frame)
        if size is None:
            source_hw = frame.shape[:2]
            size = output_size(*source_hw, options)
        jpegs.append(encode_jpeg(resize(frame, size), options.jpeg_quality))
        first_ms = timestamp if first_ms is None else first_ms
        last_ms = timestamp
    capture.release()
    if not jpegs:
        raise VideoError("no frame could be decoded")
    return EncodedVideo(
        frames=jpegs,
        fps=_stored_fps(len(jpegs), source_fps, source_num_frames, first_ms, last_ms, options),
        height=size[0],
        width=size[1],
        source_fps=source_fps,
        source_height=source_hw[0],
        source_width=source_hw[1],
        source_num_frames=source_num_frames,
        reported_num_frames=reported,
    )


def _stored_fps(
    stored: int,
    source_fps: float,
    source_frames: int,
    first_ms: float | None,
    last_ms: float | None,
    options: EncodeOptions,
) -> float:
    """Frame rate of the stored frames, from the source's and the selection."""
    if options.fps is not None:
        return float(min(options.fps, source_fps) if source_fps else options.fps)
    if options.num_frames is not None and source_frames > 0 and source_fps:
        return source_fps * stored / source_frames
    if source_fps:
        return float(source_fps)
    if stored > 1 and first_ms is not None and last_ms > first_ms:
        return 1000.0 * (stored - 1) / (last_ms - first_ms)
    return 0.0
