"""A long build's progress on stderr: one bar a split (videos done of those listed, their
rate, the time left), with warnings printed above it rather than into it."""

from __future__ import annotations

import sys

from tqdm import tqdm

__all__ = ["bar", "write"]


def bar(total: int, desc: str) -> tqdm:
    """A bar of `total` videos (a context manager; `update(1)` for each done)."""
    return tqdm(total=total, desc=desc, unit=" videos", file=sys.stderr, dynamic_ncols=True)


def write(text: str) -> None:
    """A line on stderr above any bar on screen."""
    tqdm.write(text, file=sys.stderr)
