"""Each decoded frame's time, by FFmpeg's rule for choosing between a frame's pts and its dts.

A frame comes out of FFmpeg with two stamps: the pts its packet carried through the decoder's
reordering, and the dts of the packet that produced it. Either can be wrong. The XviD/DivX AVIs
of UCF101 and HMDB51 store B-frames packed two to a chunk; their pts come out as 1, 2, 4, 3,
5, 7, 6, ... while the dts run 1, 2, 3, 4, .... FFmpeg's `best_effort_timestamp`
(libavcodec's `guess_correct_pts`) counts how often each goes backwards and trusts the one that
errs less; PyAV does not expose it, so `PtsCorrection` is that rule.

FFmpeg applies it as each frame leaves the decoder, so the frames before the first fault are
timed by the faulty stamp: best effort 1, 2, 4, 4, 5, ... for the AVIs above. `best_effort`
makes each frame's choice once `HINDSIGHT` more frames have been counted (the fault shows on
the very next frame), which gives 1, 2, 3, 4, 5, .... `Timing` turns the stamps into seconds
from the first frame that strictly increase, and counts what it had to make up.

After a seek the rule starts counting anew, on a keyframe whose pts and dts can disagree (an
XviD I-frame decoded first: pts 12, dts 13, the swap showing three frames later); trusting the
pts there, as a rule that has seen no fault does, times it a frame early. From a seek, `settle`
holds the choices until a stamp has gone backwards or `SETTLE` frames have been counted, when
the rule has learnt what the whole-file decode had.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["HINDSIGHT", "SETTLE", "PtsCorrection", "Timing", "best_effort"]

T = TypeVar("T")
# Frames counted after a frame before its stamp is chosen: a swapped pair's fault shows on the
# frame right after the wrongly stamped one. `Timing` looks one frame further (the next frame's
# time), so two decoded pictures wait in memory.
HINDSIGHT = 1
# Frames counted after a seek before any choice, unless a stamp goes backwards first: packed
# B-frames show their swap within (B-frames per P) + 1 frames, so up to 4 B-frames in a row.
SETTLE = 5


class PtsCorrection:
    """FFmpeg's guess_correct_pts: counts the pts and the dts that go backwards (each against
    the last one seen) and prefers the pts unless it has erred more often (or is missing)."""

    def __init__(self):
        self.faulty_pts = 0
        self.faulty_dts = 0
        self._last_pts = -math.inf  # FFmpeg starts both at INT64_MIN
        self._last_dts = -math.inf

    def observe(self, pts: int | None, dts: int | None) -> None:
        """Counts one frame's stamps (None: AV_NOPTS_VALUE); a missing one takes the other's
        value as its last."""
        if dts is not None:
            self.faulty_dts += dts <= self._last_dts
            self._last_dts = dts
        elif pts is not None:
            self._last_dts = pts
        if pts is not None:
            self.faulty_pts += pts <= self._last_pts
            self._last_pts = pts
        elif dts is not None:
            self._last_pts = dts

    def choose(self, pts: int | None, dts: int | None) -> int | None:
        """The stamp the counts so far trust: the pts when set and it has no more faults than
        the dts (or there is no dts), else the dts."""
        if pts is not None and (dts is None or self.faulty_pts <= self.faulty_dts):
            return pts
        return dts

    def __call__(self, pts: int | None, dts: int | None) -> int | None:
        """FFmpeg's best_effort_timestamp of the next frame: counted, then chosen."""
        self.observe(pts, dts)
        return self.choose(pts, dts)


def best_effort(
    stamps: Iterable[tuple[int | None, int | None, T]],
    hindsight: int = HINDSIGHT,
    settle: int = 0,
) -> Iterator[tuple[int | None, T]]:
    """(stamp, item) for each (pts, dts, item), in order: FFmpeg's rule with each frame's choice
    made after `hindsight` more frames have been counted (0: FFmpeg's best_effort_timestamp);
    the first frames' after `settle` more, or once a stamp has gone backwards (after a seek)."""
    rule, pending = PtsCorrection(), collections.deque()
    wait = max(hindsight, settle)
    for counted, (pts, dts, item) in enumerate(stamps, 1):
        rule.observe(pts, dts)
        pending.append((pts, dts, item))
        if rule.faulty_pts or rule.faulty_dts or counted > settle:
            wait = hindsight
        while len(pending) > wait:
            pts, dts, item = pending.popleft()
            yield rule.choose(pts, dts), item
    for pts, dts, item in pending:
        yield rule.choose(pts, dts), item


@dataclasses.dataclass
class Timing:
    """Seconds from the first frame, strictly increasing, from the frames' stamps.

    A frame FFmpeg has no time for (no pts nor dts, or no time base) comes one `period` after
    the frame before, as does every frame when the first has none (`missing`). A frame timed
    no later than the one before (a stamp FFmpeg repeats or steps back to) is put halfway to
    the next frame's time, or one period on for the last frame (`misordered` counts them).
    A gap between stamps stays: a frame really absent is not papered over.
    """

    seconds_per_tick: float  # the stream's time base; 0 when it has none
    period: float  # seconds between frames at the stream's average rate
    missing: bool = False
    misordered: int = 0
    origin: float | None = None  # the first frame's stamp in seconds (None: unknown)
    # The video's first frame's stamp, when the frames timed start after a seek: times stay
    # on the clock of the whole video's, and the rule settles first (`SETTLE`). None: the
    # first frame timed is the video's first.
    origin_stamp: int | None = None

    def times(
        self, stamps: Iterable[tuple[int | None, int | None, T]]
    ) -> Iterator[tuple[float, T]]:
        """(seconds, item) for each (pts, dts, item) of the frames in presentation order."""
        origin, time = self.origin_stamp, 0.0
        chosen = _with_next(best_effort(stamps, settle=0 if origin is None else SETTLE))
        if origin is not None:
            self.origin = origin * self.seconds_per_tick
            time = -math.inf  # no frame before the first one timed
        for index, ((stamp, item), following) in enumerate(chosen):
            if index == 0 and origin is None:
                origin = stamp if self.seconds_per_tick else None
                self.missing = origin is None
                if origin is not None:
                    self.origin = origin * self.seconds_per_tick
            elif stamp is None or origin is None:
                time = max(time, 0.0) + self.period
                self.missing = True
            else:
                own = (stamp - origin) * self.seconds_per_tick
                if own <= time:
                    self.misordered += 1
                    after = _seconds(following, origin, self.seconds_per_tick)
                    step = self.period if after is None or after <= time else (after - time) / 2
                    own = time + min(self.period, step)
                time = own
            yield time, item


def _with_next(pairs: Iterator[tuple[int | None, T]]) -> Iterator[tuple[tuple, int | None]]:
    """Each (stamp, item) with the next frame's stamp (None after the last)."""
    previous = next(pairs, None)
    for pair in pairs:
        yield previous, pair[0]
        previous = pair
    if previous is not None:
        yield previous, None


def _seconds(stamp: int | None, origin: int | None, seconds_per_tick: float) -> float | None:
    """A stamp's seconds from the origin, None when either is unknown."""
    if stamp is None or origin is None:
        return None
    return (stamp - origin) * seconds_per_tick
