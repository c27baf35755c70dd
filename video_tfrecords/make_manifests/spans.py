"""One rule for an annotated span of a video, in seconds, against the video's stated length.

Published spans run past the video (Charades' `length`, ActivityNet's `duration`), start at or
after their end, or repeat: a span past the length is cut to it and written to clipped.txt;
a span with start >= end as annotated, one wholly outside the video, or the same
(label, start, end) again in one video is left out and written to dropped.txt. Overlapping
spans are kept: actions overlap.
"""

from __future__ import annotations

import math


def seconds(value) -> float | None:
    """A finite number of seconds from a JSON number or CSV text, or None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


class Spans:
    """Cleans the spans of one annotation file, collecting its dropped and clipped records."""

    def __init__(self):
        self.dropped: list[str] = []
        self.clipped: list[str] = []

    def clean(self, start: float, end: float, length: float | None, where: str, what: str):
        """(start, end) cut to [0, length]; None when nothing is left (recorded why)."""
        if start >= end:
            self.dropped.append(f"{where}: {what} {start}-{end}: dropped: start >= end")
            return None
        cut_start, cut_end = max(start, 0.0), end if length is None else min(end, length)
        if cut_start >= cut_end:
            self.dropped.append(
                f"{where}: {what} {start}-{end}: dropped: outside the video (length {length})"
            )
            return None
        if (cut_start, cut_end) != (start, end):
            self.clipped.append(
                f"{where}: {what} {start}-{end}: clipped to {cut_start}-{cut_end} "
                f"(length {'unknown' if length is None else length})"
            )
        return cut_start, cut_end

    def segments(self, actions, length: float | None, where: str, what: str) -> list[dict]:
        """[{"label", "start", "end"}] of `actions` ((label, start, end) as annotated), each
        cleaned, a repeat of one already taken dropped."""
        taken, seen = [], set()
        for label, start, end in actions:
            span = self.clean(start, end, length, where, f"{what} segment {label!r}")
            if span is None:
                continue
            if (label, *span) in seen:
                self.dropped.append(
                    f"{where}: {what} segment {label!r} {start}-{end}: dropped: the same "
                    "segment again"
                )
                continue
            seen.add((label, *span))
            taken.append({"label": label, "start": span[0], "end": span[1]})
        return taken
