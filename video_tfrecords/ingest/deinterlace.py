"""FFmpeg's bwdif deinterlacer over a video's decoded pictures, built only for interlaced ones.

Interlaced sources (broadcast MPEG-2 and H.264, DV, DVD, interlaced ProRes) decode to frames
whose two fields were shot 1/50 or 1/60 s apart: stored woven, every moving edge is a comb.
`Deinterlacer` runs `bwdif=mode=send_frame:deint=interlaced` through PyAV's filter graph, as
`ffmpeg -vf` would: one output frame per input frame, in order, and only the frames FFmpeg
flags interlaced are changed (the filter copies the others). Until the first flagged frame
no graph exists and each picture passes through untouched, so progressive video pays nothing.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterable, Iterator
from typing import TypeVar

import av

__all__ = ["DeinterlaceError", "Deinterlacer", "deinterlaced"]

T = TypeVar("T")
FILTER = "bwdif"
OPTIONS = "mode=send_frame:deint=interlaced"


class DeinterlaceError(RuntimeError):
    """FFmpeg's filter failed on a frame, or did not give one frame per frame."""


class Deinterlacer:
    """Feeds (tag, picture) pairs and hands them back, in order, each picture deinterlaced when
    FFmpeg flags it interlaced; the tag (a frame's time, say) rides along unchanged."""

    def __init__(self, threads: int = 1):
        self._threads = max(1, threads)
        self._graph = None
        self._shape = None  # the pictures the graph was configured for
        self._tags = collections.deque()  # of the pictures inside the graph, in order
        self._skip = 0  # outputs of context pictures, already handed back as they were
        self._previous = None  # the last picture, the first interlaced one's past field

    def feed(self, tag: T, picture: av.VideoFrame) -> list[tuple[T, av.VideoFrame]]:
        """The pairs ready after this one: itself when no graph runs, else what the filter
        gives (it holds one picture back, as it needs the next frame's fields)."""
        if self._graph is None and not picture.interlaced_frame:
            self._previous = picture
            return [(tag, picture)]
        with _reported(picture):
            ready = []
            if self._graph is not None and _shape(picture) != self._shape:
                ready = self.flush()  # a new size or format mid-stream: a new graph, as ffmpeg
            if self._graph is None:
                self._start(picture)
            self._tags.append(tag)
            self._graph.push(picture)
            return ready + self._pull()

    def flush(self) -> list[tuple[T, av.VideoFrame]]:
        """The pictures still inside the filter, at the end of the video (or of a size)."""
        if self._graph is None:
            return []
        with _reported(None):
            self._graph.push(None)
            ready = self._pull()
        if self._tags:
            raise DeinterlaceError(f"FFmpeg's {FILTER} returned {len(self._tags)} frames too few")
        self._graph = self._previous = None
        return ready

    def _start(self, picture: av.VideoFrame) -> None:
        """A graph for pictures like this one; the picture before it (untouched, already handed
        back) goes in first so the first interlaced frame has its past, as in a whole-file run."""
        self._graph, self._shape = _graph(picture, self._threads), _shape(picture)
        if self._previous is not None and _shape(self._previous) == self._shape:
            self._graph.push(self._previous)
            self._skip += 1
        self._previous = None

    def _pull(self) -> list[tuple[T, av.VideoFrame]]:
        """Every frame the filter has ready, paired with its tag."""
        ready = []
        while True:
            try:
                picture = self._graph.pull()
            except (BlockingIOError, av.error.EOFError):
                return ready
            if self._skip:
                self._skip -= 1
                continue
            if not self._tags:
                raise DeinterlaceError(f"FFmpeg's {FILTER} returned more frames than it was given")
            ready.append((self._tags.popleft(), picture))


def deinterlaced(
    pairs: Iterable[tuple[T, av.VideoFrame]], threads: int = 1
) -> Iterator[tuple[T, av.VideoFrame]]:
    """The (tag, picture) pairs with every interlaced picture deinterlaced, in order."""
    deinterlacer = Deinterlacer(threads)
    for tag, picture in pairs:
        yield from deinterlacer.feed(tag, picture)
    yield from deinterlacer.flush()


@contextlib.contextmanager
def _reported(picture: av.VideoFrame | None):
    """FFmpeg's errors from the graph as a DeinterlaceError naming the frame."""
    try:
        yield
    except av.error.FFmpegError as e:
        what = "the end of the video"
        if picture is not None:
            what = f"a {picture.width}x{picture.height} {picture.format.name} frame"
        raise DeinterlaceError(f"FFmpeg's {FILTER} failed on {what} ({e.strerror or e})") from None


def _shape(picture: av.VideoFrame) -> tuple:
    """What a filter graph's source is configured with: size, format, colour matrix, range."""
    return (picture.width, picture.height, picture.format.name, picture.colorspace,
            picture.color_range)  # fmt: skip


def _graph(picture: av.VideoFrame, threads: int) -> av.filter.Graph:
    """buffer -> bwdif -> buffersink for pictures like `picture`.

    The source states the picture's colour matrix and range, so that the link describes the
    frames truly: FFmpeg fills a frame's unspecified tags in from the link's (and a change of
    them starts a new graph, as ffmpeg reconfigures). Each output keeps its input's tags, which
    `Frame.bgr` converts with.
    """
    graph = av.filter.Graph()
    graph.threads = threads
    source = graph.add(
        "buffer",
        video_size=f"{picture.width}x{picture.height}",
        pix_fmt=picture.format.name,
        time_base=str(picture.time_base or "1/90000"),
        pixel_aspect="1/1",  # the stream's aspect ratio is applied later, from the stream
        colorspace=str(picture.colorspace),
        range=str(picture.color_range),
    )
    deinterlace = graph.add(FILTER, OPTIONS)
    sink = graph.add("buffersink")
    source.link_to(deinterlace)
    deinterlace.link_to(sink)
    graph.configure()
    return graph
