"""A long build's progress on stderr, a split at a time, with warnings printed above it.

On a terminal (or a notebook), a bar: the manifest lines done of those listed, and the videos
when a video has several lines (an untrimmed video's spans are decoded together, so a bar of
lines alone would stand still through a long video); their rate and the time left. Without one
(a log file, CI, `nohup`), a bar's carriage returns would show nothing until a split ends, so a
plain line is printed now and then instead.
"""

from __future__ import annotations

import sys
import time

from tqdm import tqdm

from video_tfrecords.util.text import duration, plural

__all__ = ["bar", "write"]

EVERY = 60.0  # seconds between two progress lines without a terminal


def bar(split: str, videos: int, lines: int, every: float = EVERY):
    """The progress of a split of `videos` videos listed on `lines` manifest lines: a context
    manager whose `update(n)` counts one video done, of `n` lines."""
    if sys.stderr.isatty() or "ipykernel" in sys.modules:
        return _Bar(split, videos, lines)
    return _Lines(split, videos, lines, every)


def write(text: str) -> None:
    """A line on stderr above any bar on screen."""
    tqdm.write(text, file=sys.stderr)


class _Counts:
    """Videos and lines done of those listed."""

    def __init__(self, split: str, videos: int, lines: int) -> None:
        self.split, self.videos, self.lines = split, videos, lines
        self.videos_done = self.lines_done = 0

    def update(self, lines: int = 1) -> None:
        self.videos_done += 1
        self.lines_done += lines

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to end (a bar ends its line)."""


class _Bar(_Counts):
    """tqdm's bar of lines (of videos where each has one line), videos beside it."""

    def __init__(self, split: str, videos: int, lines: int) -> None:
        super().__init__(split, videos, lines)
        unit = " videos" if lines == videos else " lines"
        self._bar = tqdm(
            total=lines, desc=f"{split}", unit=unit, file=sys.stderr, dynamic_ncols=True
        )

    def update(self, lines: int = 1) -> None:
        super().update(lines)
        if self.lines != self.videos:
            self._bar.set_postfix_str(f"{self.videos_done}/{self.videos} videos", refresh=False)
        self._bar.update(lines)

    def close(self) -> None:
        self._bar.close()


class _Lines(_Counts):
    """A line on the first video done, every `every` seconds, and when the split ends."""

    def __init__(self, split: str, videos: int, lines: int, every: float) -> None:
        super().__init__(split, videos, lines)
        self.every = every
        self.started = self.printed = time.monotonic()
        self.shown = -1  # videos done at the last line

    def update(self, lines: int = 1) -> None:
        super().update(lines)
        now = time.monotonic()
        if self.shown < 0 or now - self.printed >= self.every:
            self.printed = now
            self._print(now)

    def close(self) -> None:
        if self.shown != self.videos_done:
            self._print(time.monotonic())

    def _print(self, now: float) -> None:
        self.shown = self.videos_done
        done = f"{self.videos_done} of {plural(self.videos, 'video')}"
        if self.lines != self.videos:
            done = f"{self.lines_done} of {plural(self.lines, 'line')}, {done}"
        elapsed = now - self.started
        pace = f"{duration(elapsed)} so far"
        if self.videos_done and elapsed > 0:
            rate = self.videos_done / elapsed
            left = (self.videos - self.videos_done) / rate
            pace = f"{rate:.2f} videos/s, {pace}"
            if left:
                pace += f", about {duration(left)} left"
        print(f"{self.split}: {done} done ({pace})", file=sys.stderr, flush=True)
