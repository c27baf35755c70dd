"""Which frames a build keeps, and at what size: pure functions of a video's info and frames.

`stored_size` applies the config's size rules to the display geometry;
`selected_frames` keeps every frame, a constant rate by timestamps (`fps`),
`num_frames` evenly spaced, and at most `max_frames`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from video_tfrecords.config import VideoConfig
from video_tfrecords.ingest import video_io

__all__ = ["evenly_spaced", "frame_rate", "resample", "selected_frames", "stored_size"]

EPSILON = 1e-6  # seconds: timestamps closer than this are the same instant


def stored_size(info: video_io.VideoInfo, config: VideoConfig) -> tuple[int, int]:
    """The (height, width) frames are stored at: display aspect, then the size rules."""
    if config.size is not None:
        return tuple(config.size)
    if config.coded_aspect:
        height, width = info.coded_height, info.coded_width
        if info.rotation in (90, 270):
            height, width = width, height
    else:
        height, width = info.display_height, info.display_width
    short = min(height, width)
    if config.short_side is None or (short <= config.short_side and not config.upscale):
        return height, width
    scale = config.short_side / short
    return max(1, round(height * scale)), max(1, round(width * scale))


def evenly_spaced(count: int, n: int) -> np.ndarray:
    """`n` frame indices spread evenly over `count` frames, first and last included."""
    if count <= n:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, n).round().astype(np.int64))


def resample(
    frames: Iterator[video_io.Frame], fps: float
) -> Iterator[tuple[float, video_io.Frame]]:
    """Yields (tick time, frame) for the frame on screen at each tick k / fps.

    A frame is on screen from its timestamp to the next frame's (the last one
    for as long as the gap before it), so variable-frame-rate video comes out
    at a true constant rate: slower stretches repeat frames, faster ones drop.
    """
    period, tick, previous, gap = 1.0 / fps, 0, None, 0.0
    for frame in frames:
        if previous is not None:
            gap = frame.time - previous.time
            while tick * period < frame.time - EPSILON:
                yield tick * period, previous
                tick += 1
        previous = frame
    if previous is None:
        return
    while tick == 0 or tick * period < previous.time + gap - EPSILON:
        yield tick * period, previous
        tick += 1


def selected_frames(
    frames: Iterator[video_io.Frame], config: VideoConfig, count_frames: Callable[[], int]
) -> Iterator[tuple[float, video_io.Frame]]:
    """Yields (time in seconds, frame) for every frame the config keeps, in order.

    `count_frames()` gives the video's frame count, asked for with `num_frames` only.
    """
    if config.fps is not None:
        chosen = resample(frames, config.fps)
    elif config.num_frames is not None:
        keep = set(evenly_spaced(count_frames(), config.num_frames).tolist())
        chosen = ((f.time, f) for f in frames if f.index in keep)
    else:
        chosen = ((f.time, f) for f in frames)
    for number, pair in enumerate(chosen):
        if config.max_frames is not None and number >= config.max_frames:
            break
        yield pair
    for _ in frames:  # decode the rest: the source's frame count and damage are of the whole file
        pass


def frame_rate(times: list[float], fallback: float) -> float:
    """Frames per second of the stored frames, from their times."""
    if len(times) > 1 and times[-1] - times[0] > EPSILON:
        return (len(times) - 1) / (times[-1] - times[0])
    return fallback
