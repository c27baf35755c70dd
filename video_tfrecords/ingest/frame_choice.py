"""Which frames a build keeps, and at what size: pure functions of a video's info and frames.

`stored_size` applies the config's size rules to the display geometry;
`selected_frames` keeps every frame, a constant rate by timestamps (`fps`),
`num_frames` evenly spaced, and at most `max_frames`. `Choice` makes the same choice a frame
at a time, as frames are pushed to it: one decode of a video feeds the choices of several
spans of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from video_tfrecords.clips import jpeg
from video_tfrecords.config import VideoConfig
from video_tfrecords.ingest import video_io

__all__ = [
    "Choice", "Resampler", "evenly_spaced", "frame_rate", "resample", "selected_frames",
    "stored_size",
]  # fmt: skip

EPSILON = 1e-6  # seconds: timestamps closer than this are the same instant


def stored_size(info: video_io.VideoInfo, config: VideoConfig) -> tuple[int, int]:
    """The (height, width) frames are stored at: display aspect, then the size rules; a
    VideoError past the pixels a reader decodes (`jpeg.MAX_PIXELS`)."""
    height, width = _size_rules(info, config)
    if height * width > jpeg.MAX_PIXELS:
        raise video_io.VideoError(
            f"frames of {width}x{height} would be stored: readers refuse frames of more than "
            f"{jpeg.MAX_PIXELS} pixels (8192 x 8192); set short_side or size"
        )
    return height, width


def _size_rules(info: video_io.VideoInfo, config: VideoConfig) -> tuple[int, int]:
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


class Resampler:
    """The frame on screen at each tick origin + k / fps, the origin being the first frame's
    time (0 for a whole video), as frames are pushed in order.

    A frame is on screen from its timestamp to the next frame's (the last one
    for as long as the gap before it), so variable-frame-rate video comes out
    at a true constant rate: slower stretches repeat frames, faster ones drop.
    """

    def __init__(self, fps: float):
        self.period, self.tick, self.previous, self.gap, self.origin = 1.0 / fps, 0, None, 0.0, 0.0

    def _at(self, tick: int) -> float:
        return self.origin + tick * self.period

    def push(self, frame: video_io.Frame) -> list[tuple[float, video_io.Frame]]:
        """(tick time, frame) for the ticks `frame` ends: those its predecessor was shown at."""
        out = []
        if self.previous is None:
            self.origin = frame.time
        else:
            self.gap = frame.time - self.previous.time
            while self._at(self.tick) < frame.time - EPSILON:
                out.append((self._at(self.tick), self.previous))
                self.tick += 1
        self.previous = frame
        return out

    def finish(self) -> list[tuple[float, video_io.Frame]]:
        """The ticks the last frame is shown at."""
        out, last = [], self.previous
        while last is not None and (
            self.tick == 0 or self._at(self.tick) < last.time + self.gap - EPSILON
        ):
            out.append((self._at(self.tick), last))
            self.tick += 1
        return out


def resample(
    frames: Iterator[video_io.Frame], fps: float
) -> Iterator[tuple[float, video_io.Frame]]:
    """Yields (tick time, frame) for the frame on screen at each tick k / fps (`Resampler`)."""
    resampler = Resampler(fps)
    for frame in frames:
        yield from resampler.push(frame)
    yield from resampler.finish()


class Choice:
    """The frames a config keeps of a video (or of a span of it), chosen as they are pushed.

    `count_frames()` gives the frame count, asked for with `num_frames` only; `num_frames`
    counts the frames pushed (the span's first is 0).
    """

    def __init__(self, config: VideoConfig, count_frames: Callable[[], int]):
        self._config, self._count = config, count_frames
        self._resampler = Resampler(config.fps) if config.fps is not None else None
        self._keep: set[int] | None = None
        self._pushed = self._given = 0

    def push(self, frame: video_io.Frame) -> list[tuple[float, video_io.Frame]]:
        """(time in seconds, frame) for each frame the config keeps that `frame` decides."""
        number, self._pushed = self._pushed, self._pushed + 1
        if self._resampler is not None:
            return self._limit(self._resampler.push(frame))
        if self._config.num_frames is not None:
            if self._keep is None:
                self._keep = set(evenly_spaced(self._count(), self._config.num_frames).tolist())
            return self._limit([(frame.time, frame)] if number in self._keep else [])
        return self._limit([(frame.time, frame)])

    def finish(self) -> list[tuple[float, video_io.Frame]]:
        """The kept frames the end of the frames decides (a resampled last frame's ticks)."""
        return self._limit(self._resampler.finish() if self._resampler is not None else [])

    def _limit(self, chosen: list) -> list:
        """At most `max_frames` in all."""
        if self._config.max_frames is not None:
            chosen = chosen[: max(0, self._config.max_frames - self._given)]
        self._given += len(chosen)
        return chosen


def selected_frames(
    frames: Iterator[video_io.Frame], config: VideoConfig, count_frames: Callable[[], int]
) -> Iterator[tuple[float, video_io.Frame]]:
    """Yields (time in seconds, frame) for every frame the config keeps, in order (`Choice`).

    Every frame is decoded: the source's frame count and damage are of the whole file.
    """
    choice = Choice(config, count_frames)
    for frame in frames:
        yield from choice.push(frame)
    yield from choice.finish()


def frame_rate(times: list[float], fallback: float) -> float:
    """Frames per second of the stored frames, from their times."""
    if len(times) > 1 and times[-1] - times[0] > EPSILON:
        return (len(times) - 1) / (times[-1] - times[0])
    return fallback
